package mcpclient

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseServers(t *testing.T) {
	servers, problems := ParseServers([]byte(`servers:
  github:
    command: github-mcp-server
    args: [stdio, --read-only]
    env: {GITHUB_PERSONAL_ACCESS_TOKEN: $GITHUB_TOKEN, DEBUG: 1}
  search:
    url: https://search.example.com/mcp
    headers:
      Authorization: Bearer $SEARCH_TOKEN
      X-Price: $$5
`))
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	want := map[string]Server{
		"github": {Command: "github-mcp-server", Args: []string{"stdio", "--read-only"},
			Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "$GITHUB_TOKEN", "DEBUG": "1"}},
		"search": {URL: "https://search.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer $SEARCH_TOKEN", "X-Price": "$$5"}},
	}
	if !reflect.DeepEqual(servers, want) {
		t.Fatalf("got %+v\nwant %+v", servers, want)
	}
}

// Every problem of the file is reported at once, each with its line, and
// the valid servers are still returned.
func TestParseServersProblems(t *testing.T) {
	servers, problems := ParseServers([]byte(`servers:
  both:
    command: x
    url: http://localhost/mcp
  neither:
    args: [a]
  typo:
    comand: x
  headers-on-stdio:
    command: x
    headers: {A: b}
  bad-url:
    url: ftp://example.com
  bad-ref:
    url: https://example.com/mcp
    headers: {Authorization: "Bearer $"}
  bad-env:
    command: x
    env: {"1X": a, OK: [list]}
  "not a name!":
    command: x
  good:
    command: ok
  good:
    command: again
extra: 1
`))
	text := strings.Join(problems, "\n")
	for _, want := range []string{
		"line 2: server both: give command (a stdio server) or url (an HTTP server), not both",
		"line 5: server neither: give command (a stdio server) or url (an HTTP server)",
		"line 5: server neither: args and env go with command",
		`line 8: server typo: unknown key "comand" (want command, args, env for a stdio server; url, headers for an HTTP server)`,
		"line 9: server headers-on-stdio: headers go with url",
		"line 12: server bad-url: url must be an http:// or https:// URL",
		"line 14: server bad-ref: header Authorization: a $ must start a reference $NAME",
		`line 17: server bad-env: env "1X": not a variable name`,
		"line 19: server bad-env: env OK must be a string",
		`line 20: server name "not a name!"`,
		`line 24: servers: "good" appears twice`,
		`line 26: unknown key "extra" (the file holds servers:)`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	if len(servers) != 1 || servers["good"].Command != "ok" {
		t.Errorf("valid servers: %+v", servers)
	}
}

func TestLoadServers(t *testing.T) {
	dir := t.TempDir()
	servers, err := LoadServers(filepath.Join(dir, ServersFile))
	if err != nil || len(servers) != 0 {
		t.Fatalf("a missing file: %v %v", servers, err)
	}
	path := filepath.Join(dir, ServersFile)
	for content, want := range map[string]string{
		"servers: [a, b]\n":   "line 1: servers must be a mapping",
		"- a\n":               "line 1: the file must be a mapping",
		"servers: {a: {\n":    "not valid YAML",
		"other: {}\n":         "line 1: no servers: mapping",
		"servers:\n  a: x\n":  "line 2: server a must be a mapping",
		"servers:\n  a: {}\n": "line 2: server a: give command (a stdio server) or url (an HTTP server)",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadServers(path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%q: %v, want %q", content, err, want)
		}
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if servers, err := LoadServers(path); err != nil || len(servers) != 0 {
		t.Errorf("an empty file: %v %v", servers, err)
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cr3t", "A_1": "x"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for in, want := range map[string]string{
		"plain":          "plain",
		"$TOKEN":         "s3cr3t",
		"Bearer $TOKEN":  "Bearer s3cr3t",
		"$A_1-$TOKEN":    "x-s3cr3t",
		"cost: $$5":      "cost: $5",
		"${TOKEN}":       "",
		"$TOKEN.suffix":  "s3cr3t.suffix",
		"trailing $":     "",
		"$1":             "",
		"$$TOKEN":        "$TOKEN",
		"mid$TOKEN$TOKE": "",
	} {
		got, used, err := expand(in, lookup)
		if want == "" {
			if err == nil {
				t.Errorf("%q: no error (got %q)", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
		if strings.Contains(in, "$TOKEN") && !strings.Contains(in, "$$TOKEN") && (len(used) == 0 || used[len(used)-1] != "s3cr3t") {
			t.Errorf("%q: used %v", in, used)
		}
	}
	_, _, err := expand("$MISSING", lookup)
	if err == nil || !strings.Contains(err.Error(), "MISSING is not set") {
		t.Errorf("unset: %v", err)
	}
}

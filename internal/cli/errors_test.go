package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mcpWording is an MCP tool's name in a text.
var mcpWording = regexp.MustCompile(`\b((run|workflow|catalog|action)_[a-z_]+|wf_[a-z0-9_-]+)\b`)

// TestCLIErrorsNameCommands: the CLI's errors name its commands, never MCP
// tools, and a missing workflow's error names the closest ones.
func TestCLIErrorsNameCommands(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "greet.yaml", "version: 1\nname: greet\nsteps:\n  - {id: a, uses: noop}\n")
	if code, out, errOut := runOut(t, home, "save", wf); code != 0 {
		t.Fatalf("save: %d %s %s", code, out, errOut)
	}
	code, out, _ := runOut(t, home, "run", "greet", "--json")
	if code != 0 {
		t.Fatalf("run: %d %s", code, out)
	}
	id := decodeRun(t, out).RunID
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", "nope"}, "`stepwise runs`"},
		{[]string{"run", "greeet"}, "did you mean greet?"},
		{[]string{"get", "greeet"}, "`stepwise list`"},
		{[]string{"retry", id}, "`stepwise fork " + id + " --from STEP`"},
		{[]string{"fork", id, "--from", "nope"}, "`stepwise show " + id + "`"},
		{[]string{"cancel", id}, "`stepwise show " + id + "`"},
		{[]string{"catalog", "enable", "nope"}, "`stepwise catalog list`"},
		{[]string{"save", wf}, "--expected-version"},
	} {
		code, _, errOut := runOut(t, home, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q, want it to say %q", c.args, code, errOut, c.want)
		}
		if m := mcpWording.FindString(errOut); m != "" {
			t.Errorf("%v: names the MCP tool %s: %q", c.args, m, errOut)
		}
	}
}

// TestSuggestionsNameNoSurface: the engine's and the service's suggestions
// name no MCP tool and no CLI command; each surface words its own next
// step from the error's code (mcpserver/errors.go, cli/errors.go).
func TestSuggestionsNameNoSurface(t *testing.T) {
	cli := regexp.MustCompile("`stepwise |stepwise (validate|run|resume|runs|show|retry|fork|list|get|save|catalog) ")
	suggestion := regexp.MustCompile(`(?:Suggestion:|\.Suggestion =)\s*("(?:[^"\\]|\\.)*")`)
	for _, dir := range []string{"../engine", "../service"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range suggestion.FindAllSubmatch(data, -1) {
				if w := mcpWording.Find(m[1]); w != nil {
					t.Errorf("%s: a suggestion names the MCP tool %s: %s", f, w, m[1])
				}
				if w := cli.Find(m[1]); w != nil {
					t.Errorf("%s: a suggestion names a CLI command: %s", f, m[1])
				}
			}
		}
	}
}

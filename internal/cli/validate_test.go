package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const validYAML = `version: 1
name: hello
inputs:
  who: {type: string, default: world}
steps:
  - id: greet
    uses: log
    with: {message: "hello ${{ inputs.who }}"}
outputs:
  said: ${{ steps.greet.output }}
`

const validJSON = `{"name":"hello","version":1,
 "steps":[{"with":{"message":"hello ${{ inputs.who }}"},"uses":"log","id":"greet"}],
 "inputs":{"who":{"default":"world","type":"string"}},
 "outputs":{"said":"${{ steps.greet.output }}"}}`

func TestValidateValid(t *testing.T) {
	f := write(t, "hello.yaml", validYAML)
	code, out, errOut := run(t, "validate", f)
	if code != ExitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !regexp.MustCompile(`hello\.yaml: valid \(version sha256:[0-9a-f]{64}\)`).MatchString(out) {
		t.Errorf("unexpected output %q", out)
	}
}

func TestValidateInvalidLines(t *testing.T) {
	f := write(t, "bad.yaml", strings.Replace(validYAML, "inputs.who", "inputs.whom", 1)+"bogus: 1\n")
	code, out, _ := run(t, "validate", f)
	if code != ExitInvalid {
		t.Fatalf("exit %d, want %d", code, ExitInvalid)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 2 violation lines and a summary, got %q", out)
	}
	lineRE := regexp.MustCompile(`^` + regexp.QuoteMeta(f) + `:\d+:\d+: [a-z-]+: .+`)
	for _, l := range lines[:2] {
		if !lineRE.MatchString(l) {
			t.Errorf("line %q is not FILE:LINE:COL: RULE: MESSAGE", l)
		}
	}
	if !strings.Contains(lines[0], ":8:32: reference: input \"whom\" is not declared (hint: did you mean \"who\"?)") {
		t.Errorf("first line %q", lines[0])
	}
	if lines[2] != "1 of 1 files invalid, 2 violations" {
		t.Errorf("summary %q", lines[2])
	}
}

func TestValidateJSONReport(t *testing.T) {
	good := write(t, "good.json", validJSON)
	bad := write(t, "bad.yaml", "version: 1\nname: x\nsteps:\n  - id: a\n    uses: log\n    timeout: soon\n")
	code, out, _ := run(t, "validate", "--json", good, bad)
	if code != ExitInvalid {
		t.Fatalf("exit %d", code)
	}
	var rep struct {
		Files []struct {
			File       string           `json:"file"`
			Valid      *bool            `json:"valid"`
			Version    string           `json:"version"`
			Violations []map[string]any `json:"violations"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(rep.Files) != 2 || rep.Files[0].File != good || rep.Files[1].File != bad {
		t.Fatalf("files %+v", rep.Files)
	}
	if !*rep.Files[0].Valid || len(rep.Files[0].Violations) != 0 || !strings.HasPrefix(rep.Files[0].Version, "sha256:") {
		t.Errorf("good file report %+v", rep.Files[0])
	}
	if *rep.Files[1].Valid || len(rep.Files[1].Violations) != 1 {
		t.Fatalf("bad file report %+v", rep.Files[1])
	}
	v := rep.Files[1].Violations[0]
	for _, k := range []string{"path", "line", "column", "rule", "message"} {
		if _, ok := v[k]; !ok {
			t.Errorf("violation lacks %q: %v", k, v)
		}
	}
	if v["path"] != "/steps/0/timeout" || v["line"] != 6.0 || v["column"] != 14.0 || v["rule"] != "duration" {
		t.Errorf("violation %v", v)
	}
}

func TestValidateYAMLAndJSONSameVersion(t *testing.T) {
	y := write(t, "a.yaml", validYAML)
	j := write(t, "a.json", validJSON)
	_, out, _ := run(t, "validate", "--json", y, j)
	var rep struct {
		Files []struct{ Version string } `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Files[0].Version == "" || rep.Files[0].Version != rep.Files[1].Version {
		t.Errorf("versions differ: %q vs %q", rep.Files[0].Version, rep.Files[1].Version)
	}
}

func TestValidateUsageAndIOErrors(t *testing.T) {
	binary := write(t, "blob.yaml", "\x00\x01\x02\xff")
	notYAML := write(t, "notes.yaml", "key: [unclosed\n")
	good := write(t, "good.yaml", validYAML)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no files", []string{"validate"}, "give at least one workflow file"},
		{"missing file", []string{"validate", "/nonexistent/x.yaml"}, "/nonexistent/x.yaml: no such file"},
		{"directory", []string{"validate", t.TempDir()}, "is a directory"},
		{"binary", []string{"validate", binary}, "not valid UTF-8"},
		{"not yaml", []string{"validate", notYAML, good}, "invalid YAML"},
		{"unknown flag", []string{"validate", "--nope", good}, "unknown flag: --nope"},
		{"unknown command", []string{"valdate"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, tt.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d", code, ExitUsage)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("stderr %q does not mention %q", errOut, tt.want)
			}
			if strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "panic") {
				t.Errorf("stderr has a stack trace: %s", errOut)
			}
			if lines := strings.Count(strings.TrimSpace(errOut), "\n"); lines > 0 && tt.name != "unknown command" {
				t.Errorf("want a one-line message, got %q", errOut)
			}
		})
	}
}

func TestSchemaCommandMatchesPublishedCopy(t *testing.T) {
	code, out, _ := run(t, "schema")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	published, err := os.ReadFile("../../docs/workflow.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(published) {
		t.Error("docs/workflow.schema.json is stale: run go generate ./workflow")
	}
}

// TestValidateWarnsOfCredentialNames: an input named like a credential and
// not marked secret is a warning, in lines and in --json, and the file
// stays valid (exit 0).
func TestValidateWarnsOfCredentialNames(t *testing.T) {
	wf := write(t, "warn.yaml", `version: 1
name: warn
inputs:
  api_token: {type: string}
steps:
  - id: a
    uses: noop
`)
	code, out, errOut := run(t, "validate", wf)
	if code != ExitOK || !strings.Contains(out, wf+":4:3: warning: secret-name: input \"api_token\" is named like a credential") ||
		!strings.Contains(out, "hint: add secret: true") || !strings.Contains(out, "valid (version") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = run(t, "validate", "--json", wf)
	var rep struct {
		Files []struct {
			Valid    bool `json:"valid"`
			Warnings []struct {
				Path string `json:"path"`
				Rule string `json:"rule"`
			} `json:"warnings"`
		} `json:"files"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
		t.Fatalf("exit %d %v\n%s", code, err, out)
	}
	if f := rep.Files[0]; !f.Valid || len(f.Warnings) != 1 || f.Warnings[0].Path != "/inputs/api_token" || f.Warnings[0].Rule != "secret-name" {
		t.Fatalf("report %+v", rep)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cliDraft = "version: 1\nname: tidy\ntags: [ops]\nsteps:\n  - id: a\n    uses: log\n    with: {message: '${{ inputs.nope }}'}\n"

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLibraryCommands(t *testing.T) {
	home := t.TempDir()
	draft := writeTemp(t, cliDraft)
	if code, _, errOut := runOut(t, home, "save", draft); code != ExitInvalid || !strings.Contains(errOut, "nothing was saved") || !strings.Contains(errOut, "nope") {
		t.Fatalf("save invalid: %d %s", code, errOut)
	}
	if code, out, errOut := runOut(t, home, "save", "--draft", draft); code != ExitOK || !strings.Contains(out, "saved draft tidy") || !strings.Contains(out, "nope") {
		t.Fatalf("save draft: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runOut(t, home, "list", "--drafts", "--tag", "ops"); code != ExitOK || !strings.Contains(out, "tidy") || !strings.Contains(out, "draft, invalid") {
		t.Fatalf("list drafts: %d %s", code, out)
	}
	fixed := writeTemp(t, strings.Replace(cliDraft, "${{ inputs.nope }}", "done", 1))
	if code, out, errOut := runOut(t, home, "save", fixed); code != ExitOK || !strings.Contains(out, "removed the draft tidy") {
		t.Fatalf("save fixed: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runOut(t, home, "save", fixed)
	if code != ExitInvalid || !strings.Contains(errOut, "already exists at revision sha256:") {
		t.Fatalf("save again: %d %s %s", code, out, errOut)
	}
	revision := errOut[strings.Index(errOut, "sha256:"):][:71]
	if code, out, _ := runOut(t, home, "get", "tidy"); code != ExitOK || !strings.Contains(out, "# revision "+revision+"\n") {
		t.Fatalf("get shows no revision %s: %d %s", revision, code, out)
	}
	if code, _, errOut := runOut(t, home, "save", "--expected-version", revision, fixed); code != ExitOK {
		t.Fatalf("save with revision %s: %d %s", revision, code, errOut)
	}
	if code, out, errOut := runOut(t, home, "rename", "tidy", "neat"); code != ExitOK || !strings.Contains(out, "renamed tidy to neat") {
		t.Fatalf("rename: %d %s %s", code, out, errOut)
	}
	if code, out, _ := runOut(t, home, "get", "neat"); code != ExitOK || !strings.Contains(out, "name: neat") {
		t.Fatalf("get: %d %s", code, out)
	}
	// No terminal here: delete needs --yes and touches nothing without it.
	if code, _, errOut := runOut(t, home, "delete", "neat"); code != ExitUsage || !strings.Contains(errOut, "--yes") {
		t.Fatalf("delete without --yes: %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "workflows", "neat.yaml")); err != nil {
		t.Fatal("an unconfirmed delete removed the file")
	}
	if code, out, errOut := runOut(t, home, "delete", "--yes", "neat"); code != ExitOK || !strings.Contains(out, "deleted workflow neat") {
		t.Fatalf("delete: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runOut(t, home, "get", "neat"); code != ExitUsage || !strings.Contains(errOut, "no workflow") {
		t.Fatalf("get deleted: %d %s", code, errOut)
	}
}

func TestLibraryCommandsRefuseUnsafeNames(t *testing.T) {
	home := t.TempDir()
	base := filepath.Dir(home)
	outside := filepath.Join(base, "outside-"+filepath.Base(home)+".yaml")
	if err := os.WriteFile(outside, []byte("version: 1\nname: outside\nsteps: []\n# TOPSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(outside) })
	if code, _, _ := runOut(t, home, "list"); code != ExitOK { // creates the home
		t.Fatal("list")
	}
	if err := os.Symlink(outside, filepath.Join(home, "workflows", "sneaky.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../etc/passwd", "/etc/passwd", "a/b", "..", "a\x00b", "sneaky"} {
		for _, args := range [][]string{
			{"get", name}, {"get", "--draft", name}, {"rename", name, "fine"}, {"delete", "--yes", name},
			{"save", "--draft", "--name", name, writeTemp(t, "not: [yaml")},
		} {
			if name == "sneaky" && (args[1] == "--draft") {
				continue // drafts of that name are fine; the library entry is what leads outside
			}
			code, out, errOut := runOut(t, home, args...)
			if code != ExitUsage || strings.Contains(out+errOut, "TOPSECRET") || !(strings.Contains(errOut, "not a workflow name") || strings.Contains(errOut, "outside")) {
				t.Errorf("%q: %d %q %q", args, code, out, errOut)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(base, "etc")); err == nil {
		t.Error("something was created outside the home")
	}
}

func TestGenerateCommand(t *testing.T) {
	home := t.TempDir()
	schema := writeTemp(t, `{"type":"object","properties":{"host":{"type":"string","pattern":"^[a-z.]+$"},"port":{"type":"integer","minimum":1,"maximum":65535,"default":443}}}`)
	out := filepath.Join(t.TempDir(), "flow.yaml")
	if code, _, errOut := runOut(t, home, "generate", "--from-schema", schema, "--name", "endpoint", "-o", out); code != ExitOK {
		t.Fatalf("generate: %d %s", code, errOut)
	}
	if code, _, errOut := runOut(t, home, "validate", out); code != ExitOK {
		t.Fatalf("the generated file does not validate: %s", errOut)
	}
	data, _ := os.ReadFile(out)
	for _, want := range []string{"name: endpoint", "pattern: ^$|(?:^[a-z.]+$)", "type: integer", "max: 65535", "default: 443"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("generated file lacks %q:\n%s", want, data)
		}
	}
	if code, _, _ := runOut(t, home, "generate"); code != ExitUsage {
		t.Errorf("generate without a source: %d", code)
	}
	if code, _, errOut := runOut(t, home, "generate", "--from-schema", writeTemp(t, `{"type":"string"}`)); code != ExitInvalid || !strings.Contains(errOut, "object") {
		t.Errorf("a non-object schema: %d %s", code, errOut)
	}
}

// run NAME and plan NAME take the draft when no saved workflow has the
// name, and say so.
func TestRunAndPlanADraftByName(t *testing.T) {
	home := t.TempDir()
	draft := writeTemp(t, strings.Replace(cliDraft, "${{ inputs.nope }}", "tried", 1))
	if code, out, errOut := runOut(t, home, "save", "--draft", draft); code != ExitOK {
		t.Fatalf("save draft: %d %s %s", code, out, errOut)
	}
	code, out, errOut := runOut(t, home, "run", "tidy")
	if code != ExitOK || !strings.Contains(out, "succeeded") || !strings.Contains(errOut, "running the draft tidy") {
		t.Fatalf("run a draft: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := runOut(t, home, "plan", "tidy"); code != ExitOK || !strings.Contains(out, "tidy (draft, sha256:") {
		t.Fatalf("plan a draft: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runOut(t, home, "run", "nowhere"); code == ExitOK || !strings.Contains(errOut, "in the library or in drafts") {
		t.Fatalf("run neither: %d %s", code, errOut)
	}
}

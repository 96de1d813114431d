//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A local run may run commands, in the workspace --workspace names.
func TestRunAllowsShellInTheWorkspace(t *testing.T) {
	home, ws := t.TempDir(), filepath.Join(t.TempDir(), "ws")
	wf := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(wf, []byte(`version: 1
name: w
steps:
  - {id: touch, uses: shell, with: {command: touch, args: [made-by-shell]}}
  - {id: ls, uses: file, with: {op: list, path: .}}
outputs:
  names: ${{ map(steps.ls.output.entries, .name) }}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOut(t, home, "--workspace", ws, "run", wf, "--json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r := decodeRun(t, out)
	if names, _ := r.Outputs["names"].([]any); len(names) != 1 || names[0] != "made-by-shell" {
		t.Fatalf("outputs %v", r.Outputs)
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-shell")); err != nil {
		t.Fatal(err)
	}
	// Without --workspace, the workspace is in the home.
	if code, out, errOut := runOut(t, home, "run", wf, "--json"); code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(home, "workspace", "made-by-shell")); err != nil {
		t.Fatal(err)
	}
}

func TestServeShellFlags(t *testing.T) {
	p, err := (&serveOptions{}).shellPolicy()
	if err != nil || p.Enabled {
		t.Fatalf("no flags: %+v %v", p, err)
	}
	p, err = (&serveOptions{allowShell: true}).shellPolicy()
	if err != nil || !p.Enabled || len(p.Allow) != 0 {
		t.Fatalf("--allow-shell: %+v %v", p, err)
	}
	p, err = (&serveOptions{allowShellCmds: []string{"git", "make"}}).shellPolicy()
	if err != nil || !p.Enabled || !slices.Equal(p.Allow, []string{"git", "make"}) {
		t.Fatalf("--allow-shell-cmd: %+v %v", p, err)
	}
	code, _, errOut := run(t, "--home", t.TempDir(), "serve", "--allow-shell", "--allow-shell-cmd", "git")
	if code != ExitUsage || !strings.Contains(errOut, "not both") {
		t.Fatalf("both flags: %d %s", code, errOut)
	}
}

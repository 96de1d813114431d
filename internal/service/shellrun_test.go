//go:build unix

package service

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
)

// With the policy the CLI uses, a shell step runs in the workspace.
func TestShellAndFileRunInTheWorkspace(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	svc := openWith(t, Options{Workspace: ws, ShellPolicy: action.ShellPolicy{Enabled: true}})
	if svc.Workspace.Dir != ws {
		t.Fatalf("workspace %s", svc.Workspace.Dir)
	}
	l, err := svc.Parse([]byte(`version: 1
name: w
steps:
  - {id: put, uses: file, with: {op: write, path: notes/a.txt, content: hello}}
  - {id: cat, uses: shell, with: {command: cat, args: [notes/a.txt]}}
outputs:
  text: ${{ steps.cat.output.stdout }}
`))
	if err != nil {
		t.Fatal(err)
	}
	id, err := svc.StartRun(context.Background(), l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := svc.Wait(context.Background(), id, 0); err != nil || st != store.StatusSucceeded {
		v, _ := svc.GetRun(context.Background(), id)
		t.Fatalf("%s %v %s", st, err, v.Error)
	}
	v, _ := svc.GetRun(context.Background(), id)
	if v.Outputs["text"] != "hello" {
		t.Fatalf("outputs %v", v.Outputs)
	}
}

// A command that fails is retried when its step says retry: (waiting for
// a host to answer is the usual case); the exit code and stderr explain a
// final failure.
func TestShellFailuresAreRetried(t *testing.T) {
	svc := openWith(t, Options{ShellPolicy: action.ShellPolicy{Enabled: true}})
	l, err := svc.Parse([]byte(`version: 1
name: w
steps:
  - id: flaky
    uses: shell
    with: {command: 'test -e marker || { touch marker; echo not yet >&2; exit 7; }', shell: true}
    retry: {attempts: 2, backoff: 10ms}
  - id: broken
    uses: shell
    with: {command: 'echo gave up >&2; exit 9', shell: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	id, err := svc.StartRun(context.Background(), l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := svc.Wait(context.Background(), id, 0); err != nil || st != store.StatusFailed {
		t.Fatalf("%s %v", st, err)
	}
	v, err := svc.GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var flaky, broken *StepView
	for i := range v.Steps {
		switch v.Steps[i].ID {
		case "flaky":
			flaky = &v.Steps[i]
		case "broken":
			broken = &v.Steps[i]
		}
	}
	if flaky == nil || flaky.Status != "succeeded" || flaky.Attempts != 2 {
		t.Fatalf("flaky: %+v", flaky)
	}
	if broken == nil || !strings.Contains(broken.Error, "exited with code 9") || !strings.Contains(broken.Error, "gave up") {
		t.Fatalf("broken: %+v", broken)
	}
}

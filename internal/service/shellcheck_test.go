package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

func openWith(t *testing.T, o Options) *Service {
	t.Helper()
	o.Home, o.Durability = t.TempDir(), "normal"
	svc, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc
}

// Wherever a workflow calls shell, a service whose policy refuses it
// refuses the run before it starts.
func TestStartRunRefusesShellUpFront(t *testing.T) {
	hidden := map[string]string{
		"top level":    "steps:\n  - {id: a, uses: shell, with: {command: touch, args: [ran]}}\n",
		"parallel":     "steps:\n  - id: g\n    parallel:\n      - {id: a, uses: log, with: {message: hi}}\n      - {id: b, uses: shell, with: {command: touch, args: [ran]}}\n",
		"foreach":      "steps:\n  - id: g\n    foreach: [1]\n    steps:\n      - id: deep\n        parallel:\n          - {id: b, uses: shell, with: {command: touch}}\n",
		"compensate":   "steps:\n  - id: a\n    uses: log\n    with: {message: hi}\n    compensate: {uses: shell, with: {command: touch}}\n",
		"on_success":   "steps:\n  - {id: a, uses: log, with: {message: hi}}\non_success:\n  - {uses: shell, with: {command: touch}}\n",
		"on_failure":   "steps:\n  - {id: a, uses: log, with: {message: hi}}\non_failure:\n  - {id: h, uses: shell, with: {command: touch}}\n",
		"choices_from": "steps:\n  - id: q\n    ask:\n      prompt: which?\n      type: choice\n      choices_from: {uses: shell, with: {command: ls}}\n",
	}
	svc := openWith(t, Options{})
	for what, steps := range hidden {
		l, err := svc.Parse([]byte("version: 1\nname: w\n" + steps))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		_, err = svc.StartRun(context.Background(), l, nil, false)
		if engine.CodeOf(err) != action.CodeShellNotAllowed || !strings.Contains(err.Error(), "--allow-shell") {
			t.Errorf("%s: %v", what, err)
		}
	}
	runs, _, err := svc.ListRuns(context.Background(), store.RunFilter{Limit: 10})
	if err != nil || len(runs) != 0 {
		t.Fatalf("refused runs were recorded: %v %v", runs, err)
	}
	if _, err := os.Stat(filepath.Join(svc.Workspace.Real, "ran")); err == nil {
		t.Fatal("a refused command ran")
	}
}

// outerCalling writes inner (a workflow named inner) and a workflow outer
// that calls it into a fresh directory, and loads outer.
func outerCalling(t *testing.T, svc *Service, inner string) *Loaded {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("inner", inner)
	l, err := svc.LoadWorkflow(write("outer", "version: 1\nname: outer\nsteps:\n  - {id: call, workflow: inner}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestShellCheckFollowsSubWorkflows(t *testing.T) {
	svc := openWith(t, Options{})
	l := outerCalling(t, svc, "version: 1\nname: inner\nsteps:\n  - {id: s, uses: shell, with: {command: touch}}\n")
	if err := svc.CheckShell(l); engine.CodeOf(err) != action.CodeShellNotAllowed || !strings.Contains(err.Error(), "inner") {
		t.Fatalf("sub-workflow: %v", err)
	}
}

func TestShellCheckWithAnAllowlist(t *testing.T) {
	svc := openWith(t, Options{ShellPolicy: action.ShellPolicy{Enabled: true, Allow: []string{"echo"}}})
	check := func(with string) error {
		t.Helper()
		l, err := svc.Parse([]byte("version: 1\nname: w\ninputs:\n  cmd: {type: string, default: echo}\nsteps:\n  - {id: a, uses: shell, with: " + with + "}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return svc.CheckShell(l)
	}
	if err := check("{command: echo, args: [hi]}"); err != nil {
		t.Errorf("listed: %v", err)
	}
	// A template is decided when the step runs.
	if err := check("{command: '${{ inputs.cmd }}'}"); err != nil {
		t.Errorf("template: %v", err)
	}
	for _, with := range []string{"{command: rm}", "{command: echo, shell: true}", "{command: echo, env: {PATH: /tmp}}"} {
		if err := check(with); engine.CodeOf(err) != action.CodeShellNotAllowed {
			t.Errorf("%s: %v", with, err)
		}
	}
	if err := check("{command: rm}"); !strings.Contains(err.Error(), "--allow-shell-cmd rm") {
		t.Errorf("the refusal names the flag: %v", err)
	}
}

// A plan says what a start would refuse.
func TestPlanReportsTheShellPolicy(t *testing.T) {
	content := []byte("version: 1\nname: w\nsteps:\n  - {id: a, uses: shell, with: {command: make}}\n")
	p, err := openWith(t, Options{}).Plan(context.Background(), PlanRequest{Content: content})
	if err != nil {
		t.Fatal(err)
	}
	if p.Ready || len(p.Violations) != 1 || p.Violations[0].Rule != "shell-not-allowed" || !strings.Contains(p.Violations[0].Message, "--allow-shell-cmd make") {
		t.Fatalf("refused: %+v", p)
	}
	p, err = openWith(t, Options{ShellPolicy: action.ShellPolicy{Enabled: true}}).Plan(context.Background(), PlanRequest{Content: content})
	if err != nil || !p.Ready {
		t.Fatalf("allowed: %+v %v", p, err)
	}
}

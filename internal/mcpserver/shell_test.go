//go:build unix

package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/service"
)

const shellWorkflow = `version: 1
name: shelly
inputs:
  word: {type: string, default: hi}
steps:
  - id: say
    uses: shell
    with: {command: echo, args: ['${{ inputs.word }}']}
outputs:
  said: ${{ steps.say.output.stdout }}
`

// The service options `stepwise serve` builds from its flags.
var (
	serveWithoutFlags = service.Options{}
	serveAllowShell   = service.Options{ShellPolicy: action.ShellPolicy{Enabled: true}}
	serveAllowEcho    = service.Options{ShellPolicy: action.ShellPolicy{Enabled: true, Allow: []string{"echo"}}}
)

func TestShellIsRefusedOverMCPWithoutTheFlag(t *testing.T) {
	e := newEnv(t, Options{ExposeWorkflows: true}, serveWithoutFlags)
	cs := e.connect(nil)
	refused := func(what string, isErr bool, te ToolError) {
		t.Helper()
		if !isErr || te.ErrorCode != action.CodeShellNotAllowed || te.Category != "security" || te.Retryable ||
			!strings.Contains(te.Message, "--allow-shell") || te.Context.StepID != "say" {
			t.Fatalf("%s: %+v", what, te)
		}
	}
	var te ToolError
	refused("run_start definition", call(t, cs, "run_start", map[string]any{"definition": shellWorkflow}, &te), te)

	// Saving is fine; running is refused by name and as an exposed tool.
	var saved map[string]any
	if call(t, cs, "workflow_save", map[string]any{"content": shellWorkflow}, &saved) {
		t.Fatalf("save: %v", saved)
	}
	te = ToolError{}
	refused("run_start workflow", call(t, cs, "run_start", map[string]any{"workflow": "shelly"}, &te), te)
	waitFor(t, func() bool { return hasTool(t, cs, "wf_shelly") }, "wf_shelly")
	te = ToolError{}
	refused("wf_shelly", call(t, cs, "wf_shelly", map[string]any{"word": "x"}, &te), te)

	var runs RunListOut
	if call(t, cs, "run_list", map[string]any{}, &runs) || len(runs.Runs) != 0 {
		t.Fatalf("refused runs were started: %+v", runs)
	}
	// The file action is not the shell: it works in the workspace.
	var run RunResult
	if call(t, cs, "run_start", map[string]any{"definition": "version: 1\nname: f\nsteps:\n  - {id: w, uses: file, with: {op: write, path: out.txt, content: ok}}\n"}, &run) || run.Status != "succeeded" {
		t.Fatalf("file: %+v", run)
	}
	if data, err := os.ReadFile(filepath.Join(e.svc.Workspace.Real, "out.txt")); err != nil || string(data) != "ok" {
		t.Fatalf("file written: %q %v", data, err)
	}
}

func TestShellRunsOverMCPWithTheFlag(t *testing.T) {
	e := newEnv(t, Options{}, serveAllowShell)
	cs := e.connect(nil)
	var run RunResult
	if call(t, cs, "run_start", map[string]any{"definition": shellWorkflow, "inputs": map[string]any{"word": "hello"}}, &run) ||
		run.Status != "succeeded" || run.Outputs["said"] != "hello\n" {
		t.Fatalf("run: %+v", run)
	}
}

// With an allowlist, a listed program runs; an unlisted one is refused up
// front when it is written out, and when the step runs when a template
// names it — the run's error then names the flag.
func TestShellAllowlistOverMCP(t *testing.T) {
	e := newEnv(t, Options{}, serveAllowEcho)
	cs := e.connect(nil)
	var run RunResult
	if call(t, cs, "run_start", map[string]any{"definition": shellWorkflow}, &run) || run.Status != "succeeded" {
		t.Fatalf("echo: %+v", run)
	}
	var te ToolError
	if !call(t, cs, "run_start", map[string]any{"definition": strings.Replace(shellWorkflow, "command: echo", "command: touch", 1)}, &te) ||
		te.ErrorCode != action.CodeShellNotAllowed || !strings.Contains(te.Message, "--allow-shell-cmd touch") {
		t.Fatalf("touch: %+v", te)
	}
	templated := strings.Replace(shellWorkflow, "command: echo", "command: '${{ inputs.word }}'", 1)
	run = RunResult{}
	if call(t, cs, "run_start", map[string]any{"definition": templated, "inputs": map[string]any{"word": "touch"}}, &run) || run.Status != "failed" {
		t.Fatalf("templated: %+v", run)
	}
	var msg string
	if run.Error != nil {
		msg = run.Error.Message
	}
	if !strings.Contains(msg, action.CodeShellNotAllowed) || !strings.Contains(msg, "--allow-shell-cmd touch") {
		t.Fatalf("run error: %v", run.Error)
	}
}

func hasTool(t *testing.T, cs *mcp.ClientSession, name string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tl.Name == name {
			return true
		}
	}
	return false
}

package mcpserver

import (
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

func TestScriptedSession(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)

	var list WorkflowListOut
	if call(t, cs, "workflow_list", map[string]any{}, &list) || len(list.Workflows) != 2 || list.Workflows[0].Name != "greet" {
		t.Fatalf("workflow_list: %+v", list)
	}

	var val WorkflowValidateOut
	if call(t, cs, "workflow_validate", map[string]any{"content": "version: 1\nname: x\nsteps:\n  - id: a\n    uses: log\n    with: {message: '${{ inputs.nope }}'}\n"}, &val) {
		t.Fatal("validate returned an error result")
	}
	if val.Valid || len(val.Violations) == 0 || val.Violations[0].Line == 0 {
		t.Fatalf("invalid content: %+v", val)
	}
	if call(t, cs, "workflow_validate", map[string]any{"name": "greet"}, &val); !val.Valid || !strings.HasPrefix(val.Version, "sha256:") {
		t.Fatalf("valid: %+v", val)
	}

	var run RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "greet", "inputs": map[string]any{"greeting": "Hi"}}, &run) {
		t.Fatalf("run_start: %+v", run)
	}
	if run.Status != "waiting" || run.Pause == nil || run.Pause.Kind != "question" || run.Pause.Token == "" {
		t.Fatalf("run_start: %+v", run)
	}
	tok := run.Pause.Token

	var te ToolError
	if !call(t, cs, "run_continue", map[string]any{"token": tok, "value": "lowercase"}, &te) {
		t.Fatal("an invalid answer was accepted")
	}
	if te.ErrorCode != "ANSWER_INVALID" || len(te.Violations) == 0 || te.CorrelationID == "" || te.Category != "validation" {
		t.Fatalf("invalid answer error: %+v", te)
	}
	var got RunResult
	call(t, cs, "run_get", map[string]any{"run_id": run.RunID}, &got)
	if got.Status != "waiting" || got.Pause == nil || got.Pause.Token != tok {
		t.Fatalf("run changed after an invalid answer: %+v", got)
	}

	if call(t, cs, "run_continue", map[string]any{"token": tok, "value": "Ada"}, &run) {
		t.Fatalf("valid answer: %+v", run)
	}
	if run.Status != "waiting" || run.Pause == nil || run.Pause.Kind != "agent" || run.Pause.OutputSchema == nil || run.Pause.Persona != "poet" {
		t.Fatalf("agent pause: %+v", run)
	}
	if !strings.Contains(run.Pause.Instructions, "Ada") {
		t.Fatalf("instructions not rendered: %q", run.Pause.Instructions)
	}
	agentTok := run.Pause.Token
	if !call(t, cs, "run_continue", map[string]any{"token": agentTok, "value": map[string]any{"line": 3}}, &te) || te.ErrorCode != "ANSWER_INVALID" {
		t.Fatalf("schema-violating output: %+v", te)
	}
	if call(t, cs, "run_continue", map[string]any{"token": agentTok, "value": map[string]any{"line": "Hi Ada!"}}, &run) {
		t.Fatalf("valid output: %+v", run)
	}
	if run.Status != "succeeded" || run.Outputs["line"] != "Hi Ada!" || run.Outputs["name"] != "Ada" {
		t.Fatalf("final: %+v", run)
	}
	if !call(t, cs, "run_continue", map[string]any{"token": agentTok, "value": map[string]any{"line": "again"}}, &te) || te.ErrorCode != "TOKEN_ALREADY_USED" {
		t.Fatalf("second use of a token: %+v", te)
	}
}

package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

func newStatelessEnv(t *testing.T) *env {
	t.Helper()
	t.Setenv("STEPWISE_SECRET_KEY", strings.Repeat("3c", 32))
	return newEnv(t, Options{Stateless: true}, service.Options{Stateless: true})
}

// A stateless server: run_start and run_continue carry the state (its
// schemas say so), run_restore reads it, a question and an agent step are
// answered through states, a tampered state and the storage tools are
// refused with their codes.
func TestStatelessTools(t *testing.T) {
	e := newStatelessEnv(t)
	cs := e.connect(nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	for _, tl := range tools.Tools {
		in, _ := json.Marshal(tl.InputSchema)
		out, _ := json.Marshal(tl.OutputSchema)
		schemas[tl.Name] = string(in) + string(out)
	}
	for _, name := range []string{"run_start", "run_continue", "run_restore", "run_rewind", "run_restart"} {
		if !strings.Contains(schemas[name], `"state"`) || !strings.Contains(schemas[name], `"state_bytes"`) {
			t.Errorf("%s's schemas name no state: %s", name, schemas[name])
		}
	}
	var r StatelessRunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &r) || r.Pause == nil || r.State == "" || r.StateBytes != len(r.State) {
		t.Fatalf("run_start: %+v", r)
	}
	var restored StatelessRunResult
	if call(t, cs, "run_restore", map[string]any{"state": r.State}, &restored) || restored.State != r.State || restored.Pause == nil || restored.Pause.StepID != "name" {
		t.Fatalf("run_restore: %+v", restored)
	}
	// An invalid answer is refused; the same state still serves.
	var te ToolError
	if !call(t, cs, "run_continue", map[string]any{"state": r.State, "token": r.Pause.Token, "value": "lowercase"}, &te) || te.ErrorCode != code.AnswerInvalid {
		t.Fatalf("invalid answer: %+v", te)
	}
	var next StatelessRunResult
	if call(t, cs, "run_continue", map[string]any{"state": r.State, "token": r.Pause.Token, "value": "Ada"}, &next) || next.Pause == nil || next.Pause.Kind != code.PauseAgent {
		t.Fatalf("answer: %+v", next)
	}
	var done StatelessRunResult
	if call(t, cs, "run_continue", map[string]any{"state": next.State, "token": next.Pause.Token, "value": map[string]any{"line": "Hi Ada"}}, &done) ||
		done.Status != "succeeded" || done.Outputs["line"] != "Hi Ada" || done.Outputs["name"] != "Ada" {
		t.Fatalf("agent step: %+v", done)
	}
	// Going back from the finished run's state: the name question again,
	// "Ada" offered as the earlier answer.
	var back StatelessRunResult
	if call(t, cs, "run_rewind", map[string]any{"state": done.State, "to_step": "name"}, &back) || back.Pause == nil ||
		back.Pause.StepID != "name" || back.RunID == done.RunID || back.State == "" {
		t.Fatalf("run_rewind: %+v", back)
	}
	if back.Pause.Default != "Ada" || !back.Pause.Previous {
		t.Fatalf("run_rewind's question: %+v", back.Pause)
	}
	var again StatelessRunResult
	if call(t, cs, "run_restart", map[string]any{"state": done.State}, &again) || again.Pause == nil || again.Pause.StepID != "name" || again.State == "" {
		t.Fatalf("run_restart: %+v", again)
	}
	// Run resources read stored runs: there are none.
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "stepwise://runs/" + r.RunID}); err == nil {
		t.Errorf("a run resource: %v", err)
	}
	// A secret question: no one-time page (it would answer a stored run),
	// no terminal; $NAME.
	var vault StatelessRunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "vault"}, &vault) || vault.Pause == nil || !vault.Pause.Secret ||
		vault.Pause.SecretURL != "" || !strings.Contains(vault.Pause.HowToAnswer, "$NAME") || strings.Contains(vault.Pause.HowToAnswer, "resume") {
		t.Fatalf("secret pause: %+v", vault.Pause)
	}
}

// statelessErrorCodes causes, on a stateless server, each error code of
// stateless mode (building those a call cannot cause as their maker does)
// and checks what every MCP error carries; TestEveryErrorCodeOverMCP
// counts them.
func statelessErrorCodes(t *testing.T) map[string]bool {
	t.Helper()
	e := newStatelessEnv(t)
	cs := e.connect(nil)
	got := map[string]bool{}
	expect := func(code, tool string, args map[string]any) ToolError {
		t.Helper()
		var te ToolError
		if !call(t, cs, tool, args, &te) || te.ErrorCode != code {
			t.Fatalf("%s %v: %+v, want %s", tool, args, te, code)
		}
		checkToolError(t, tool, te)
		got[code] = true
		return te
	}
	var r StatelessRunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &r) {
		t.Fatalf("run_start: %+v", r)
	}
	tampered := []byte(r.State)
	tampered[len(tampered)/2] ^= 1
	if te := expect(service.CodeStateInvalid, "run_continue", map[string]any{"state": string(tampered), "token": r.Pause.Token, "value": "Ada"}); te.Context.Argument != "state" {
		t.Errorf("STATE_INVALID names no argument: %+v", te)
	}
	expect(service.CodeStateInvalid, "run_restore", map[string]any{"state": r.State[:len(r.State)-3]})
	for _, tool := range []string{"run_get", "run_list", "run_cancel", "run_retry", "run_fork", "run_pause", "run_resume"} {
		expect(service.CodeNotStateless, tool, map[string]any{"run_id": "r"})
	}
	expect(service.CodeNotStateless, "run_start", map[string]any{"definition": "version: 1\nname: nap\nsteps:\n  - {id: s, sleep: 1h}\n"})
	expect(service.CodeNotStateless, "run_purge", map[string]any{"confirm": true})
	log := slog.New(slog.DiscardHandler)
	for _, err := range []*service.Error{
		{Code: service.CodeStateVersionMismatch, Category: code.CategoryConflict, Argument: "state", ExpectedVersion: "sha256:aa", CurrentVersion: "sha256:bb",
			Message: "the state's workflow version sha256:aa cannot be loaded by this server"},
		{Code: service.CodeStateTooLarge, Category: code.CategoryValidation, RunID: "run-1", Message: "the run's state would take 2000000 bytes sealed"},
	} {
		te := toolError(log, "run_continue", err)
		if te.ErrorCode != err.Code || (err.ExpectedVersion != "" && (te.Context.ExpectedVersion != err.ExpectedVersion || te.Context.CurrentVersion != err.CurrentVersion)) {
			t.Fatalf("%s: %+v", err.Code, te)
		}
		checkToolError(t, err.Code, *te)
		got[err.Code] = true
	}
	return got
}

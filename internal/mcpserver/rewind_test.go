package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

const threeQuestions = `version: 1
name: three
steps:
  - id: q1
    ask: {prompt: "One?", type: string}
  - id: q2
    ask: {prompt: "Two?", type: string, help: "any text"}
  - id: q3
    ask: {prompt: "Three?", type: string}
`

func TestRunRewindAndRestartOfferEarlierAnswers(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	var r RunResult
	if call(t, cs, "run_start", map[string]any{"definition": threeQuestions, "wait_seconds": 30}, &r) || r.Pause == nil {
		t.Fatalf("run_start: %+v", r)
	}
	old := r.RunID
	for _, a := range []string{"a1", "a2"} {
		if call(t, cs, "run_continue", map[string]any{"token": r.Pause.Token, "value": a, "wait_seconds": 30}, &r) || r.Pause == nil {
			t.Fatalf("run_continue: %+v", r)
		}
		if r.Pause.Previous || r.Pause.Default != nil {
			t.Fatalf("a first run offers %v", r.Pause.Default)
		}
	}
	var back RunResult
	if call(t, cs, "run_rewind", map[string]any{"run_id": old, "to_step": "q2", "wait_seconds": 30}, &back) {
		t.Fatalf("run_rewind: %+v", back)
	}
	if back.RunID == old || back.Pause == nil || back.Pause.StepID != "q2" || back.Pause.Default != "a2" || !back.Pause.Previous {
		t.Fatalf("rewound: %+v pause %+v", back, back.Pause)
	}
	var got RunResult
	if call(t, cs, "run_get", map[string]any{"run_id": old}, &got) || got.Status != "canceled" {
		t.Fatalf("the old run: %+v", got)
	}
	var again RunResult
	if call(t, cs, "run_restart", map[string]any{"run_id": back.RunID, "wait_seconds": 30}, &again) {
		t.Fatalf("run_restart: %+v", again)
	}
	if again.Pause == nil || again.Pause.StepID != "q1" || again.Pause.Default != "a1" || !again.Pause.Previous {
		t.Fatalf("restarted: %+v", again.Pause)
	}
	var te ToolError
	if !call(t, cs, "run_restart", map[string]any{"run_id": "nope"}, &te) || te.ErrorCode != "RUN_NOT_FOUND" {
		t.Fatalf("restart of no run: %+v", te)
	}
}

// An elicitation form pre-fills the earlier answer and says it is one.
func TestRewindElicitsWithTheEarlierAnswer(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	var r RunResult
	call(t, cs, "run_start", map[string]any{"definition": threeQuestions, "wait_seconds": 30}, &r)
	call(t, cs, "run_continue", map[string]any{"token": r.Pause.Token, "value": "a1", "wait_seconds": 30}, &r)
	call(t, cs, "run_continue", map[string]any{"token": r.Pause.Token, "value": "a2", "wait_seconds": 30}, &r)
	if r.Pause == nil || r.Pause.StepID != "q3" {
		t.Fatalf("run: %+v", r)
	}
	el := &elicitor{answers: []*mcp.ElicitResult{accept(map[string]any{"value": "a2"}), accept(map[string]any{"value": "b3"})}}
	ecs := connectVersion(t, e, &mcp.ClientOptions{ElicitationHandler: el.handle}, protocols[0])
	var done RunResult
	if call(t, ecs, "run_rewind", map[string]any{"run_id": r.RunID, "to_step": "q2", "wait_seconds": 30}, &done) {
		t.Fatalf("run_rewind: %+v", done)
	}
	if done.Status != "succeeded" || len(el.asked) != 2 {
		t.Fatalf("after elicitation: %+v, asked %d", done, len(el.asked))
	}
	prop, _ := el.asked[0].RequestedSchema.(map[string]any)["properties"].(map[string]any)["value"].(map[string]any)
	if prop["default"] != "a2" || !strings.Contains(prop["description"].(string), "any text "+previousHint) {
		t.Fatalf("the form's field: %v", prop)
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/postgres/pgtest"
	"stepwise.dev/stepwise/internal/workflow"
)

// fiveQuestions asks five questions (and a secret one between the 4th and
// the 5th) around an action step.
const fiveQuestions = `version: 1
name: five
inputs:
  who: {type: string, default: me}
steps:
  - id: q1
    ask: {prompt: "One?", type: string}
  - id: q2
    ask: {prompt: "Two?", type: string}
  - id: calc
    uses: transform
    with: {value: "${{ steps.q2.answer }}"}
  - id: q3
    ask: {prompt: "Three?", type: string, default: "three"}
  - id: q4
    ask: {prompt: "Four?", type: integer}
  - id: pw
    ask: {prompt: "Password?", type: string, secret: true}
  - id: q5
    ask: {prompt: "Five?", type: choice, choices: [x, y, z]}
outputs:
  all: ${{ steps.q1.answer }},${{ steps.q2.answer }},${{ steps.q3.answer }},${{ steps.q4.answer }},${{ steps.q5.answer }},${{ inputs.who }}
`

// answerAll answers the run's pauses in order: answers maps a step to its
// answer; a step not in it takes its default. check sees each pause first.
func (h *harness) answerAll(id string, answers map[string]any, check func(Pause)) store.Run {
	h.t.Helper()
	for {
		r := h.wait(id)
		if r.Status != store.StatusWaiting {
			return r
		}
		p := h.pause(id)
		if check != nil {
			check(p)
		}
		v, ok := answers[p.StepID]
		if !ok {
			v = p.Default
		}
		if _, err := h.eng.Continue(context.Background(), p.Token, v); err != nil {
			h.t.Fatalf("continue %s with %v: %v", p.StepID, v, err)
		}
	}
}

func eventsOf(t *testing.T, h *harness, id, typ string) []map[string]any {
	t.Helper()
	evs, err := h.store.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, ev := range evs {
		if ev.Type == typ {
			m := map[string]any{}
			_ = json.Unmarshal(ev.Data, &m)
			out = append(out, m)
		}
	}
	return out
}

func TestRewindOffersTheEarlierAnswers(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(fiveQuestions, map[string]any{"who": "ann"})
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]any{"q1": "a1", "q2": "a2", "q3": "a3", "q4": int64(4), "pw": "hunter2", "q5": "y"}
	r := h.answerAll(id, first, func(p Pause) {
		if p.Previous {
			t.Errorf("%s: a first run has no previous answer (default %v)", p.StepID, p.Default)
		}
	})
	if r.Status != store.StatusSucceeded || outputs(t, r)["all"] != "a1,a2,a3,4,y,ann" {
		t.Fatalf("first run %s %s", r.Status, r.Outputs)
	}

	ctx := context.Background()
	again, err := h.eng.RewindRun(ctx, id, "q2")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"q2": "a2", "q3": "a3", "q4": float64(4), "q5": "y"}
	asked := map[string]bool{}
	r = h.answerAll(again, map[string]any{"q3": "new3", "pw": "swordfish"}, func(p Pause) {
		asked[p.StepID] = true
		if p.StepID == "pw" {
			if p.Default != nil || p.Previous {
				t.Errorf("the secret question offers %v (previous %v)", p.Default, p.Previous)
			}
			return
		}
		if !p.Previous || p.Default != want[p.StepID] {
			t.Errorf("%s: default %v (%T) previous %v, want the earlier %v", p.StepID, p.Default, p.Default, p.Previous, want[p.StepID])
		}
	})
	if asked["q1"] || !asked["q2"] || !asked["q5"] {
		t.Fatalf("asked %v: from q2 on, not q1", asked)
	}
	if r.Status != store.StatusSucceeded || outputs(t, r)["all"] != "a1,a2,new3,4,y,ann" {
		t.Fatalf("rewound run %s %s", r.Status, r.Outputs)
	}
	// Linked both ways; the old run had finished, so it stays as it was.
	if old := h.wait(id); old.Status != store.StatusSucceeded {
		t.Fatalf("a finished run rewound is %s", old.Status)
	}
	if evs := eventsOf(t, h, id, EventRunRewound); len(evs) != 1 || evs[0]["run"] != again || evs[0]["step"] != "q2" {
		t.Fatalf("old run's run.rewound events %v", evs)
	}
	if evs := eventsOf(t, h, again, EventRunForked); len(evs) != 1 || evs[0]["from_run"] != id || evs[0]["as"] != "rewind" {
		t.Fatalf("new run's run.forked events %v", evs)
	}
	var st State
	if err := json.Unmarshal(r.State, &st); err != nil || st.RewoundFrom != id {
		t.Fatalf("state %s: %v", r.State, err)
	}
	if strings.Contains(string(r.State), "hunter2") {
		t.Fatalf("the secret answer is in the new run's state: %s", r.State)
	}

	// Rewinding the rewound run keeps its own answers as defaults.
	third, err := h.eng.RewindRun(ctx, again, "q3")
	if err != nil {
		t.Fatal(err)
	}
	r = h.answerAll(third, map[string]any{"pw": "x"}, func(p Pause) {
		if p.StepID == "q3" && (p.Default != "new3" || !p.Previous) {
			t.Errorf("q3 offers %v, want the rewound run's new3", p.Default)
		}
	})
	if outputs(t, r)["all"] != "a1,a2,new3,4,y,ann" {
		t.Fatalf("third run %s", r.Outputs)
	}
}

func TestRestartCancelsAndOffersEveryAnswer(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	id, err := h.start(fiveQuestions, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []any{"a1", "a2"} {
		h.wait(id)
		if _, err := h.eng.Continue(ctx, h.pause(id).Token, a); err != nil {
			t.Fatal(err)
		}
	}
	if r := h.wait(id); r.Status != store.StatusWaiting || h.pause(id).StepID != "q3" {
		t.Fatalf("run %s", r.Status)
	}
	again, err := h.eng.RestartRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	old := h.wait(id)
	if old.Status != store.StatusCanceled || !strings.Contains(string(old.Error), "restarted as "+again) {
		t.Fatalf("old run %s %s", old.Status, old.Error)
	}
	if evs := eventsOf(t, h, id, EventRunRewound); len(evs) != 1 || evs[0]["run"] != again || evs[0]["as"] != "restart" {
		t.Fatalf("run.rewound %v", evs)
	}
	seen := map[string]Pause{}
	r := h.answerAll(again, map[string]any{"q4": int64(1), "pw": "p", "q5": "z"}, func(p Pause) { seen[p.StepID] = p })
	if p := seen["q1"]; p.Default != "a1" || !p.Previous {
		t.Fatalf("q1 %v %v", p.Default, p.Previous)
	}
	if p := seen["q2"]; p.Default != "a2" || !p.Previous {
		t.Fatalf("q2 %v %v", p.Default, p.Previous)
	}
	// Never answered: the workflow's default, not a previous answer.
	if p := seen["q3"]; p.Default != "three" || p.Previous {
		t.Fatalf("q3 %v %v", p.Default, p.Previous)
	}
	if r.Status != store.StatusSucceeded || outputs(t, r)["all"] != "a1,a2,three,1,z,me" {
		t.Fatalf("restarted run %s %s", r.Status, r.Outputs)
	}
}

func TestRewindToAStepThatIsNoQuestion(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	id, err := h.start(fiveQuestions, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	for _, step := range []string{"calc", "nope", ""} {
		_, err := h.eng.RewindRun(ctx, id, step)
		var e *Error
		if CodeOf(err) != CodeStepNotFound || !errors.As(err, &e) || e.Argument != "to_step" ||
			!strings.Contains(e.Message, "q1, q2, q3, q4, pw, q5") {
			t.Fatalf("rewind to %q: %v", step, err)
		}
	}
	if _, err := h.eng.RewindRun(ctx, "no-such-run", "q1"); CodeOf(err) != CodeRunNotFound {
		t.Fatalf("unknown run: %v", err)
	}
	// Nothing changed: the run still waits on q1, nothing recorded.
	if r := h.wait(id); r.Status != store.StatusWaiting || h.pause(id).StepID != "q1" {
		t.Fatalf("run %s", r.Status)
	}
	if evs := eventsOf(t, h, id, EventRunRewound); len(evs) != 0 {
		t.Fatalf("events %v", evs)
	}
	runs, _, err := h.store.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %d %v", len(runs), err)
	}
}

// The same on PostgreSQL: the answers carried, the old run canceled and
// linked.
func TestRewindOnPostgres(t *testing.T) {
	url := pgtest.Schema(t)
	eng, st := openPGReplica(t, url, nil)
	ctx := context.Background()
	res := workflow.Check([]byte(fiveQuestions), workflow.Options{})
	def, _ := workflow.Canonical(res.Source.Value)
	id, err := eng.Start(ctx, StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def})
	if err != nil {
		t.Fatal(err)
	}
	pauseOf := func(id string) Pause {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := eng.Wait(wctx, id); err != nil {
			t.Fatal(err)
		}
		ps, err := eng.Pauses(ctx, id)
		if err != nil || len(ps) != 1 {
			t.Fatalf("pauses %v %v", ps, err)
		}
		return ps[0]
	}
	for _, a := range []any{"a1", "a2", "a3"} {
		if _, err := eng.Continue(ctx, pauseOf(id).Token, a); err != nil {
			t.Fatal(err)
		}
	}
	again, err := eng.RewindRun(ctx, id, "q2")
	if err != nil {
		t.Fatal(err)
	}
	if p := pauseOf(again); p.StepID != "q2" || p.Default != "a2" || !p.Previous {
		t.Fatalf("rewound pause %+v", p.Question)
	}
	if _, err := eng.Continue(ctx, pauseOf(again).Token, "b2"); err != nil {
		t.Fatal(err)
	}
	if p := pauseOf(again); p.StepID != "q3" || p.Default != "a3" || !p.Previous {
		t.Fatalf("q3 pause %+v", p.Question)
	}
	old, err := st.GetRun(ctx, id)
	if err != nil || old.Status != store.StatusCanceled || !strings.Contains(string(old.Error), "rewound to q2 as "+again) {
		t.Fatalf("old run %s %s %v", old.Status, old.Error, err)
	}
	evs, _ := st.Events(ctx, id, 0, 0)
	var linked bool
	for _, ev := range evs {
		linked = linked || (ev.Type == EventRunRewound && strings.Contains(string(ev.Data), again))
	}
	if !linked {
		t.Fatal("no run.rewound event naming the new run")
	}
}

// An answer too large to carry is not offered; the others are. A run can
// be rewound to an agent step.
func TestRewindBoundsAndAgentSteps(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	const doc = `version: 1
name: big
steps:
  - id: small
    ask: {prompt: "Small?", type: string}
  - id: big
    ask: {prompt: "Big?", type: string}
  - id: write
    agent: {instructions: "Write it."}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", maxEarlierAnswer+1)
	r := h.answerAll(id, map[string]any{"small": "s", "big": huge, "write": map[string]any{"text": "done"}}, nil)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("run %s %s", r.Status, r.Error)
	}
	again, err := h.eng.RestartRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]Pause{}
	h.answerAll(again, map[string]any{"big": "b", "write": map[string]any{"text": "again"}}, func(p Pause) { seen[p.StepID] = p })
	if p := seen["small"]; p.Default != "s" || !p.Previous {
		t.Fatalf("small %v %v", p.Default, p.Previous)
	}
	if p := seen["big"]; p.Default != nil || p.Previous {
		t.Fatalf("an answer over %d bytes was offered", maxEarlierAnswer)
	}
	third, err := h.eng.RewindRun(ctx, again, "write")
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(third); r.Status != store.StatusWaiting || h.pause(third).Kind != KindAgent {
		t.Fatalf("rewound to the agent step: %s", r.Status)
	}
}

// Questions inside a foreach offer each item's own earlier answer.
func TestRewindOffersNestedAnswersPerItem(t *testing.T) {
	h := newHarness(t)
	const doc = `version: 1
name: per-item
steps:
  - id: first
    ask: {prompt: "First?", type: string}
  - id: each
    foreach: ${{ ["web", "db"] }}
    concurrency: 1
    steps:
      - id: size
        ask: {prompt: "Size of ${{ item }}?", type: choice, choices: [s, m, l]}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]any{"Size of web?": "m", "Size of db?": "l"}
	answer := func(id string, check func(Pause)) {
		for {
			if r := h.wait(id); r.Status != store.StatusWaiting {
				if r.Status != store.StatusSucceeded {
					t.Fatalf("run %s %s", r.Status, r.Error)
				}
				return
			}
			ps, err := h.eng.Pauses(context.Background(), id)
			if err != nil || len(ps) == 0 {
				t.Fatalf("pauses %v %v", ps, err)
			}
			p := ps[0]
			if check != nil {
				check(p)
			}
			v := any("f")
			if p.StepID == "size" {
				v = sizes[p.Prompt]
			}
			if _, err := h.eng.Continue(context.Background(), p.Token, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	answer(id, nil)
	again, err := h.eng.RewindRun(context.Background(), id, "first")
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	answer(again, func(p Pause) {
		if p.StepID != "size" {
			return
		}
		asked++
		if p.Default != sizes[p.Prompt] || !p.Previous {
			t.Errorf("%s offers %v (previous %v)", p.Prompt, p.Default, p.Previous)
		}
	})
	if asked != 2 {
		t.Fatalf("asked %d item questions", asked)
	}
}

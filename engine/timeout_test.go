package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"stepwise.dev/stepwise/store"
)

// runStatus waits until the run reaches one of the given statuses.
func (h *harness) runStatus(id string, statuses ...string) store.Run {
	h.t.Helper()
	var r store.Run
	waitFor(h.t, func() bool {
		r, _ = h.store.GetRun(context.Background(), id)
		for _, s := range statuses {
			if r.Status == s {
				return true
			}
		}
		return false
	})
	return r
}

// stepRow is the latest record of a step key.
func stepRow(t *testing.T, h *harness, id, key string) store.Step {
	t.Helper()
	steps, err := h.store.Steps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var row store.Step
	for _, st := range steps {
		if st.Key == key {
			row = st
		}
	}
	return row
}

// A question whose timeout passes fails its step: without
// continue_on_error the run fails through its failure path (on_failure);
// the pause's token then continues nothing and says why.
func TestQuestionTimeoutFailsTheRun(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	doc := `version: 1
name: slow-person
steps:
  - id: before
    uses: record
    with: {name: before}
    compensate: {uses: record, with: {name: undo-before}}
  - id: q
    ask: {prompt: "Proceed?", type: boolean}
    timeout: 300ms
  - id: after
    uses: record
    with: {name: after}
on_failure:
  - uses: record
    with: {name: on-failure}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.runStatus(id, store.StatusWaiting)
	tok := h.pause(id).Token
	r := h.runStatus(id, store.StatusFailed)
	if !strings.Contains(string(r.Error), "timed out") {
		t.Errorf("run error %s", r.Error)
	}
	if got := j.String(); got != "before undo-before on-failure" {
		t.Errorf("journal %q, want the compensation and the on_failure hook", got)
	}
	if row := stepRow(t, h, id, "q"); row.Status != "failed" || !strings.Contains(row.Error, "no answer within 300ms") {
		t.Errorf("step q recorded %+v", row)
	}
	_, err = h.eng.Continue(context.Background(), tok, true)
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != CodePauseTimedOut {
		t.Fatalf("continue after the timeout: %v, want %s", err, CodePauseTimedOut)
	}
	if p, _ := h.store.GetPause(context.Background(), id, 1); p.Status != store.PauseTimedOut {
		t.Errorf("pause status %q", p.Status)
	}
	if timers, _ := h.store.Timers(context.Background(), id); len(timers) != 0 {
		t.Errorf("timers left: %+v", timers)
	}
}

// With continue_on_error the run goes on after the timed-out question
// and later steps see it failed; an agent step's timeout works alike.
func TestPauseTimeoutContinuesOnError(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: optional-answers
steps:
  - id: q
    ask: {prompt: "Anything to add?", type: string}
    timeout: 200ms
    continue_on_error: true
  - id: agent_work
    agent: {instructions: Summarize}
    timeout: 200ms
    continue_on_error: true
  - id: after
    uses: transform
    with: {value: "${{ steps.q.status }}/${{ steps.agent_work.status }}"}
outputs:
  seen: ${{ steps.after.output }}
  error: ${{ steps.agent_work.error }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.runStatus(id, store.StatusSucceeded, store.StatusFailed)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	out := outputs(t, r)
	if out["seen"] != "failed/failed" || !strings.Contains(out["error"].(string), "agent gave no result within 200ms") {
		t.Errorf("outputs %v", out)
	}
	evs, _ := h.store.Events(context.Background(), id, 0, 0)
	timedOut := 0
	for _, e := range evs {
		if e.Type == EventStepTimedOut {
			timedOut++
		}
	}
	if timedOut != 2 {
		t.Errorf("%d step.timed_out events, want 2", timedOut)
	}
}

// An answer in time clears the timeout: the run goes on and its wake-up
// is gone.
func TestAnswerBeforeTheTimeout(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: quick-person
steps:
  - id: q
    ask: {prompt: "Name?", type: string}
    timeout: 1h
  - id: after
    ask: {prompt: "Again?", type: string}
outputs:
  name: ${{ steps.q.answer }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.runStatus(id, store.StatusWaiting)
	if timers, _ := h.store.Timers(context.Background(), id); len(timers) != 1 {
		t.Fatalf("timers %+v, want the question's timeout", timers)
	}
	if _, err := h.eng.Continue(context.Background(), h.pause(id).Token, "Ada"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		ps, _ := h.eng.Pauses(context.Background(), id)
		return len(ps) == 1 && ps[0].StepID == "after"
	})
	if timers, _ := h.store.Timers(context.Background(), id); len(timers) != 0 {
		t.Errorf("timers left after the answer: %+v", timers)
	}
	if _, err := h.eng.Continue(context.Background(), h.pause(id).Token, "Bo"); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusSucceeded || outputs(t, r)["name"] != "Ada" {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Outputs)
	}
}

// A question's timeout is durable: an engine started after the first
// stopped fails the step when the timeout passes.
func TestQuestionTimeoutSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: restart-wait
steps:
  - id: q
    ask: {prompt: "Proceed?", type: boolean}
    timeout: 1s
    continue_on_error: true
outputs:
  status: ${{ steps.q.status }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.runStatus(id, store.StatusWaiting)
	var st State
	_ = json.Unmarshal(r.State, &st)
	if st.Wait == nil || st.Wait.Reason != "answer" || st.Wait.TimeoutAt.IsZero() {
		t.Fatalf("state %s", r.State)
	}
	h.close()
	h.open()
	if _, err := h.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = h.runStatus(id, store.StatusSucceeded, store.StatusFailed)
	if r.Status != store.StatusSucceeded || outputs(t, r)["status"] != "failed" {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Outputs)
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
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
	if p := h.pause(id); p.TimeoutAt == nil || time.Until(*p.TimeoutAt) < 50*time.Minute || time.Until(*p.TimeoutAt) > time.Hour {
		t.Errorf("the pause does not say when it times out: %+v", p.TimeoutAt)
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
	synctest.Test(t, testQuestionTimeoutSurvivesRestart) // its waits pass on the bubble's clock, at once
}

func testQuestionTimeoutSurvivesRestart(t *testing.T) {
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

// failsFirst fails its first call and succeeds afterwards.
type failsFirst struct {
	mu    sync.Mutex
	calls int
}

func (f *failsFirst) Name() string        { return "fails_first" }
func (f *failsFirst) Description() string { return "fails its first call" }
func (f *failsFirst) Safety() string      { return action.ReadOnly }
func (f *failsFirst) Run(context.Context, action.Call) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == 1 {
		return nil, errors.New("not yet")
	}
	return map[string]any{"calls": f.calls}, nil
}

// children lists a run's sub-workflow runs, oldest first.
func children(t *testing.T, h *harness, id string) []store.Run {
	t.Helper()
	kids, _, err := h.store.ListRuns(context.Background(), store.RunFilter{ParentID: id})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].CreatedAt.Before(kids[j].CreatedAt) })
	return kids
}

// A sub-workflow step's retry runs the whole sub-workflow again, as a new
// child run per attempt.
func TestSubWorkflowRetryStartsANewChild(t *testing.T) {
	h := newHarness(t)
	withAction(h, &failsFirst{})
	library(t, h, map[string]string{"flaky-child": `version: 1
name: flaky-child
steps:
  - id: call
    uses: fails_first
outputs:
  calls: ${{ steps.call.output.calls }}
`})
	doc := `version: 1
name: parent
steps:
  - id: sub
    workflow: flaky-child
    retry: {attempts: 3, backoff: 10ms}
outputs:
  calls: ${{ steps.sub.output.calls }}
  attempts: ${{ steps.sub.attempts }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.runStatus(id, store.StatusSucceeded, store.StatusFailed)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	if out := outputs(t, r); out["calls"] != 2.0 || out["attempts"] != 2.0 {
		t.Errorf("outputs %v", out)
	}
	kids := children(t, h, id)
	if len(kids) != 2 || kids[0].Status != store.StatusFailed || kids[1].Status != store.StatusSucceeded || kids[0].ID == kids[1].ID {
		t.Fatalf("children %+v, want a failed first attempt and a succeeded second", kids)
	}
}

// A sub-workflow step's timeout bounds each attempt: the child that runs
// out of time is canceled, the attempt fails, a retry starts a new child;
// once the attempts are spent the step fails.
func TestSubWorkflowTimeout(t *testing.T) {
	synctest.Test(t, testSubWorkflowTimeout) // its waits pass on the bubble's clock, at once
}

func testSubWorkflowTimeout(t *testing.T) {
	h := newHarness(t)
	library(t, h, map[string]string{"asking": askingChild})
	doc := `version: 1
name: parent
steps:
  - id: sub
    workflow: asking
    timeout: 300ms
    retry: {attempts: 2, backoff: 10ms}
    continue_on_error: true
outputs:
  status: ${{ steps.sub.status }}
  error: ${{ steps.sub.error }}
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
	if out["status"] != "failed" || !strings.Contains(out["error"].(string), "timed out after 300ms") {
		t.Errorf("outputs %v", out)
	}
	kids := children(t, h, id)
	if len(kids) != 2 || kids[0].Status != store.StatusCanceled || kids[1].Status != store.StatusCanceled {
		t.Fatalf("children %+v, want two canceled attempts", kids)
	}
	if ps, _ := h.eng.Pauses(context.Background(), id); len(ps) != 0 {
		t.Errorf("pauses left: %+v", ps)
	}
}

// A parallel group's timeout bounds the whole group, its waits included:
// when it passes, the branches' open questions are canceled, their
// wake-ups dropped, and the group's step fails (here continuing on error).
func TestGroupTimeoutEndsWaitingBranches(t *testing.T) {
	synctest.Test(t, testGroupTimeoutEndsWaitingBranches) // its waits pass on the bubble's clock, at once
}

func testGroupTimeoutEndsWaitingBranches(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: fan-out
steps:
  - id: fan
    timeout: 400ms
    continue_on_error: true
    parallel:
      - id: q
        ask: {prompt: "Proceed?", type: boolean}
      - id: nap
        sleep: 1h
      - id: quick
        uses: transform
        with: {value: done}
outputs:
  status: ${{ steps.fan.status }}
  error: ${{ steps.fan.error }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.runStatus(id, store.StatusWaiting)
	tok := h.pause(id).Token
	r := h.runStatus(id, store.StatusSucceeded, store.StatusFailed)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	out := outputs(t, r)
	if out["status"] != "failed" || !strings.Contains(out["error"].(string), "timed out after 400ms") {
		t.Errorf("outputs %v", out)
	}
	if ps, _ := h.store.OpenPauses(context.Background(), id); len(ps) != 0 {
		t.Errorf("open pauses left: %+v", ps)
	}
	if timers, _ := h.store.Timers(context.Background(), id); len(timers) != 0 {
		t.Errorf("timers left: %+v", timers)
	}
	_, err = h.eng.Continue(context.Background(), tok, true)
	var ee *Error
	if !errors.As(err, &ee) || ee.Code != CodePauseTimedOut {
		t.Errorf("continue a branch's question after the group's timeout: %v, want %s", err, CodePauseTimedOut)
	}
}

// A foreach's timeout interrupts items that are still working; the group
// fails and the run follows its failure path.
func TestForeachTimeoutInterruptsRunningItems(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	doc := `version: 1
name: slow-items
steps:
  - id: each
    timeout: 300ms
    foreach: [1, 2]
    steps:
      - id: work
        uses: noop
        with: {delay: 1h}
on_failure:
  - uses: record
    with: {name: on-failure}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.runStatus(id, store.StatusSucceeded, store.StatusFailed)
	if r.Status != store.StatusFailed || !strings.Contains(string(r.Error), "timed out after 300ms") {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	if j.String() != "on-failure" {
		t.Errorf("journal %q", j)
	}
}

// A definition recorded before the validator refused the modifiers the
// engine does not honour still loads (its runs finish as they started);
// other violations do not.
func TestRecordedDefinitionWithRefusedModifiersLoads(t *testing.T) {
	old := "version: 1\nname: old\nsteps:\n  - id: fan\n    parallel:\n      - id: q\n        ask: {prompt: Now?}\n        timeout: 1m\n"
	if wf, err := loadRecorded([]byte(old)); err != nil || wf.Step("q") == nil {
		t.Fatalf("recorded definition: %v", err)
	}
	if _, _, err := workflow.Load([]byte(old), workflow.Options{}); err == nil {
		t.Fatal("the validator accepts a timeout on a question inside a group")
	}
	if _, err := loadRecorded([]byte("version: 1\nname: bad\nsteps:\n  - id: a\n    uses: noop\n    with: ${{ nope }}\n")); err == nil {
		t.Fatal("a definition with other violations loaded")
	}
}

// A sub-workflow step's timeout is durable too: the parent waits on its
// child's question across a restart and fails the step on time.
func TestSubWorkflowTimeoutSurvivesRestart(t *testing.T) {
	synctest.Test(t, testSubWorkflowTimeoutSurvivesRestart) // its waits pass on the bubble's clock, at once
}

func testSubWorkflowTimeoutSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	lib := map[string]string{"asking": askingChild}
	library(t, h, lib)
	doc := `version: 1
name: parent
steps:
  - id: sub
    workflow: asking
    timeout: 1s
    continue_on_error: true
outputs:
  status: ${{ steps.sub.status }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.runStatus(id, store.StatusWaiting)
	var st State
	_ = json.Unmarshal(r.State, &st)
	if st.Wait == nil || st.Wait.Child == "" || st.Wait.TimeoutAt.IsZero() {
		t.Fatalf("state %s", r.State)
	}
	h.close()
	h.open()
	library(t, h, lib)
	if _, err := h.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = h.runStatus(id, store.StatusSucceeded, store.StatusFailed)
	if r.Status != store.StatusSucceeded || outputs(t, r)["status"] != "failed" {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Outputs)
	}
	if kids := children(t, h, id); len(kids) != 1 || kids[0].Status != store.StatusCanceled {
		t.Fatalf("children %+v", kids)
	}
}

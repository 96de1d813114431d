package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// flaky fails until it has been called `fails` times for the same step
// execution (counted by idempotency key, which every retry of one
// execution shares).
type flaky struct {
	mu    sync.Mutex
	calls map[string]int
}

func (f *flaky) Name() string        { return "flaky" }
func (f *flaky) Description() string { return "fails a given number of times" }
func (f *flaky) Safety() string      { return action.ReadOnly }
func (f *flaky) Run(_ context.Context, c action.Call) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[c.IdempotencyKey]++
	n := f.calls[c.IdempotencyKey]
	fails, _ := c.Input["fails"].(float64) // JSON numbers
	if c.Input["permanent"] == true {
		return nil, &action.Error{Err: errors.New("bad request")}
	}
	if float64(n) <= fails {
		return nil, errors.New("try again later")
	}
	return map[string]any{"calls": n, "key": c.IdempotencyKey, "attempt": c.Attempt}, nil
}

func withAction(h *harness, a action.Action) {
	h.eng.actions.Register(a)
}

func TestRetryWithBackoff(t *testing.T) {
	h := newHarness(t)
	withAction(h, &flaky{calls: map[string]int{}})
	doc := `version: 1
name: retries
steps:
  - id: call
    uses: flaky
    with: {fails: 2}
    retry: {attempts: 3, backoff: 50ms, max_backoff: 200ms}
  - id: never
    uses: flaky
    with: {fails: 5}
    retry: {attempts: 2, backoff: 10ms}
    continue_on_error: true
  - id: permanent
    uses: flaky
    with: {permanent: true}
    retry: {attempts: 5, backoff: 10ms}
    continue_on_error: true
outputs:
  calls: ${{ steps.call.output.calls }}
  key: ${{ steps.call.output.key }}
  attempt: ${{ steps.call.output.attempt }}
  never: ${{ steps.never.attempts }}
  permanent: ${{ steps.permanent.attempts }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	out := outputs(t, r)
	// Three calls under one key: the retries of one execution share it.
	if out["calls"] != 3.0 || out["key"] != id+"/call" || out["attempt"] != 3.0 || out["never"] != 2.0 || out["permanent"] != 1.0 {
		t.Fatalf("outputs %v", out)
	}
	atts, _ := h.store.Attempts(context.Background(), id)
	var callAttempts []string
	for _, a := range atts {
		if a.Key == "call" {
			callAttempts = append(callAttempts, a.Status)
		}
	}
	if strings.Join(callAttempts, ",") != "failed,failed,succeeded" {
		t.Errorf("attempts of call: %v", callAttempts)
	}
	evs, _ := h.store.Events(context.Background(), id, 0, 0)
	retrying := 0
	for _, e := range evs {
		if e.Type == EventStepRetrying {
			retrying++
		}
	}
	if retrying != 3 { // call twice, never once
		t.Errorf("%d step.retrying events", retrying)
	}
}

func TestSleepSurvivesRestart(t *testing.T) {
	synctest.Test(t, testSleepSurvivesRestart) // its waits pass on the bubble's clock, at once
}

func testSleepSurvivesRestart(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: sleeper
steps:
  - id: nap
    sleep: 2s
  - id: after
    uses: transform
    with: {value: awake}
outputs:
  v: ${{ steps.after.output }}
  until: ${{ steps.nap.output.until }}
`
	start := time.Now()
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	r, _ := h.store.GetRun(context.Background(), id)
	var st State
	_ = json.Unmarshal(r.State, &st)
	if r.Status != store.StatusRunning || st.Wait == nil || st.Wait.Reason != "sleep" {
		t.Fatalf("run %s state %s", r.Status, r.State)
	}
	// Restart: a new engine on the same database finds the wake-up.
	h.close()
	h.open()
	if _, err := h.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = h.wait(id)
	woke := time.Since(start)
	if r.Status != store.StatusSucceeded || outputs(t, r)["v"] != "awake" {
		t.Fatalf("status %s outputs %s", r.Status, r.Outputs)
	}
	if woke < 2*time.Second || woke > 3*time.Second+timerPoll {
		t.Errorf("woke after %s, want about 2s", woke)
	}
	timers, _ := h.store.DueTimers(context.Background(), time.Now().Add(time.Hour), 10)
	if len(timers) != 0 {
		t.Errorf("timers left: %+v", timers)
	}
}

func TestRepeatUntil(t *testing.T) {
	h := newHarness(t)
	withAction(h, &flaky{calls: map[string]int{}})
	doc := `version: 1
name: poll
steps:
  - id: poll
    uses: noop
    repeat: {until: "steps.poll.attempts >= 3", every: 20ms, max_attempts: 5}
  - id: give_up
    uses: noop
    repeat: {until: "false", every: 10ms, max_attempts: 2}
    continue_on_error: true
outputs:
  polls: ${{ steps.poll.attempts }}
  gave_up: ${{ steps.give_up.status }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	if out := outputs(t, r); out["gave_up"] != "failed" {
		t.Errorf("outputs %v", out)
	}
	evs, _ := h.store.Events(context.Background(), id, 0, 0)
	rep := 0
	for _, e := range evs {
		if e.Type == EventStepRepeating && e.StepID == "poll" {
			rep++
		}
	}
	if rep != 2 {
		t.Errorf("poll repeated %d times, want 2", rep)
	}
}

func TestCancelSleepingRunClearsItsTimer(t *testing.T) {
	h := newHarness(t)
	id, err := h.start("version: 1\nname: long\nsteps:\n  - {id: nap, sleep: 1h}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if next, ok, _ := h.store.NextTimer(context.Background()); ok && next.RunID == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no timer was set")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.eng.Cancel(context.Background(), id, "", false); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := h.store.NextTimer(context.Background()); ok {
		t.Error("the canceled run's timer is still there")
	}
}

func TestRunDeadline(t *testing.T) {
	h := newHarness(t)
	for name, doc := range map[string]string{
		"waiting":  "version: 1\nname: slow-answer\ntimeout: 300ms\nsteps:\n  - {id: q, ask: {prompt: 'Now?', type: boolean}}\n",
		"sleeping": "version: 1\nname: long-nap\ntimeout: 300ms\nsteps:\n  - {id: nap, sleep: 1h}\n",
		"working":  "version: 1\nname: long-step\ntimeout: 300ms\nsteps:\n  - {id: work, uses: noop, with: {delay: 1h}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			id, err := h.start(doc, nil)
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				r, _ := h.store.GetRun(context.Background(), id)
				return r.Status == store.StatusFailed
			})
			r, _ := h.store.GetRun(context.Background(), id)
			if !strings.Contains(string(r.Error), "passed its deadline") {
				t.Fatalf("error %s", r.Error)
			}
		})
	}
}

// A callee's Retry-After lengthens the backoff, but never beyond
// max_backoff; other errors wait the plain backoff.
func TestRetryDelayHonoursRetryAfter(t *testing.T) {
	r := &workflow.Retry{Attempts: 3, Backoff: "10ms", MaxBackoff: "2s"}
	asked := &action.Error{Err: errors.New("503"), Retryable: true, RetryAfter: time.Second}
	if d := retryDelay(r, 1, nil, asked); d != time.Second {
		t.Errorf("Retry-After 1s: waited %s", d)
	}
	asked.RetryAfter = time.Hour
	if d := retryDelay(r, 1, nil, asked); d != 2*time.Second {
		t.Errorf("Retry-After 1h with max_backoff 2s: waited %s", d)
	}
	if d := retryDelay(r, 1, nil, errors.New("reset")); d > 10*time.Millisecond {
		t.Errorf("no Retry-After: waited %s, want at most the 10ms backoff", d)
	}
}

package engine

import (
	"context"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

const checkpointed = `version: 1
name: checkpointed
inputs:
  limit: {type: integer, default: 1}
steps:
  - id: first
    uses: record
    with: {name: first}
  - id: check
    uses: record
    with: {name: "check-${{ inputs.limit }}", fail: "${{ inputs.limit < 5 }}"}
  - id: last
    uses: record
    with: {name: last}
outputs:
  last: ${{ steps.last.output.name }}
`

func TestRetryFromTheFailedStep(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	id, err := h.start(checkpointed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusFailed {
		t.Fatalf("status %s", r.Status)
	}
	// Wrong corrected input: refused, nothing changes.
	if err := h.eng.RetryRun(context.Background(), id, map[string]any{"limit": "many"}); CodeOf(err) != CodeInputInvalid {
		t.Fatalf("bad input: %v", err)
	}
	if err := h.eng.RetryRun(context.Background(), id, map[string]any{"limit": int64(7)}); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded || outputs(t, r)["last"] != "last" {
		t.Fatalf("status %s %s %s", r.Status, r.Error, r.Outputs)
	}
	// first ran once; check ran twice (failed, then with limit 7).
	if got := j.String(); got != "first check-1! check-7 last" {
		t.Fatalf("journal %q", got)
	}
	if err := h.eng.RetryRun(context.Background(), id, nil); err == nil {
		t.Fatal("a succeeded run cannot be retried")
	}
}

func TestForkReusesEarlierSteps(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	id, _ := h.start(checkpointed, map[string]any{"limit": int64(9)})
	if r := h.wait(id); r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	fork, err := h.eng.ForkRun(context.Background(), id, "check", map[string]any{"limit": int64(6)})
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(fork)
	if r.Status != store.StatusSucceeded || r.Version == "" {
		t.Fatalf("fork %s %s", r.Status, r.Error)
	}
	if got := j.String(); got != "first check-9 last check-6 last" {
		t.Fatalf("journal %q (first must not run again)", got)
	}
	steps, _ := h.store.Steps(context.Background(), fork)
	if len(steps) != 3 || steps[0].StepID != "first" {
		t.Fatalf("fork steps %+v", steps)
	}
	if _, err := h.eng.ForkRun(context.Background(), id, "nope", nil); err == nil {
		t.Fatal("fork from a missing step must fail")
	}
}

func TestHoldAndUnhold(t *testing.T) {
	h := newHarness(t)
	id, err := h.start("version: 1\nname: held\nsteps:\n  - {id: nap, sleep: 300ms}\n  - {id: done, uses: noop}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, ok, _ := h.store.NextTimer(context.Background())
		return ok
	})
	if err := h.eng.HoldRun(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusPaused {
		t.Fatalf("status %s", r.Status)
	}
	if _, ok, _ := h.store.NextTimer(context.Background()); ok {
		t.Fatal("a paused run keeps its wake-up")
	}
	if _, err := h.eng.Resume(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusSucceeded {
		t.Fatalf("after resume: %s %s", r.Status, r.Error)
	}
}

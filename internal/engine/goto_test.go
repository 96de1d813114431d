package engine

import (
	"context"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// A forward goto skips the steps it jumps over: they are recorded as
// skipped (so views list them), and later steps read status "skipped".
func TestForwardGotoSkipsTheStepsInBetween(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: jump
steps:
  - id: decide
    switch:
      - goto: done
  - id: one
    uses: transform
    with: {value: 1}
  - id: two
    uses: transform
    with: {value: 2}
  - id: done
    uses: transform
    with: {value: "${{ steps.one.status }}/${{ steps.two.status }}"}
outputs:
  seen: ${{ steps.done.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	if got := outputs(t, r)["seen"]; got != "skipped/skipped" {
		t.Errorf("later steps see %v, want skipped/skipped", got)
	}
	steps, err := h.store.Steps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, st := range steps {
		status[st.Key] = st.Status
	}
	for key, want := range map[string]string{"decide": "succeeded", "one": "skipped", "two": "skipped", "done": "succeeded"} {
		if status[key] != want {
			t.Errorf("step %s recorded %q, want %q (all: %v)", key, status[key], want, status)
		}
	}
	evs, _ := h.store.Events(context.Background(), id, 0, 0)
	skipped := 0
	for _, e := range evs {
		if e.Type == EventStepSkipped {
			skipped++
		}
	}
	if skipped != 2 {
		t.Errorf("%d step.skipped events, want 2", skipped)
	}
}

// Inside a foreach body a forward goto skips the body steps in between,
// recorded per item like the others.
func TestForwardGotoInsideAForeachBody(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: jump-body
steps:
  - id: loop
    foreach: [1, 2]
    steps:
      - id: decide
        switch:
          - if: item == 1
            goto: last
      - id: middle
        uses: transform
        with: {value: mid}
      - id: last
        uses: transform
        with: {value: "${{ steps.middle.status }}"}
outputs:
  seen: ${{ steps.loop.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	seen, _ := outputs(t, r)["seen"].([]any)
	if len(seen) != 2 || seen[0] != "skipped" || seen[1] != "succeeded" {
		t.Errorf("items saw %v, want [skipped succeeded]", seen)
	}
	steps, _ := h.store.Steps(context.Background(), id)
	status := map[string]string{}
	for _, st := range steps {
		status[st.Key] = st.Status
	}
	if status["loop[0].middle"] != "skipped" || status["loop[1].middle"] != "succeeded" {
		t.Errorf("recorded %v", status)
	}
}

// Visits that skip a step (a forward goto, a false if) do not count
// toward its max_visits: the limit bounds how often it runs.
func TestSkippedVisitsDoNotCountTowardMaxVisits(t *testing.T) {
	h := newHarness(t)
	doc := `version: 1
name: skip-then-run
steps:
  - id: q
    ask: {prompt: "Round?", type: integer}
  - id: jump
    switch:
      - if: steps.q.answer == 1
        goto: after
  - id: middle
    uses: transform
    with: {value: ran}
    max_visits: 1
  - id: after
    max_visits: 3
    switch:
      - if: steps.q.answer == 1
        goto: q
outputs:
  middle: ${{ steps.middle.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, round := range []int{1, 2} {
		h.wait(id)
		if _, err := h.eng.Continue(context.Background(), h.pause(id).Token, round); err != nil {
			t.Fatal(err)
		}
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded || outputs(t, r)["middle"] != "ran" {
		t.Fatalf("status %s %s %s", r.Status, r.Error, r.Outputs)
	}
}

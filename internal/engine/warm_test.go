package engine

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// warmChecks counts the kept states the engine's tests compared with a
// fresh load.
var warmChecks atomic.Int64

// Every load in the engine's tests that could use a kept state reads the
// run afresh too and fails loudly when the two differ: the kept state must
// be what a load would give.
func init() {
	verifyWarm = true
	checkWarm = func(kept, fresh *runState) {
		warmChecks.Add(1)
		diff := func(what string, a, b any) {
			if !reflect.DeepEqual(a, b) {
				panic(fmt.Sprintf("run %s: kept state differs from a fresh load in %s:\nkept  %s\nfresh %s", fresh.run.ID, what, show(a), show(b)))
			}
		}
		diff("run", kept.run, fresh.run)
		diff("state", kept.state, fresh.state)
		diff("inputs", kept.inputs, fresh.inputs)
		for id, r := range fresh.results {
			diff("result of "+id, kept.results[id], r)
		}
		diff("results", kept.results, fresh.results)
		diff("steps", kept.steps, fresh.steps)
		diff("done", kept.done, fresh.done)
		diff("byKey", kept.byKey, fresh.byKey)
		diff("open", kept.open, fresh.open)
		diff("failed", kept.failed, fresh.failed)
	}
}

func show(v any) string {
	if r, ok := v.(*result); ok && r != nil {
		return fmt.Sprintf("&%#v (output %T, answer %T)", *r, r.Output, r.Answer)
	}
	return fmt.Sprintf("%#v", v)
}

const sumLoop = `version: 1
name: double-loop
steps:
  - id: number
    max_visits: 100
    ask: {prompt: "Next number?", type: integer}
  - id: double
    uses: transform
    with: {value: "${{ steps.number.answer * 2 }}"}
  - id: again
    switch:
      - if: ${{ steps.number.answer < 100 }}
        goto: number
outputs:
  last: ${{ steps.double.output }}
`

// A conversation of answers uses the state kept between drives (checked
// against a fresh load each time, see init), and a run changed by another
// engine on the same database (another process) is loaded afresh.
func TestWarmStateBetweenAnswers(t *testing.T) {
	h := newHarness(t)
	other, err := New(Config{Store: h.store, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	id, err := h.start(sumLoop, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := warmChecks.Load()
	for i, n := range []int{5, 7, 11, 150} {
		if r := h.wait(id); r.Status != store.StatusWaiting {
			t.Fatalf("answer %d: status %s", i, r.Status)
		}
		eng := h.eng
		if i == 2 {
			eng = other // this engine's kept state is stale from here on
		}
		// The driver that opened the pause keeps its state on its way out:
		// a Continue before that loads afresh (and commits the answer
		// itself), which is right but not what is counted here.
		driverGone(t, h.eng, id)
		driverGone(t, other, id)
		if _, err := eng.Continue(context.Background(), h.pause(id).Token, n); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if _, err := other.Wait(ctx, id); err != nil {
				t.Fatal(err)
			}
			cancel()
		}
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded || outputs(t, r)["last"] != float64(300) {
		t.Fatalf("run %s: %s %s", id, r.Status, r.Outputs)
	}
	// One per answer in this engine: the Continue's load (its driver
	// takes the state from the Continue, with the answer queued).
	if got := warmChecks.Load() - before; got < 2 {
		t.Fatalf("%d loads used a kept state, want at least 2 (one per answer in this engine)", got)
	}
}

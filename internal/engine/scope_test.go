package engine

import (
	"context"
	"io"
	"sync"
	"testing"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
)

// opener is an action that opens one resource per scope and counts what
// it opened and what was closed.
type opener struct {
	mu             sync.Mutex
	opened, closed int
	unscoped       int
}

type resource struct{ o *opener }

func (r resource) Close() error {
	r.o.mu.Lock()
	defer r.o.mu.Unlock()
	r.o.closed++
	return nil
}

type openerKey struct{}

func (o *opener) Name() string        { return "open" }
func (o *opener) Description() string { return "opens a resource per run scope" }
func (o *opener) Safety() string      { return action.ReadOnly }
func (o *opener) Run(_ context.Context, c action.Call) (any, error) {
	_, ok := c.Scope.Value(openerKey{}, func() io.Closer {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.opened++
		return resource{o}
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	if !ok {
		o.unscoped++
	}
	return map[string]any{}, nil
}

func (o *opener) counts() (opened, closed, unscoped int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.opened, o.closed, o.unscoped
}

// Steps of one run share what an action keeps in the scope; the engine
// closes it when the driver exits, so a paused run holds nothing open and
// its continuation opens afresh.
func TestActionScopeLivesAsLongAsTheDriver(t *testing.T) {
	h := newHarness(t)
	o := &opener{}
	withAction(h, o)
	doc := `version: 1
name: scoped
steps:
  - id: a
    uses: open
  - id: b
    uses: open
  - id: both
    parallel:
      - id: c
        uses: open
      - id: d
        uses: open
  - id: q
    ask: {prompt: "Go on?", type: boolean}
  - id: e
    uses: open
  - id: f
    uses: open
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusWaiting {
		t.Fatalf("status %s, want waiting", r.Status)
	}
	// The commit that paused the run is published before the driver
	// exits: wait for the close.
	waitFor(t, func() bool { _, closed, _ := o.counts(); return closed == 1 })
	if opened, _, unscoped := o.counts(); opened != 1 || unscoped != 0 {
		t.Fatalf("before the pause: opened %d, unscoped %d; want one resource for four steps", opened, unscoped)
	}
	p := h.pause(id)
	if _, err := h.eng.Continue(context.Background(), p.Token, true); err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusSucceeded {
		t.Fatalf("status %s (%s)", r.Status, r.Error)
	}
	waitFor(t, func() bool { _, closed, _ := o.counts(); return closed == 2 })
	if opened, _, unscoped := o.counts(); opened != 2 || unscoped != 0 {
		t.Fatalf("after the continuation: opened %d, unscoped %d; want 2 and 0", opened, unscoped)
	}
}

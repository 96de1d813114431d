package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
)

// keyRecorder records the idempotency key and attempt of every call, and
// fails the first call under a key when with.fails is true.
type keyRecorder struct {
	mu    sync.Mutex
	calls []string
	seen  map[string]bool
}

func (k *keyRecorder) Name() string        { return "rec" }
func (k *keyRecorder) Description() string { return "records idempotency keys" }
func (k *keyRecorder) Safety() string      { return action.ReadOnly }
func (k *keyRecorder) Run(_ context.Context, c action.Call) (any, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls = append(k.calls, fmt.Sprintf("%s@%d", c.IdempotencyKey, c.Attempt))
	first := !k.seen[c.IdempotencyKey]
	k.seen[c.IdempotencyKey] = true
	if c.Input["fails"] == true && first {
		return nil, errors.New("flaky")
	}
	return map[string]any{"key": c.IdempotencyKey}, nil
}

// TestIdempotencyKeyIsStablePerExecution: every retry of one execution
// carries the same key (so a server can de-duplicate it) and the attempt
// separately; a new visit, a new repeat poll, each foreach item, a
// compensation and a hook are executions of their own with keys of their
// own.
func TestIdempotencyKeyIsStablePerExecution(t *testing.T) {
	h := newHarness(t)
	rec := &keyRecorder{seen: map[string]bool{}}
	withAction(h, rec)
	doc := `version: 1
name: keys
steps:
  - id: once
    uses: rec
    with: {fails: true}
    retry: {attempts: 2, backoff: 10ms}
    compensate: {uses: rec}
  - id: poll
    uses: rec
    repeat: {until: "steps.poll.attempts >= 2", every: 10ms}
  - id: loop
    uses: rec
    max_visits: 2
  - id: back
    switch:
      - if: 'not (steps.loop.output.key endsWith "#2")'
        goto: loop
  - id: each
    foreach: ${{ [1, 2] }}
    steps:
      - id: item
        uses: rec
        with: {fails: true}
        retry: {attempts: 2, backoff: 10ms}
  - id: boom
    fail: stop here
on_failure:
  - uses: rec
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusFailed {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	// The attempts made under each key, in order.
	want := map[string]string{
		"once": "1,2", "poll": "1", "poll/repeat-2": "1", "loop": "1", "loop#2": "1",
		"each[0].item": "1,2", "each[1].item": "1,2", "compensate:once": "1", "on_failure:0": "1",
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got := map[string]string{}
	for _, c := range rec.calls {
		key, attempt, _ := strings.Cut(strings.TrimPrefix(c, id+"/"), "@")
		if got[key] != "" {
			attempt = got[key] + "," + attempt
		}
		got[key] = attempt
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("attempts by key\n got %v\nwant %v", got, want)
	}
}

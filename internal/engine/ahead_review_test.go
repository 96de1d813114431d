package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
)

// failOnStep fails the first commit that records step `step` (once).
type failOnStep struct {
	store.Store
	step   string
	fired  atomic.Bool
	failed chan struct{}
}

func (s *failOnStep) Commit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	for _, st := range c.Steps {
		if st.StepID == s.step && s.fired.CompareAndSwap(false, true) {
			close(s.failed)
			return store.CommitResult{}, errDiskFull
		}
	}
	return s.Store.Commit(ctx, c)
}

// openWith opens an engine on the database at path through s (a store
// wrapper whose Store it sets).
func openWith(t *testing.T, path string, s interface{ set(store.Store) }) (*Engine, *sqlite.Store) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		t.Fatal(err)
	}
	s.set(db)
	eng, err := New(Config{Store: s.(store.Store), Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return eng, db
}

func (s *failOnStep) set(db store.Store) { s.Store = db }

// regions is a choices_from action with an effect (not pure).
type regions struct{ calls atomic.Int64 }

func (*regions) Name() string        { return "regions" }
func (*regions) Description() string { return "" }
func (*regions) Safety() string      { return action.ReadOnly }
func (r *regions) Run(context.Context, action.Call) (any, error) {
	r.calls.Add(1)
	return []any{"eu", "us"}, nil
}

// A question's choices_from settles the pipeline before its action runs.
// When that settle's own commit fails, the pure steps it carried are lost:
// the question must not be opened on top of them (the stored cursor would
// point past steps that were never recorded).
func TestFailedSettleBeforeChoicesFromStopsTheDriver(t *testing.T) {
	const doc = `version: 1
name: choices
steps:
  - {id: a1, uses: noop}
  - id: q
    ask:
      prompt: which?
      type: choice
      choices_from: {uses: regions}
`
	// No background flush: a1 waits in the pipeline until the question's
	// choices_from settles it, so the failing commit is the settle's own.
	was := lingerFor
	t.Cleanup(func() { lingerFor = was })
	lingerFor = time.Hour
	path := filepath.Join(t.TempDir(), "t.db")
	s := &failOnStep{step: "a1", failed: make(chan struct{})}
	eng, db := openWith(t, path, s)
	eng.actions.Register(&regions{})
	id := startOn(t, eng, doc)
	select {
	case <-s.failed:
	case <-time.After(30 * time.Second):
		t.Fatal("the commit of a1 never came")
	}
	if err := eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run, steps, st := stored(t, db, id)
	if st.Cursor != len(steps) {
		t.Fatalf("stored run %s at cursor %d with %d step rows: something was written on top of the lost step a1", run.Status, st.Cursor, len(steps))
	}
	_ = db.Close()

	// Driven again, the run records a1 once and asks with its choices.
	eng2, db2 := openSlow(t, path, &slowStore{})
	defer db2.Close()
	defer eng2.Close(context.Background())
	eng2.actions.Register(&regions{})
	if _, err := eng2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if st := awaitOn(t, eng2, id); st != store.StatusWaiting {
		t.Fatalf("status %s, want waiting", st)
	}
	steps, err := db2.Steps(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 || steps[0].StepID != "a1" {
		t.Fatalf("steps %v, want a1 once", steps)
	}
	ps, err := eng2.Pauses(ctx, id)
	if err != nil || len(ps) != 1 || len(ps[0].Choices) != 2 {
		t.Fatalf("pauses %+v (%v), want one question with two choices", ps, err)
	}
}

// merged writes each attempt once: the queue's, then the last commit's.
func TestMergedKeepsEachAttemptOnce(t *testing.T) {
	q := store.Commit{Steps: []store.Step{{Key: "a"}}, Attempts: []store.Attempt{{Key: "a", Attempt: 2}}}
	last := store.Commit{Steps: []store.Step{{Key: "b"}}, Attempts: []store.Attempt{{Key: "b", Attempt: 1}}}
	got := merged([]queued{{c: q}}, last)
	var keys []string
	for _, a := range got.Attempts {
		keys = append(keys, fmt.Sprintf("%s/%d", a.Key, a.Attempt))
	}
	if fmt.Sprint(keys) != "[a/2 b/1]" {
		t.Fatalf("attempts %v, want [a/2 b/1]", keys)
	}
}

// A driver held back by maxAhead learns of a flush that failed while it
// waited: its commit is not queued, it gets the failure.
func TestBackpressureSeesAFailedFlush(t *testing.T) {
	h := newHarness(t)
	rs := &runState{run: store.Run{ID: "r"}}
	a := newAhead(rs.run)
	rs.ahead = a
	a.queue = make([]queued, maxAhead)
	a.flushing = true // a flush is in flight (simulated below)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(20 * time.Millisecond)
		// The flush takes the queue, its commit fails, it ends.
		a.mu.Lock()
		a.queue, a.err, a.flushing = nil, errDiskFull, false
		a.idle.Broadcast()
		a.mu.Unlock()
	}()
	err := h.eng.commitAhead(context.Background(), rs, store.Commit{Steps: []store.Step{{Key: "x", StepID: "x"}}}, State{Cursor: 1})
	wg.Wait()
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("commitAhead after a failed flush: %v, want the flush's failure", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.queue) != 0 || a.linger != nil {
		t.Fatalf("queue %d, linger %v after the failure: nothing may be queued behind it", len(a.queue), a.linger != nil)
	}
}

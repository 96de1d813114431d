package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Concurrency queue cases (issue 27; see store/queue.go).

var queueTests = []struct {
	name string
	fn   func(*testing.T, store.Store)
}{
	{"QueueAdmitsInOrderUpToTheLimit", testQueueAdmission},
	{"QueueCreateRefusesInvalidRuns", testQueueRefusals},
	{"QueueAdmissionNeverExceedsTheLimit", func(t *testing.T, s store.Store) { testQueueConcurrent(t, s, s) }},
}

// queued creates a run of workflow wf in queue key with the limit, in the
// given status, created at t0+at.
func queued(t *testing.T, s store.Store, wf, key string, limit int, status string, at time.Duration) string {
	t.Helper()
	return newRun(t, s, func(r *store.Run) {
		r.Workflow, r.ConcurrencyKey, r.ConcurrencyLimit, r.Status, r.CreatedAt = wf, key, limit, status, t0.Add(at)
	}).ID
}

func admit(t *testing.T, s store.Store, r store.AdmitRequest) []string {
	t.Helper()
	if r.Owner == "" {
		r.Owner, r.Now, r.TTL = "A", t0, ttl
	}
	var ids []string
	for _, l := range ok(s.AdmitQueued(ctx, r))(t) {
		if l.Owner != r.Owner || l.Epoch < 1 || !l.Expires.Equal(r.Now.Add(r.TTL)) || l.EventSeq != ok(s.GetRun(ctx, l.RunID))(t).EventSeq {
			t.Fatalf("admitted lease %+v", l)
		}
		ids = append(ids, l.RunID)
	}
	return ids
}

func endRun(t *testing.T, s store.Store, id, status string) {
	t.Helper()
	r := ok(s.GetRun(ctx, id))(t)
	ok(s.Commit(ctx, store.Commit{RunID: id, Rev: r.Rev, Run: store.RunUpdate{Status: status, FinishedAt: t0}}))(t)
}

func testQueueAdmission(t *testing.T, s store.Store) {
	one := store.AdmitRequest{Workflow: "wf", Key: "acme"}
	active := queued(t, s, "wf", "acme", 2, store.StatusRunning, 0)
	q := make([]string, 5)
	for i := range q {
		q[i] = queued(t, s, "wf", "acme", 2, store.StatusQueued, time.Duration(i+1)*time.Second)
	}
	other := queued(t, s, "wf", "globex", 1, store.StatusQueued, 0)
	unlimited := newRun(t, s, func(r *store.Run) { r.Workflow = "wf" }).ID // counts in no queue
	_ = unlimited
	for i, want := range []int{0, 1, 2, 3, 4} {
		if got := ok(s.QueuePosition(ctx, q[i]))(t); got != want {
			t.Fatalf("position of queued run %d: %d, want %d", i, got, want)
		}
	}
	if _, err := s.QueuePosition(ctx, active); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("position of a running run: %v", err)
	}
	if got := admit(t, s, one); len(got) != 1 || got[0] != q[0] {
		t.Fatalf("first admission %v, want [%s] (one slot of two is taken)", got, q[0])
	}
	r := ok(s.GetRun(ctx, q[0]))(t)
	if r.Status != store.StatusRunning || r.Rev != 2 || r.EventSeq != 2 || r.ConcurrencyKey != "acme" || r.ConcurrencyLimit != 2 {
		t.Fatalf("admitted run %+v", r)
	}
	if evs := ok(s.Events(ctx, q[0], 1, 0))(t); len(evs) != 1 || evs[0].Type != store.EventRunStarted || evs[0].Seq != 2 {
		t.Fatalf("admission events %+v", evs)
	}
	wantLease(t, s, q[0], "A", 1, t0.Add(ttl))
	if got := ok(s.QueuePosition(ctx, q[1]))(t); got != 0 {
		t.Fatalf("position of the next run: %d", got)
	}
	if got := admit(t, s, one); len(got) != 0 {
		t.Fatalf("admission with the queue full: %v", got)
	}
	// Waiting and paused runs hold their slot; a finished one frees it.
	ok(s.Commit(ctx, store.Commit{RunID: active, Rev: 1, Run: store.RunUpdate{Status: store.StatusWaiting}}))(t)
	ok(s.Commit(ctx, store.Commit{RunID: q[0], Rev: 2, Run: store.RunUpdate{Status: store.StatusPaused}}))(t)
	if got := admit(t, s, one); len(got) != 0 {
		t.Fatalf("admission with waiting and paused runs: %v", got)
	}
	endRun(t, s, active, store.StatusSucceeded)
	// A canceled queued run leaves the queue.
	endRun(t, s, q[1], store.StatusCanceled)
	if got := admit(t, s, one); len(got) != 1 || got[0] != q[2] {
		t.Fatalf("admission after a finish and a cancel %v, want [%s]", got, q[2])
	}
	// Per-key queues are independent; All admits every queue.
	endRun(t, s, q[0], store.StatusFailed)
	endRun(t, s, q[2], store.StatusCanceled)
	got := admit(t, s, store.AdmitRequest{All: true, Owner: "B", Now: t0, TTL: ttl})
	want := map[string]bool{q[3]: true, q[4]: true, other: true}
	if len(got) != 3 || !want[got[0]] || !want[got[1]] || !want[got[2]] {
		t.Fatalf("admission of every queue %v, want %v", got, want)
	}
	if got := admit(t, s, store.AdmitRequest{All: true}); len(got) != 0 {
		t.Fatalf("nothing is queued, admitted %v", got)
	}
	if _, err := s.AdmitQueued(ctx, store.AdmitRequest{Owner: "A", Now: t0, TTL: ttl}); !errors.Is(err, store.ErrInvalidLease) {
		t.Fatalf("admission without a queue: %v", err)
	}
}

func testQueueRefusals(t *testing.T, s store.Store) {
	v := seedVersion(t, s)
	for name, r := range map[string]store.Run{
		"queued without a limit": {ID: "q-nolimit", Workflow: "wf", Version: v, Status: store.StatusQueued},
		"key too long":           {ID: "q-long", Workflow: "wf", Version: v, Status: store.StatusQueued, ConcurrencyLimit: 1, ConcurrencyKey: strings.Repeat("k", store.MaxConcurrencyKey+1)},
	} {
		if _, err := s.CreateRun(ctx, r, nil); !errors.Is(err, store.ErrInvalidRun) {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := s.GetRun(ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the run was recorded (%v)", name, err)
		}
	}
}

// testQueueConcurrent: admitters on two stores admit and finish the runs
// of a queue of limit 3 at once; an observer's snapshots never see more
// than 3 active runs, every run is admitted once, in creation order.
func testQueueConcurrent(t *testing.T, s1, s2 store.Store) {
	const runs, limit, admitters = 24, 3, 4
	order := make([]string, runs)
	for i := range order {
		order[i] = queued(t, s1, "wfc", "", limit, store.StatusQueued, time.Duration(i)*time.Millisecond)
	}
	pos := map[string]int{}
	for i, id := range order {
		pos[id] = i
	}
	var mu sync.Mutex
	var admitted []string
	seen := map[string]bool{}
	var wg sync.WaitGroup
	errs := make(chan error, admitters+1)
	done := make(chan struct{})
	for i := 0; i < admitters; i++ {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("admitter-%d", i)
			for {
				mu.Lock()
				n := len(admitted)
				mu.Unlock()
				if n == runs {
					return
				}
				ls, err := s.AdmitQueued(ctx, store.AdmitRequest{Workflow: "wfc", Owner: owner, Now: t0, TTL: ttl})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, l := range ls {
					if seen[l.RunID] {
						mu.Unlock()
						errs <- fmt.Errorf("run %s admitted twice", l.RunID)
						return
					}
					seen[l.RunID] = true
					admitted = append(admitted, l.RunID)
				}
				mu.Unlock()
				// FIFO: when a run is admitted, the run created before it
				// is no longer queued.
				for _, l := range ls {
					if p := pos[l.RunID]; p > 0 {
						r, err := s.GetRun(ctx, order[p-1])
						if err != nil || r.Status == store.StatusQueued {
							errs <- fmt.Errorf("run %d admitted while run %d is queued (%v)", p, p-1, err)
							return
						}
					}
				}
				for _, l := range ls {
					if _, err := s.Commit(ctx, store.Commit{RunID: l.RunID, Rev: 2, Lease: l.Ref(), Release: true,
						Run: store.RunUpdate{Status: store.StatusSucceeded, FinishedAt: t0}}); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	go func() {
		defer close(errs)
		for {
			select {
			case <-done:
				return
			default:
			}
			rs, _, err := s2.ListRuns(ctx, store.RunFilter{Workflow: "wfc", Status: store.ActiveStatuses, Limit: 100})
			if err != nil {
				errs <- err
				return
			}
			if len(rs) > limit {
				errs <- fmt.Errorf("%d runs active at once, limit %d", len(rs), limit)
				return
			}
		}
	}()
	wg.Wait()
	close(done)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(admitted) != runs {
		t.Fatalf("admitted %d of %d", len(admitted), runs)
	}
}

package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// testConcurrentCommitsIsolateFailures: commits of many runs at once, one of
// them stale, one closing a closed pause and one for a run that does not
// exist. Each bad one fails with its own error and writes nothing; every
// other one is written in full, whatever a backend does to share work
// between concurrent commits.
func testConcurrentCommitsIsolateFailures(t *testing.T, s store.Store) {
	const n = 24
	runs := make([]store.Run, n)
	for i := range runs {
		runs[i] = newRun(t, s)
	}
	// Run 1's pause is already answered; run 0 is committed with a stale
	// revision; run 2's commit names a run that does not exist.
	openPause(t, s, runs[1], 1)
	runs[1] = ok(s.GetRun(ctx, runs[1].ID))(t)
	ok(s.Commit(ctx, store.Commit{RunID: runs[1].ID, Rev: runs[1].Rev,
		ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(`1`)}}))(t)
	runs[1] = ok(s.GetRun(ctx, runs[1].ID))(t)

	commitOf := func(i int) store.Commit {
		c := store.Commit{RunID: runs[i].ID, Rev: runs[i].Rev,
			Run:    store.RunUpdate{State: json.RawMessage(fmt.Sprintf(`{"cursor":%d}`, i))},
			Steps:  []store.Step{{Key: "a", Visit: 1, StepID: "a", Status: "succeeded", Attempts: 1, Output: json.RawMessage(fmt.Sprint(i))}},
			Events: []store.Event{{Type: "step.started", StepID: "a"}, {Type: "step.succeeded", StepID: "a"}}}
		switch i {
		case 0:
			c.Rev--
		case 1:
			c.ClosePause = &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(`2`)}
			c.Answer = &store.Answer{PauseSeq: 1, StepKey: "q", Value: json.RawMessage(`2`)}
		case 2:
			c.RunID = "no-such-run"
		}
		return c
	}
	errs := make([]error, n)
	results := make([]store.CommitResult, n)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range n {
		wg.Go(func() {
			start.Wait()
			results[i], errs[i] = s.Commit(ctx, commitOf(i))
		})
	}
	start.Done()
	wg.Wait()

	if !errors.Is(errs[0], store.ErrConflict) {
		t.Errorf("stale commit: %v, want a conflict", errs[0])
	}
	if !errors.Is(errs[1], store.ErrPauseClosed) {
		t.Errorf("commit closing a closed pause: %v, want ErrPauseClosed", errs[1])
	}
	if !errors.Is(errs[2], store.ErrNotFound) {
		t.Errorf("commit of a missing run: %v, want not found", errs[2])
	}
	for i := range n {
		got := ok(s.GetRun(ctx, runs[i].ID))(t)
		steps := ok(s.Steps(ctx, runs[i].ID))(t)
		events := ok(s.Events(ctx, runs[i].ID, 0, 0))(t)
		if i < 3 {
			if got.Rev != runs[i].Rev || got.EventSeq != runs[i].EventSeq || len(steps) != 0 || string(got.State) != string(runs[i].State) {
				t.Errorf("run %d: a failed commit changed it: %+v, steps %+v", i, got, steps)
			}
			continue
		}
		if errs[i] != nil {
			t.Errorf("run %d: %v", i, errs[i])
			continue
		}
		if results[i].Rev != runs[i].Rev+1 || got.Rev != results[i].Rev {
			t.Errorf("run %d: result rev %d, stored %d, want %d", i, results[i].Rev, got.Rev, runs[i].Rev+1)
		}
		if want := fmt.Sprintf(`{"cursor":%d}`, i); string(got.State) != want {
			t.Errorf("run %d: state %s, want %s", i, got.State, want)
		}
		if len(steps) != 1 || string(steps[0].Output) != fmt.Sprint(i) {
			t.Errorf("run %d: steps %+v", i, steps)
		}
		if len(events) != 3 || len(results[i].EventSeqs) != 2 || results[i].EventSeqs[0] != 2 || results[i].EventSeqs[1] != 3 {
			t.Errorf("run %d: %d events, seqs %v", i, len(events), results[i].EventSeqs)
		}
	}
	if answers := ok(s.Answers(ctx, runs[1].ID))(t); len(answers) != 0 {
		t.Errorf("the refused answer was recorded: %+v", answers)
	}
}

// testConcurrentCommitStress: writers commit to a few shared runs at once,
// each with the revision it last read, so many commits conflict. Whatever
// interleaving happens, every run's revision, event sequence and steps
// account for exactly the commits that were acknowledged.
func testConcurrentCommitStress(t *testing.T, s store.Store) {
	const runsN, writers, perWriter = 4, 16, 25
	runs := make([]store.Run, runsN)
	for i := range runs {
		runs[i] = newRun(t, s)
	}
	var mu sync.Mutex
	acked := make([]int, runsN)           // acknowledged commits per run
	revs := make([]map[int64]bool, runsN) // revisions handed out
	for i := range revs {
		revs[i] = map[int64]bool{}
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for k := range perWriter {
				i := rng.IntN(runsN)
				cur, err := s.GetRun(ctx, runs[i].ID)
				if err != nil {
					t.Error(err)
					return
				}
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
				}
				key := fmt.Sprintf("w%d-%d", w, k)
				res, err := s.Commit(ctx, store.Commit{RunID: cur.ID, Rev: cur.Rev,
					Steps:  []store.Step{{Key: key, Visit: 1, StepID: key, Status: "succeeded", Attempts: 1}},
					Events: []store.Event{{Type: "step.succeeded", StepID: key}}})
				switch {
				case err == nil:
					mu.Lock()
					acked[i]++
					if revs[i][res.Rev] {
						t.Errorf("run %d: revision %d acknowledged twice", i, res.Rev)
					}
					revs[i][res.Rev] = true
					mu.Unlock()
				case errors.Is(err, store.ErrConflict):
				default:
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for i := range runs {
		got := ok(s.GetRun(ctx, runs[i].ID))(t)
		steps := ok(s.Steps(ctx, runs[i].ID))(t)
		events := ok(s.Events(ctx, runs[i].ID, 0, 0))(t)
		if got.Rev != int64(1+acked[i]) || got.EventSeq != int64(1+acked[i]) || len(steps) != acked[i] || len(events) != 1+acked[i] {
			t.Errorf("run %d: %d acknowledged commits, but rev %d, event seq %d, %d steps, %d events",
				i, acked[i], got.Rev, got.EventSeq, len(steps), len(events))
		}
		total += acked[i]
	}
	if total == 0 {
		t.Error("no commit was acknowledged")
	}
}

// testCommitEventSeqHint: Commit.EventSeq is a hint. Right, wrong (too low,
// too high) or absent, the events get the run's next numbers; a stale
// revision is a conflict whatever the hint says.
func testCommitEventSeqHint(t *testing.T, s store.Store) {
	r := newRun(t, s) // rev 1, one event
	step := func(rev, hint int64) (store.CommitResult, error) {
		return s.Commit(ctx, store.Commit{RunID: r.ID, Rev: rev, EventSeq: hint,
			Run:    store.RunUpdate{State: json.RawMessage(fmt.Sprintf(`{"cursor":%d}`, rev))},
			Events: []store.Event{{Type: "a"}, {Type: "b"}}})
	}
	for i, hint := range []int64{1, 1, 99, 0, 5} { // right, too low, too high, none, right
		rev := int64(i + 1)
		res, err := step(rev, hint)
		if err != nil {
			t.Fatalf("commit %d (hint %d): %v", i, hint, err)
		}
		if want := []int64{2 * rev, 2*rev + 1}; res.Rev != rev+1 || len(res.EventSeqs) != 2 || res.EventSeqs[0] != want[0] || res.EventSeqs[1] != want[1] {
			t.Fatalf("commit %d (hint %d): %+v, want rev %d and events %v", i, hint, res, rev+1, want)
		}
	}
	if _, err := step(3, 11); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale revision with a hint: %v, want a conflict", err)
	}
	got := ok(s.GetRun(ctx, r.ID))(t)
	evs := ok(s.Events(ctx, r.ID, 0, 0))(t)
	if got.Rev != 6 || got.EventSeq != 11 || len(evs) != 11 || string(got.State) != `{"cursor":5}` {
		t.Fatalf("run after the commits: rev %d, event seq %d, %d events, state %s", got.Rev, got.EventSeq, len(evs), got.State)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
}

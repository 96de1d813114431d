package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// queued waits until a leader writes and n writes wait behind it.
func queued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.group.mu.Lock()
		got, busy := len(s.group.queue), s.group.busy
		s.group.mu.Unlock()
		if busy && got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommitSharesOneTransaction holds the writer so that commits
// queue up, then lets them go: all of them are written in one transaction,
// a conflicting one, one closing a closed pause and one whose caller gave
// up are refused alone, and everything acknowledged is there after the
// store is reopened.
func TestGroupCommitSharesOneTransaction(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "group.db")
	s, err := Open(ctx, path, Options{Durability: Full})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutVersion(ctx, storeVersion()); err != nil {
		t.Fatal(err)
	}
	const n = 10
	for i := range n + 1 {
		if _, err := s.CreateRun(ctx, storeRun(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Run 1 waits on a pause that is already answered.
	if _, err := s.Commit(ctx, store.Commit{RunID: "run-001", Rev: 1, OpenPause: &store.Pause{Seq: 1, StepKey: "q", Visit: 1, Kind: "question", Request: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, store.Commit{RunID: "run-001", Rev: 2, ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered}}); err != nil {
		t.Fatal(err)
	}

	// The test holds the one writer connection: the first commit leads and
	// waits for it with a batch of one, the others queue behind it.
	hold, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c0, w0 := s.Stats().Commits, s.Stats().Writes
	errs := make([]error, n+1)
	var wg sync.WaitGroup
	commit := func(i int, c store.Commit, ctx context.Context) {
		wg.Go(func() { _, errs[i] = s.Commit(ctx, c) })
	}
	commit(n, stepCommit("run-010", 1, 0), ctx)
	queued(t, s, 0) // the leader took its batch and waits for the writer
	gaveUp, cancel := context.WithCancel(ctx)
	for i := range n {
		rev := int64(1)
		c := stepCommit(fmt.Sprintf("run-%03d", i), rev, 0)
		switch i {
		case 0:
			c.Rev = 7 // stale
		case 1:
			c.Rev = 3
			c.ClosePause = &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(`2`)}
		}
		ctx := ctx
		if i == 2 {
			ctx = gaveUp
		}
		commit(i, c, ctx)
		queued(t, s, i+1)
	}
	cancel()
	if err := hold.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	if !errors.Is(errs[0], store.ErrConflict) || !errors.Is(errs[1], store.ErrPauseClosed) || !errors.Is(errs[2], context.Canceled) {
		t.Fatalf("refused commits: %v / %v / %v", errs[0], errs[1], errs[2])
	}
	for i := 3; i <= n; i++ {
		if errs[i] != nil {
			t.Fatalf("commit %d: %v", i, errs[i])
		}
	}
	if c, w := s.Stats().Commits-c0, s.Stats().Writes-w0; c != 2 || w != n-2 {
		t.Errorf("%d transactions for %d writes, want 2 for %d", c, w, n-2)
	}
	s.Close()

	s, err = Open(ctx, path, Options{Durability: Full})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range n + 1 {
		r, err := s.GetRun(ctx, fmt.Sprintf("run-%03d", i))
		if err != nil {
			t.Fatal(err)
		}
		steps, err := s.Steps(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case i == 1:
			if r.Rev != 3 || len(steps) != 0 {
				t.Errorf("run 1: rev %d, %d steps: the refused commit was written", r.Rev, len(steps))
			}
		case i < 3:
			if r.Rev != 1 || len(steps) != 0 {
				t.Errorf("run %d: rev %d, %d steps: the refused commit was written", i, r.Rev, len(steps))
			}
		default:
			if r.Rev != 2 || len(steps) != 1 || r.EventSeq != 2 {
				t.Errorf("run %d: rev %d, %d steps, event seq %d after an acknowledged commit", i, r.Rev, len(steps), r.EventSeq)
			}
		}
	}
}

package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// TestStatsCountsCommittedTransactions: Stats().Commits goes up by one for
// each write transaction that committed and not for one that failed, which
// is what the benchmark's commits-per-step figure relies on.
func TestStatsCountsCommittedTransactions(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "stats.db"), Options{Durability: Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := func(n int64, after string) {
		t.Helper()
		if got := s.Stats().Commits; got != n {
			t.Fatalf("after %s: %d commits, want %d", after, got, n)
		}
	}
	want(0, "open")
	if err := s.PutVersion(ctx, store.Version{Version: "v1", Name: "n", Definition: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	want(1, "PutVersion")
	if _, err := s.CreateRun(ctx, store.Run{ID: "r1", Workflow: "n", Version: "v1", Status: store.StatusRunning}, []store.Event{{Type: "run.created"}}); err != nil {
		t.Fatal(err)
	}
	want(2, "CreateRun")
	if _, err := s.Commit(ctx, store.Commit{RunID: "r1", Rev: 1, Events: []store.Event{{Type: "step.completed"}}}); err != nil {
		t.Fatal(err)
	}
	want(3, "Commit")
	if _, err := s.Commit(ctx, store.Commit{RunID: "r1", Rev: 1}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale commit: %v, want a conflict", err)
	}
	want(3, "a commit that was rolled back")
	if _, err := s.GetRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	want(3, "a read")
}

package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestCheckpointsOffTheCommitPath: the writer does not checkpoint inside a
// commit; the store's checkpointer does, after commits and only then, and
// everything committed is there after a reopen.
func TestCheckpointsOffTheCommitPath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ckpt.db")
	s, err := Open(ctx, path, Options{Durability: Normal})
	if err != nil {
		t.Fatal(err)
	}
	var auto int
	if err := s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("writer's automatic checkpoint: %d (%v), want 0", auto, err)
	}
	if err := s.PutVersion(ctx, storeVersion()); err != nil {
		t.Fatal(err)
	}
	const runs = 50
	for i := range runs {
		if _, err := s.CreateRun(ctx, storeRun(i), nil); err != nil {
			t.Fatal(err)
		}
		for step := range 5 {
			if _, err := s.Commit(ctx, stepCommit(fmt.Sprintf("run-%03d", i), int64(step+1), step)); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().Checkpoints == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint after 300 commits")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Idle: nothing committed, nothing to checkpoint.
	time.Sleep(3 * checkpointEvery)
	n := s.Stats().Checkpoints
	time.Sleep(5 * checkpointEvery)
	if got := s.Stats().Checkpoints; got != n {
		t.Errorf("%d checkpoints while idle", got-n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{Durability: Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range runs {
		id := fmt.Sprintf("run-%03d", i)
		r, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		steps, err := s.Steps(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rev != 6 || len(steps) != 5 {
			t.Errorf("%s: rev %d, %d steps after reopen", id, r.Rev, len(steps))
		}
	}
}

package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// Reads by key run detached from their context's cancellation once it is
// found live (byKey), so a live cancellable context reads as before and a
// context already cancelled still fails the read with its error.
func TestReadsByKeyAndCancelledContexts(t *testing.T) {
	bg := context.Background()
	s, err := Open(bg, filepath.Join(t.TempDir(), "x.db"), Options{Durability: Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutVersion(bg, storeVersion()); err != nil {
		t.Fatal(err)
	}
	r := storeRun(0)
	if _, err := s.CreateRun(bg, r, []store.Event{{Type: "run.created"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(bg, stepCommit(r.ID, 1, 0)); err != nil {
		t.Fatal(err)
	}

	live, cancel := context.WithCancel(bg)
	defer cancel()
	if got, err := s.GetRun(live, r.ID); err != nil || got.ID != r.ID || got.Rev != 2 {
		t.Fatalf("get run: %+v %v", got, err)
	}
	if steps, err := s.Steps(live, r.ID); err != nil || len(steps) == 0 {
		t.Fatalf("steps: %v %v", steps, err)
	}
	if _, err := s.OpenPauses(live, r.ID); err != nil {
		t.Fatalf("open pauses: %v", err)
	}
	if _, err := s.GetPause(live, r.ID, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a pause that does not exist: %v", err)
	}

	cancel()
	if _, err := s.GetRun(live, r.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("get run with a cancelled context: %v", err)
	}
	if _, err := s.Steps(live, r.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("steps with a cancelled context: %v", err)
	}
	if _, err := s.OpenPauses(live, r.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("open pauses with a cancelled context: %v", err)
	}
	if _, err := s.GetPause(live, r.ID, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("get pause with a cancelled context: %v", err)
	}
}

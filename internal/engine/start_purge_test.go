package engine

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/workflow"
)

// purgeBeforeCreate purges every finished run just before the next
// CreateRun once armed: a retention pass landing between Start's
// PutVersion and CreateRun, which drops the version no run refers to.
type purgeBeforeCreate struct {
	store.Store
	armed atomic.Bool
}

func (p *purgeBeforeCreate) CreateRun(ctx context.Context, r store.Run, events []store.Event, steps ...store.Step) (store.CommitResult, error) {
	if p.armed.CompareAndSwap(true, false) {
		if _, err := p.Store.PurgeRuns(ctx, store.PurgeFilter{}); err != nil {
			return store.CommitResult{}, err
		}
	}
	return p.Store.CreateRun(ctx, r, events, steps...)
}

func TestStartSurvivesAPurgeOfItsVersion(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "test.db"), sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ps := &purgeBeforeCreate{Store: s}
	eng, err := New(Config{Store: ps, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	res := workflow.Check([]byte("version: 1\nname: quick\nsteps:\n  - {id: a, uses: noop}\n"), workflow.Options{})
	def, _ := workflow.Canonical(res.Source.Value)
	req := StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def}
	run := func() string {
		t.Helper()
		id, err := eng.Start(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if st, err := eng.Wait(ctx, id); err != nil || st != store.StatusSucceeded {
			t.Fatalf("run %s: %s %v", id, st, err)
		}
		return id
	}
	first := run()
	ps.armed.Store(true)
	second := run()
	if _, err := s.GetRun(ctx, first); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the first run was not purged: %v", err)
	}
	if ps.armed.Load() {
		t.Fatal("the purge did not happen")
	}
	if _, err := s.GetVersion(ctx, res.Version); err != nil {
		t.Fatalf("the second run %s has no version: %v", second, err)
	}
}

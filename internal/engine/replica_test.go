package engine

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/postgres"
	"stepwise.dev/stepwise/internal/store/postgres/pgtest"
)

// openPGReplica opens a store and an engine on a PostgreSQL database: one
// replica.
func openPGReplica(t *testing.T, url string, reg *action.Registry) (*Engine, *postgres.Store) {
	t.Helper()
	st, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := New(Config{Store: st, Key: testKey, Actions: reg, ShutdownGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(context.Background()); _ = st.Close() })
	if _, err := eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return eng, st
}

// Two replicas on one PostgreSQL database: a run started and driven on A
// is watched through B (its events reach B's subscribers as they are
// recorded, without polling), answered through B, and B's Wait sees it
// finish; every effect runs once.
func TestReplicasShareRunsOnPostgres(t *testing.T) {
	url := pgtest.Schema(t)
	l := newLedger()
	reg := ledgerRegistry(l)
	a, _ := openPGReplica(t, url, reg)
	b, bst := openPGReplica(t, url, reg)
	events, stop := b.Subscribe("")
	defer stop()
	id := startDoc(t, a, `version: 1
name: replicas
steps:
  - id: before
    uses: ledger
  - id: ask
    ask: {prompt: "Go on?", type: boolean}
  - id: after
    uses: ledger
`)
	// B learns of A's events through the database's notices.
	deadline := time.After(10 * time.Second)
	for paused := false; !paused; {
		select {
		case ev := <-events:
			if ev.RunID == id && ev.Type == EventRunPaused {
				paused = true
			}
		case <-deadline:
			t.Fatal("B's subscriber never saw the run pause on A")
		}
	}
	ps, err := b.Pauses(context.Background(), id)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pauses through B: %v %v", ps, err)
	}
	if _, err := b.Continue(context.Background(), ps[0].Token, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := a.Wait(ctx, id)
	if err != nil || st != store.StatusSucceeded {
		t.Fatalf("A's wait: %s %v", st, err)
	}
	for _, step := range []string{"before", "after"} {
		if n := l.count(id, step); n != 1 {
			t.Errorf("step %s executed %d times", step, n)
		}
	}
	if steps, err := bst.Steps(context.Background(), id); err != nil || len(steps) != 3 {
		t.Fatalf("steps %v %v", steps, err)
	}
}

// A passive subscriber (the MCP server's resource pump) gets the events
// of other replicas' runs only for the runs its interest names: the rest
// are not read from the store for it.
func TestPassiveSubscriberGetsOnlyItsRuns(t *testing.T) {
	url := pgtest.Schema(t)
	l := newLedger()
	reg := ledgerRegistry(l)
	a, _ := openPGReplica(t, url, reg)
	b, _ := openPGReplica(t, url, reg)
	const doc = "version: 1\nname: one\nsteps:\n  - id: effect\n    uses: ledger\n  - id: ask\n    ask: {prompt: \"Go on?\", type: boolean}\n"
	var wanted atomic.Value
	wanted.Store("")
	events, stop := b.SubscribeWanting(1024, func(runID string) bool { return runID == wanted.Load().(string) })
	defer stop()
	other := startDoc(t, a, doc)
	mine := startDoc(t, a, strings.Replace(doc, "name: one", "name: two", 1))
	wanted.Store(mine)
	_ = other
	// Both pause on A; B hears of the one it wants, not of the other.
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.RunID == other {
				t.Fatalf("event of a run nobody here wants: %+v", ev)
			}
			if ev.RunID == mine && ev.Type == EventRunPaused {
				return
			}
		case <-deadline:
			t.Fatal("the wanted run's events never reached B")
		}
	}
}

// The database drops every connection of both replicas mid-run (a
// failover, a restart): each driver reads its run again once the database
// answers and goes on from what was recorded — without waiting for its
// lease to expire (an hour here) — and every run finishes with each step
// recorded once.
func TestReplicasSurviveLostConnections(t *testing.T) {
	url := pgtest.Schema(t) + "&application_name=stepwise_lost_conns"
	l := newLedger()
	l.hold = func(ctx context.Context, _ string) error {
		select {
		case <-time.After(20 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	reg := ledgerRegistry(l)
	open := func() (*Engine, *postgres.Store) {
		st, err := postgres.Open(context.Background(), url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		eng, err := New(Config{Store: st, Key: testKey, Actions: reg, LeaseTTL: time.Hour, ShutdownGrace: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = eng.Close(context.Background()); _ = st.Close() })
		if _, err := eng.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
		return eng, st
	}
	a, st := open()
	b, _ := open()
	const doc = "version: 1\nname: steady\nsteps:\n  - id: s1\n    uses: ledger\n  - id: s2\n    uses: ledger\n  - id: s3\n    uses: ledger\n  - id: s4\n    uses: ledger\n"
	ids := make([]string, 20)
	for i := range ids {
		eng := a
		if i%2 == 1 {
			eng = b
		}
		ids[i] = startDoc(t, eng, doc)
	}
	time.Sleep(30 * time.Millisecond)
	admin, err := pgx.Connect(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var killed int
	if err := admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'stepwise_lost_conns'`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	t.Logf("terminated %d connections", killed)
	for _, id := range ids {
		waitFor(t, func() bool {
			r, err := st.GetRun(context.Background(), id)
			return err == nil && r.Status == store.StatusSucceeded
		})
		steps, err := st.Steps(context.Background(), id)
		if err != nil || len(steps) != 4 {
			t.Fatalf("run %s: steps %v %v", id, steps, err)
		}
	}
	repeats := 0
	for _, id := range ids {
		for _, s := range []string{"s1", "s2", "s3", "s4"} {
			if n := l.count(id, s); n != 1 {
				repeats += n - 1
			}
		}
	}
	t.Logf("%d effects repeated (steps in flight when the connections dropped)", repeats)
	if repeats > len(ids) {
		t.Errorf("%d effects repeated, more than one per run", repeats)
	}
}

// A run canceled through another replica stops at once where it is
// driven: its step in flight is interrupted, not left to run to its end.
func TestCancelThroughAnotherReplicaInterrupts(t *testing.T) {
	url := pgtest.Schema(t)
	l := newLedger()
	interrupted := make(chan struct{})
	l.hold = func(ctx context.Context, _ string) error {
		select {
		case <-ctx.Done():
			close(interrupted)
			return ctx.Err()
		case <-time.After(time.Minute):
			return nil
		}
	}
	reg := ledgerRegistry(l)
	a, _ := openPGReplica(t, url, reg)
	b, bst := openPGReplica(t, url, reg)
	id := startDoc(t, a, "version: 1\nname: long\nsteps:\n  - id: effect\n    uses: ledger\n")
	waitFor(t, func() bool { return l.count(id, "effect") == 1 })
	if err := b.Cancel(context.Background(), id, "enough", false); err != nil {
		t.Fatal(err)
	}
	select {
	case <-interrupted:
	case <-time.After(10 * time.Second):
		t.Fatal("the step in flight on A ran on after the run was canceled through B")
	}
	if r, err := bst.GetRun(context.Background(), id); err != nil || r.Status != store.StatusCanceled {
		t.Fatalf("run %+v %v", r, err)
	}
}

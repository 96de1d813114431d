package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/postgres/pgtest"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/storetest"
)

// The tests run against the server STEPWISE_TEST_DATABASE_URL names (.ci/run
// sets it, starting the machine's PostgreSQL); each store gets a schema of
// its own, dropped when its test ends, so tests are isolated and may run in
// parallel.

// openFresh opens a store on a fresh schema, closed when the test ends.
func openFresh(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.Schema(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pgtest.URL(t)
	t.Parallel()
	for _, d := range []string{Full, Normal} {
		t.Run(d, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				s, err := Open(context.Background(), pgtest.Schema(t), Options{Durability: d})
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

// TestConformanceShared races lease claimants on two stores (two pools)
// open on one schema, as two replicas would.
func TestConformanceShared(t *testing.T) {
	pgtest.URL(t)
	t.Parallel()
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		u := pgtest.Schema(t)
		a, err := Open(context.Background(), u, Options{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Open(context.Background(), u, Options{})
		if err != nil {
			a.Close()
			t.Fatal(err)
		}
		return a, b
	})
}

// TestConformanceSmallPurgeBatches runs the suite with purges of two runs
// per transaction, so that batching is exercised.
func TestConformanceSmallPurgeBatches(t *testing.T) {
	pgtest.URL(t)
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := Open(context.Background(), pgtest.Schema(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.purgeBatch = 2
		return s
	})
}

func TestOpenRejectsUnknownDurability(t *testing.T) {
	if _, err := Open(context.Background(), "postgres://u@127.0.0.1:1/x", Options{Durability: "fast"}); err == nil {
		t.Fatal("want an error")
	}
}

// TestOpenErrorsHideThePassword: a bad URL or an unreachable server is a
// one-line error that names the URL without its password.
func TestOpenErrorsHideThePassword(t *testing.T) {
	for _, u := range []string{
		"postgres://alice:s3cr3tpw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgres://alice:s3cr3tpw@127.0.0.1:1/db?sslmode=bogus",
		"postgres://alice@127.0.0.1:1/db?password=s3cr3tpw&sslmode=disable&connect_timeout=2",
		"postgres://alice:s3cr3tpw@[::1/db",
	} {
		_, err := Open(context.Background(), u, Options{})
		if err == nil {
			t.Fatalf("%s: want an error", u)
		}
		msg := err.Error()
		if strings.Contains(msg, "s3cr3tpw") || strings.Contains(msg, "\n") {
			t.Errorf("%q", msg)
		}
		if !strings.Contains(msg, "open store") {
			t.Errorf("%q does not say what failed", msg)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable": "postgres://u:xxxxx@h:5432/db?sslmode=disable",
		"postgres://u@h/db?password=pw":             "postgres://u@h/db?password=xxxxx",
		"postgresql://h/db":                         "postgresql://h/db",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if !IsURL("POSTGRES://x") || !IsURL("postgresql://x") || IsURL("/tmp/x.db") {
		t.Error("IsURL")
	}
}

// TestConcurrentOpenMigratesOnce: several processes (here: stores) may
// open a new database at once; all must open it, and migrate it once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	u := pgtest.Schema(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), u, Options{MaxConns: 2})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := openFresh(t, Options{})
	_ = s
	conn, err := pgx.Connect(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if want := countMigrations(t); n != want {
		t.Errorf("%d migrations recorded, want %d", n, want)
	}
}

func countMigrations(t *testing.T) int {
	entries, err := migrations.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestGroupCommitSharesTransactions: concurrent commits of different runs
// share transactions.
func TestGroupCommitSharesTransactions(t *testing.T) {
	s := openFresh(t, Options{})
	ctx := context.Background()
	if err := s.PutVersion(ctx, store.Version{Version: "v", Name: "wf", Definition: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	const runs, steps = 16, 20
	for i := range runs {
		if _, err := s.CreateRun(ctx, store.Run{ID: "r" + string(rune('a'+i)), Workflow: "wf", Version: "v", Status: store.StatusRunning}, nil); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Stats()
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "r" + string(rune('a'+i))
			for rev := int64(1); rev <= steps; rev++ {
				if _, err := s.Commit(ctx, store.Commit{RunID: id, Rev: rev, Events: []store.Event{{Type: "x"}}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	after := s.Stats()
	writes, commits := after.Writes-before.Writes, after.Commits-before.Commits
	if writes != runs*steps {
		t.Fatalf("%d writes, want %d", writes, runs*steps)
	}
	t.Logf("%d writes in %d transactions", writes, commits)
	if commits >= writes {
		t.Errorf("no transaction was shared: %d writes in %d transactions", writes, commits)
	}
}

// TestSharedBatchIsolatesServerErrors: writes the server refuses with an
// error (a duplicate run, a run of an unknown version, a pause opened
// twice) abort PostgreSQL's transaction up to their savepoint only; the
// other writes of the same shared transaction are written.
func TestSharedBatchIsolatesServerErrors(t *testing.T) {
	s := openFresh(t, Options{})
	s.lanes = make([]group, 1) // every write in one lane: one batch
	ctx := context.Background()
	if err := s.PutVersion(ctx, store.Version{Version: "v", Name: "wf", Definition: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	run := func(id string) store.Run {
		return store.Run{ID: id, Workflow: "wf", Version: "v", Status: store.StatusRunning}
	}
	const good = 8
	for i := range good + 1 {
		if _, err := s.CreateRun(ctx, run(fmt.Sprint("r", i)), []store.Event{{Type: "run.started"}}); err != nil {
			t.Fatal(err)
		}
	}
	pause := &store.Pause{Seq: 1, StepKey: "q", Visit: 1, Kind: "question", Request: []byte(`{}`)}
	if _, err := s.Commit(ctx, store.Commit{RunID: "r0", Rev: 1, OpenPause: pause}); err != nil {
		t.Fatal(err)
	}

	// Hold the writer so that every write below queues into one batch.
	hold, held := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.groupTx(ctx, "", func(context.Context, dbtx) error { close(held); <-hold; return nil })
	}()
	<-held
	before := s.Stats()
	type outcome struct {
		name string
		err  error
	}
	out := make(chan outcome, good+4)
	var wg sync.WaitGroup
	write := func(name string, fn func() error) {
		wg.Add(1)
		go func() { defer wg.Done(); out <- outcome{name, fn()} }()
	}
	write("duplicate run", func() error { _, err := s.CreateRun(ctx, run("r1"), nil); return err })
	write("unknown version", func() error {
		r := run("x")
		r.Version = "nope"
		_, err := s.CreateRun(ctx, r, nil)
		return err
	})
	write("pause twice", func() error {
		_, err := s.Commit(ctx, store.Commit{RunID: "r0", Rev: 2, EventSeq: 1, OpenPause: pause, Events: []store.Event{{Type: "x"}}})
		return err
	})
	write("new run", func() error { _, err := s.CreateRun(ctx, run("new"), []store.Event{{Type: "run.started"}}); return err })
	for i := 1; i <= good; i++ {
		id := fmt.Sprint("r", i)
		write(id, func() error {
			// Every other one with a wrong event sequence: the commit in
			// one round trip is undone and done the other way.
			hint := int64(1 + 5*(i%2))
			_, err := s.Commit(ctx, store.Commit{RunID: id, Rev: 1, EventSeq: hint, Steps: []store.Step{{Key: "a", Visit: 1, StepID: "a", Status: "succeeded", Attempts: 1}},
				Events: []store.Event{{Type: "step.succeeded", StepID: "a"}}})
			return err
		})
	}
	for {
		s.lanes[0].mu.Lock()
		n := len(s.lanes[0].queue)
		s.lanes[0].mu.Unlock()
		if n == good+4 { // the holder's op left the queue when it began
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	close(out)
	for o := range out {
		var want error
		switch o.name {
		case "duplicate run", "pause twice":
			want = store.ErrExists
		case "unknown version":
			want = store.ErrNotFound
		}
		if want == nil && o.err != nil || want != nil && !errors.Is(o.err, want) {
			t.Errorf("%s: %v, want %v", o.name, o.err, want)
		}
	}
	after := s.Stats()
	// The holder sent no statement: no transaction of its own (runLone).
	if w, c := after.Writes-before.Writes, after.Commits-before.Commits; w != good+1 || c != 1 {
		t.Errorf("%d writes in %d transactions, want %d in 1 (the batch)", w, c, good+1)
	}
	for i := 1; i <= good; i++ {
		id := fmt.Sprint("r", i)
		if st, err := s.Steps(ctx, id); err != nil || len(st) != 1 {
			t.Errorf("%s: steps %v %v", id, st, err)
		}
		if evs, err := s.Events(ctx, id, 0, 0); err != nil || len(evs) != 2 || evs[1].Seq != 2 || evs[1].Type != "step.succeeded" {
			t.Errorf("%s: events %+v %v", id, evs, err)
		}
	}
	if r, err := s.GetRun(ctx, "r0"); err != nil || r.Rev != 2 || r.EventSeq != 1 {
		t.Errorf("r0 after a refused pause: %+v %v", r, err)
	}
	if _, err := s.GetRun(ctx, "new"); err != nil {
		t.Error(err)
	}
}

// TestLoneCommitInOneTrip: a lone commit sent whole with its COMMIT
// (commitOneTrip) that finds the run elsewhere — another event sequence,
// another revision, another lease — writes nothing of that attempt: with
// a wrong sequence hint it is done the usual way (events numbered from the
// run's real sequence), with a stale revision or lease it is refused, the
// run unchanged.
func TestLoneCommitInOneTrip(t *testing.T) {
	s := openFresh(t, Options{})
	ctx := context.Background()
	if err := s.PutVersion(ctx, store.Version{Version: "v", Name: "wf", Definition: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	owner := "A"
	r := store.Run{ID: "r", Workflow: "wf", Version: "v", Status: store.StatusRunning, Lease: &store.Lease{Owner: owner, Expires: time.Now().Add(time.Hour)}}
	res, err := s.CreateRun(ctx, r, []store.Event{{Type: "run.started"}})
	if err != nil {
		t.Fatal(err)
	}
	ref := res.Lease.Ref()
	step := func(key string) []store.Step {
		return []store.Step{{Key: key, Visit: 1, StepID: key, Status: "succeeded", Attempts: 1}}
	}
	// Right hint: one trip.
	if _, err := s.Commit(ctx, store.Commit{RunID: "r", Rev: 1, EventSeq: 1, Lease: ref, Steps: step("a"), Events: []store.Event{{Type: "a"}}}); err != nil {
		t.Fatal(err)
	}
	// Wrong hint (the run's sequence is 2, not 7): rolled back, then done.
	res, err = s.Commit(ctx, store.Commit{RunID: "r", Rev: 2, EventSeq: 7, Lease: ref, Steps: step("b"), Events: []store.Event{{Type: "b"}}})
	if err != nil || len(res.EventSeqs) != 1 || res.EventSeqs[0] != 3 {
		t.Fatalf("commit with a wrong hint: %+v %v", res, err)
	}
	before, err := s.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, store.Commit{RunID: "r", Rev: 2, EventSeq: 3, Lease: ref, Steps: step("c"), Events: []store.Event{{Type: "c"}}}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	stale := *ref
	stale.Epoch++
	if _, err := s.Commit(ctx, store.Commit{RunID: "r", Rev: 3, EventSeq: 3, Lease: &stale, Steps: step("c"), Events: []store.Event{{Type: "c"}}}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale lease: %v", err)
	}
	after, err := s.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := s.Steps(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	events, err := s.Events(ctx, "r", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.Rev != before.Rev || after.EventSeq != 3 || len(steps) != 2 || len(events) != 3 {
		t.Fatalf("refused commits wrote: run %+v, %d steps, %d events", after, len(steps), len(events))
	}
}

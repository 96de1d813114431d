package engine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
)

// ledger is an action with an effect that records every execution, by
// run and step, across all the engines of a test.
type ledger struct {
	mu    sync.Mutex
	execs map[string]int
	// hold, when set, is called with each execution before it returns.
	hold func(ctx context.Context, key string) error
}

func newLedger() *ledger { return &ledger{execs: map[string]int{}} }

func (l *ledger) Name() string        { return "ledger" }
func (l *ledger) Description() string { return "" }
func (l *ledger) Safety() string      { return action.Mutating }
func (l *ledger) Run(ctx context.Context, call action.Call) (any, error) {
	l.mu.Lock()
	l.execs[call.IdempotencyKey]++ // run/step
	n := l.execs[call.IdempotencyKey]
	l.mu.Unlock()
	if l.hold != nil {
		if err := l.hold(ctx, call.IdempotencyKey); err != nil {
			return nil, err
		}
	}
	return map[string]any{"execution": n}, nil
}

func (l *ledger) count(runID, stepID string) int { return l.countKey(runID + "/" + stepID) }

func (l *ledger) countKey(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.execs[key]
}

// leaseProc is one process of a lease test: its own store on the shared
// database file, and an engine.
type leaseProc struct {
	eng *Engine
	db  *sqlite.Store
	st  *partitionable
}

// partitionable is a store whose heartbeats can be cut off (renewals
// fail) while every other call goes through: a process that stalls or
// loses touch with the database long enough for its leases to expire.
type partitionable struct {
	store.Store
	cut atomic.Bool
	// dead: the process is gone; it writes nothing more.
	dead atomic.Bool
}

func (p *partitionable) ReleaseLease(ctx context.Context, l store.Lease) error {
	if p.dead.Load() {
		return errProcessGone
	}
	return p.Store.ReleaseLease(ctx, l)
}

func (p *partitionable) Commit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	if p.dead.Load() {
		return store.CommitResult{}, errProcessGone
	}
	return p.Store.Commit(ctx, c)
}

func (p *partitionable) RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	if p.cut.Load() || p.dead.Load() {
		return store.Lease{}, fmt.Errorf("partitioned")
	}
	return p.Store.RenewLease(ctx, l, now, ttl)
}

func openLeaseProc(t testing.TB, path string, reg *action.Registry, ttl time.Duration) *leaseProc {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		t.Fatal(err)
	}
	st := &partitionable{Store: db}
	eng, err := New(Config{Store: st, Key: testKey, Actions: reg, LeaseTTL: ttl, ShutdownGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := &leaseProc{eng: eng, db: db, st: st}
	t.Cleanup(func() { p.close() })
	return p
}

func (p *leaseProc) close() {
	if p.eng != nil {
		_ = p.eng.Close(context.Background())
		_ = p.db.Close()
		p.eng = nil
	}
}

func ledgerRegistry(l *ledger) *action.Registry {
	reg := action.Builtins()
	reg.Register(l)
	return reg
}

// Two processes on one database, both recovering and claiming, with runs
// started on each, every run resumed through the other while it runs, and
// sleeps whose wake-ups both see come due: no effect step runs twice, and
// every step is recorded once.
func TestTwoProcessesNeverRunAStepTwice(t *testing.T) {
	l := newLedger()
	reg := ledgerRegistry(l)
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openLeaseProc(t, path, reg, 2*time.Second)
	b := openLeaseProc(t, path, reg, 2*time.Second)
	for _, p := range []*leaseProc{a, b} {
		if _, err := p.eng.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	const doc = `version: 1
name: effects
steps:
  - id: one
    uses: ledger
  - id: nap
    sleep: 30ms
  - id: two
    uses: ledger
  - id: three
    uses: ledger
`
	const runs = 40
	ids := make([]string, runs)
	for i := range ids {
		p, other := a, b
		if i%2 == 1 {
			p, other = b, a
		}
		ids[i] = startDoc(t, p.eng, doc)
		// What `resume --all` beside a server does, at once.
		if _, err := other.eng.Resume(context.Background(), ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	drivenElsewhere := 0
	for _, id := range ids {
		waitFor(t, func() bool {
			for _, p := range []*leaseProc{b, a} {
				r, err := p.eng.Resume(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if r.DrivenBy != "" {
					drivenElsewhere++
					if r.DrivenBy != a.eng.Owner() && r.DrivenBy != b.eng.Owner() {
						t.Fatalf("driven by %q, neither process", r.DrivenBy)
					}
				}
				if store.Finished(r.Status) {
					if r.Status != store.StatusSucceeded {
						t.Fatalf("run %s: %s", id, r.Status)
					}
					return true
				}
			}
			return false
		})
	}
	for _, id := range ids {
		for _, step := range []string{"one", "two", "three"} {
			if n := l.count(id, step); n != 1 {
				t.Errorf("run %s step %s executed %d times", id, step, n)
			}
		}
		steps, err := a.db.Steps(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) != 4 {
			t.Errorf("run %s: %d steps recorded, want 4", id, len(steps))
		}
	}
	t.Logf("%d resumes found the run driven by the other process", drivenElsewhere)
}

// A process whose lease expires (its heartbeat cut off) while a step runs
// loses the run to another: the other takes it over and runs the step
// again (at-least-once), and the first one's result, arriving late, is
// refused by the lease's epoch and never recorded.
func TestTakeoverAfterExpiryFencesTheOldDriver(t *testing.T) {
	synctest.Test(t, testTakeoverAfterExpiryFencesTheOldDriver) // its waits pass on the bubble's clock, at once
}

func testTakeoverAfterExpiryFencesTheOldDriver(t *testing.T) {
	l := newLedger()
	releaseFirst := make(chan struct{})
	l.hold = func(ctx context.Context, key string) error {
		if strings.HasSuffix(key, "/effect") && l.countKey(key) == 1 {
			select { // the first execution stalls until told
			case <-releaseFirst:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	reg := ledgerRegistry(l)
	path := filepath.Join(t.TempDir(), "shared.db")
	const ttl = 300 * time.Millisecond
	a := openLeaseProc(t, path, reg, ttl)
	b := openLeaseProc(t, path, reg, ttl)
	id := startDoc(t, a.eng, `version: 1
name: slow
steps:
  - id: effect
    uses: ledger
  - id: after
    uses: ledger
`)
	waitFor(t, func() bool { return l.count(id, "effect") == 1 })
	a.st.cut.Store(true) // A's heartbeats no longer reach the database
	if _, err := b.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	// B takes the run over once A's lease expired and runs the step again.
	waitFor(t, func() bool {
		r, err := b.db.GetRun(context.Background(), id)
		return err == nil && r.Status == store.StatusSucceeded
	})
	lease, err := b.db.GetLease(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	close(releaseFirst) // A's stalled execution returns now: too late
	time.Sleep(100 * time.Millisecond)
	steps, err := b.db.Steps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 {
		t.Fatalf("%d steps recorded, want 2: %+v", len(steps), steps)
	}
	if out := string(steps[0].Output); out != `{"execution":2}` {
		t.Fatalf("the step's recorded output is %s, want B's (execution 2): A's late result was recorded", out)
	}
	if n := l.count(id, "effect"); n != 2 {
		t.Fatalf("effect executed %d times, want 2 (A's in flight, B's)", n)
	}
	if n := l.count(id, "after"); n != 1 {
		t.Fatalf("the step after executed %d times, want 1", n)
	}
	if lease.Epoch < 2 {
		t.Fatalf("lease epoch %d: B did not take the run over", lease.Epoch)
	}
	r, err := b.db.GetRun(context.Background(), id)
	if err != nil || r.Status != store.StatusSucceeded {
		t.Fatalf("run %v %v", r.Status, err)
	}
}

// Resume leaves a run another live process drives to it, and says who.
func TestResumeLeavesARunDrivenElsewhere(t *testing.T) {
	l := newLedger()
	release := make(chan struct{})
	l.hold = func(ctx context.Context, _ string) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	reg := ledgerRegistry(l)
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openLeaseProc(t, path, reg, time.Hour)
	b := openLeaseProc(t, path, reg, time.Hour)
	id := startDoc(t, a.eng, "version: 1\nname: held\nsteps:\n  - id: effect\n    uses: ledger\n")
	waitFor(t, func() bool { return l.count(id, "effect") == 1 })
	r, err := b.eng.Resume(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if r.DrivenBy != a.eng.Owner() || r.Status != store.StatusRunning {
		t.Fatalf("resume: %+v, want driven by %s", r, a.eng.Owner())
	}
	close(release)
	waitFor(t, func() bool {
		run, err := b.db.GetRun(context.Background(), id)
		return err == nil && run.Status == store.StatusSucceeded
	})
	if n := l.count(id, "effect"); n != 1 {
		t.Fatalf("effect executed %d times", n)
	}
}

// A run whose holder is known to be gone — an engine of this process
// closed without releasing (as a killed process leaves it) — is taken over
// at once by Resume, not after the lease's TTL (an hour here).
func TestResumeTakesOverFromAGoneHolderAtOnce(t *testing.T) {
	l := newLedger()
	l.hold = func(ctx context.Context, key string) error {
		if l.countKey(key) == 1 {
			<-ctx.Done() // the first execution never finishes: its process "dies"
			return ctx.Err()
		}
		return nil
	}
	reg := ledgerRegistry(l)
	path := filepath.Join(t.TempDir(), "shared.db")
	a := openLeaseProc(t, path, reg, time.Hour)
	id := startDoc(t, a.eng, "version: 1\nname: gone\nsteps:\n  - id: effect\n    uses: ledger\n")
	waitFor(t, func() bool { return l.count(id, "effect") == 1 })
	held, err := a.db.GetLease(context.Background(), id)
	if err != nil || held.Owner != a.eng.Owner() {
		t.Fatalf("lease %+v %v", held, err)
	}
	// Gone without a word: its engine closed, and nothing it writes
	// reaches the database any more (as after kill -9); its lease stays.
	a.st.dead.Store(true)
	a.close()
	b := openLeaseProc(t, path, reg, time.Hour)
	if l, err := b.db.GetLease(context.Background(), id); err != nil || l.Owner != held.Owner || l.Expired(time.Now()) {
		t.Fatalf("the gone engine's lease: %+v %v, want still held by it", l, err)
	}
	r, err := b.eng.Resume(context.Background(), id)
	if err != nil || r.DrivenBy != "" {
		t.Fatalf("resume: %+v %v", r, err)
	}
	waitFor(t, func() bool {
		run, err := b.db.GetRun(context.Background(), id)
		return err == nil && run.Status == store.StatusSucceeded
	})
	events, err := b.db.Events(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	resumed := 0
	for _, e := range events {
		if e.Type == EventRunResumed {
			resumed++
		}
	}
	if resumed != 1 {
		t.Fatalf("%d run.resumed events, want 1 (the takeover is counted as a recovery)", resumed)
	}
}

func TestOwnerIDs(t *testing.T) {
	owner, nonce := newOwner()
	mach, pid, n, ok := parseOwner(owner)
	if !ok || mach != machine() || pid != os.Getpid() || n != nonce {
		t.Fatalf("parse %q: %q %d %q %v", owner, mach, pid, n, ok)
	}
	if holderGone(owner) != true {
		t.Errorf("an owner of this process that no engine has is not gone")
	}
	h := newHarness(t)
	if holderGone(h.eng.Owner()) {
		t.Errorf("a live engine's owner is gone")
	}
	for _, o := range []string{"", "x", "a/b", "other-machine/1/abc", machine() + "/notapid/abc"} {
		if holderGone(o) {
			t.Errorf("holderGone(%q): an owner not known to be gone", o)
		}
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no `true` to spawn:", err)
	}
	dead := fmt.Sprintf("%s/%d/abc", machine(), cmd.Process.Pid)
	if !holderGone(dead) {
		t.Errorf("an owner whose process exited is not gone: %s", dead)
	}
	if holderGone(fmt.Sprintf("%s/%d/abc", machine(), os.Getppid())) {
		t.Errorf("the parent process is alive")
	}
}

// Before Recover an engine wakes only the runs it was asked to drive: a
// one-shot command does not drive another process's run whose sleep came
// due, until it is asked to (Resume).
func TestOneShotEngineLeavesOtherRunsTimers(t *testing.T) {
	synctest.Test(t, testOneShotEngineLeavesOtherRunsTimers) // its waits pass on the bubble's clock, at once
}

func testOneShotEngineLeavesOtherRunsTimers(t *testing.T) {
	l := newLedger()
	reg := ledgerRegistry(l)
	path := filepath.Join(t.TempDir(), "shared.db")
	b := openLeaseProc(t, path, reg, time.Hour)
	id := startDoc(t, b.eng, "version: 1\nname: nap\nsteps:\n  - id: nap\n    sleep: 200ms\n  - id: effect\n    uses: ledger\n")
	waitFor(t, func() bool {
		r, err := b.db.GetRun(context.Background(), id)
		return err == nil && r.Status == store.StatusRunning && len(r.State) > 0 && strings.Contains(string(r.State), `"wait"`)
	})
	b.close() // parked: its lease released
	a := openLeaseProc(t, path, reg, time.Hour)
	time.Sleep(600 * time.Millisecond) // the sleep is due meanwhile
	if n := l.count(id, "effect"); n != 0 {
		t.Fatalf("a one-shot engine drove another process's run (%d executions)", n)
	}
	if _, err := a.eng.Resume(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, err := a.db.GetRun(context.Background(), id)
		return err == nil && r.Status == store.StatusSucceeded
	})
	if n := l.count(id, "effect"); n != 1 {
		t.Fatalf("effect executed %d times", n)
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/workflow"
)

// process is one process of a crash loop: a store and an engine over the
// same database file. crash makes it as dead as a killed process: from then
// on nothing it does reaches the database.
type process struct {
	eng   *Engine
	db    *sqlite.Store
	store *crashableStore
}

// crashableStore is a store that its process no longer reaches once it
// crashed: writes fail, and so do the reads that would drive a run again.
type crashableStore struct {
	store.Store
	crashed atomic.Bool
}

var errProcessGone = errors.New("the process is gone")

func (s *crashableStore) Commit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	if s.crashed.Load() {
		return store.CommitResult{}, errProcessGone
	}
	return s.Store.Commit(ctx, c)
}

func (s *crashableStore) GetRun(ctx context.Context, id string) (store.Run, error) {
	if s.crashed.Load() {
		return store.Run{}, errProcessGone
	}
	return s.Store.GetRun(ctx, id)
}

func (s *crashableStore) DueTimers(ctx context.Context, now time.Time, limit int) ([]store.Timer, error) {
	if s.crashed.Load() {
		return nil, errProcessGone
	}
	return s.Store.DueTimers(ctx, now, limit)
}

// A process that is gone neither renews nor releases its leases: they
// stay its until they expire or a process of the machine sees it gone.
func (s *crashableStore) RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	if s.crashed.Load() {
		return store.Lease{}, errProcessGone
	}
	return s.Store.RenewLease(ctx, l, now, ttl)
}

func (s *crashableStore) ReleaseLease(ctx context.Context, l store.Lease) error {
	if s.crashed.Load() {
		return errProcessGone
	}
	return s.Store.ReleaseLease(ctx, l)
}

func (s *crashableStore) CreateRun(ctx context.Context, r store.Run, events []store.Event, steps ...store.Step) (store.CommitResult, error) {
	if s.crashed.Load() {
		return store.CommitResult{}, errProcessGone
	}
	return s.Store.CreateRun(ctx, r, events, steps...)
}

// crashLoop starts processes on one database, one after the other; the
// crasher action ends the process it runs in.
type crashLoop struct {
	t       *testing.T
	path    string
	max     int // the engines' MaxRecoveries (0: the default)
	mu      sync.Mutex
	current *process
	crasher *crasher
}

func newCrashLoop(t *testing.T, maxRecoveries int) *crashLoop {
	l := &crashLoop{t: t, path: filepath.Join(t.TempDir(), "crash.db"), max: maxRecoveries}
	l.crasher = &crasher{loop: l}
	return l
}

// start opens the next process (the previous one is closed).
func (l *crashLoop) start() *process {
	l.t.Helper()
	l.stop()
	db, err := sqlite.Open(context.Background(), l.path, sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		l.t.Fatal(err)
	}
	cs := &crashableStore{Store: db}
	// The actions are registered before the engine starts: its timer loop
	// may drive a run (a retry due) at once.
	reg := action.Builtins()
	reg.Register(l.crasher)
	reg.Register(pureCrasher{l.crasher})
	reg.Register(&counter{})
	eng, err := New(Config{Store: cs, Key: testKey, Actions: reg, MaxRecoveries: l.max, ShutdownGrace: time.Millisecond})
	if err != nil {
		l.t.Fatal(err)
	}
	p := &process{eng: eng, db: db, store: cs}
	l.mu.Lock()
	l.current = p
	l.mu.Unlock()
	l.t.Cleanup(l.stop)
	return p
}

// stop closes the current process (a crashed one writes nothing more).
func (l *crashLoop) stop() {
	l.mu.Lock()
	p := l.current
	l.current = nil
	l.mu.Unlock()
	if p != nil {
		_ = p.eng.Close(context.Background())
		_ = p.db.Close()
	}
}

// crash ends the current process.
func (l *crashLoop) crash() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.current != nil {
		l.current.store.crashed.Store(true)
	}
}

// crasher records its calls and ends the process it runs in (as a step
// that exhausts the memory would), unless plan says otherwise for the call
// (by number, from 1): "ok" returns, "fail" fails on its own (retryable),
// "block" runs until it is interrupted.
type crasher struct {
	loop  *crashLoop
	calls atomic.Int64
	plan  map[int64]string
}

func (c *crasher) Name() string        { return "crash" }
func (c *crasher) Description() string { return "" }
func (c *crasher) Safety() string      { return action.Mutating }
func (c *crasher) Run(ctx context.Context, call action.Call) (any, error) {
	n := c.calls.Add(1)
	switch c.plan[n] {
	case "ok":
		return map[string]any{"call": n}, nil
	case "fail":
		return nil, &action.Error{Err: errors.New("refused"), Retryable: true}
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	c.loop.crash()
	// What it returns is never recorded: the process is gone.
	return nil, errors.New("out of memory")
}

// pureCrasher is the crasher as a pure action: as if a process ended
// while a noop ran.
type pureCrasher struct{ *crasher }

func (pureCrasher) Name() string { return "pure-crash" }
func (pureCrasher) Pure() bool   { return true }

// recoverUntil recovers the database in a new process and waits until the
// process crashed or the run stopped running; then the process is closed.
func (l *crashLoop) recoverUntil(id string) store.Run {
	l.t.Helper()
	p := l.start()
	if _, err := p.eng.Recover(context.Background()); err != nil {
		l.t.Fatal(err)
	}
	var run store.Run
	waitFor(l.t, func() bool {
		if p.store.crashed.Load() {
			return true
		}
		r, err := p.db.GetRun(context.Background(), id)
		if err != nil {
			l.t.Fatal(err)
		}
		run = r
		return r.Status != store.StatusRunning && r.Status != store.StatusPending
	})
	// Crashed before the wait read the run: read it now (the process's
	// own reads fail once it crashed; the file's do not).
	if run.ID == "" {
		r, err := p.db.GetRun(context.Background(), id)
		if err != nil {
			l.t.Fatal(err)
		}
		run = r
	}
	l.stop()
	return run
}

func (l *crashLoop) startRun(p *process, doc string) string {
	l.t.Helper()
	h := &harness{t: l.t, eng: p.eng}
	id, err := h.start(doc, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	return id
}

// read opens the database on its own and reads a run, its steps and
// events.
func (l *crashLoop) read(id string) (store.Run, []store.Step, []store.Event) {
	l.t.Helper()
	l.stop()
	db, err := sqlite.Open(context.Background(), l.path, sqlite.Options{})
	if err != nil {
		l.t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	run, err := db.GetRun(ctx, id)
	if err != nil {
		l.t.Fatal(err)
	}
	steps, err := db.Steps(ctx, id)
	if err != nil {
		l.t.Fatal(err)
	}
	events, err := db.Events(ctx, id, 0, 0)
	if err != nil {
		l.t.Fatal(err)
	}
	return run, steps, events
}

const crashLoopFlow = `version: 1
name: crash-loop
steps:
  - id: before
    uses: count
  - id: boom
    uses: crash
  - id: after
    uses: count
`

// A step that ends its process every time it runs is run again after
// each of MaxRecoveries recoveries, then failed with STEP_CRASHED by the
// next one instead of running once more: MaxRecoveries+1 executions in
// all, however many times the process is started again.
func TestCrashLoopFailsTheStepAfterMaxRecoveries(t *testing.T) {
	for _, max := range []int{0, 1} {
		want := max
		if want == 0 {
			want = defaultMaxRecoveries
		}
		l := newCrashLoop(t, max)
		p := l.start()
		id := l.startRun(p, crashLoopFlow)
		waitFor(t, func() bool { return p.store.crashed.Load() })
		for range want + 5 {
			if run := l.recoverUntil(id); run.Status == store.StatusFailed {
				break
			}
		}
		run, steps, events := l.read(id)
		if got := l.crasher.calls.Load(); got != int64(want+1) {
			t.Fatalf("MaxRecoveries %d: the step ran %d times, want %d (once, then once per recovery)", max, got, want+1)
		}
		if run.Status != store.StatusFailed {
			t.Fatalf("MaxRecoveries %d: the run is %s, want failed", max, run.Status)
		}
		var re RunError
		if err := json.Unmarshal(run.Error, &re); err != nil {
			t.Fatal(err)
		}
		msg := crashedMessage(want + 1)
		if re.Code != CodeStepCrashed || re.StepID != "boom" || re.Message != msg {
			t.Fatalf("run error %s, want code %s on step boom: %q", run.Error, CodeStepCrashed, msg)
		}
		var rows []string
		for _, s := range steps {
			rows = append(rows, s.StepID+" "+s.Status)
		}
		if strings.Join(rows, ",") != "before succeeded,boom failed" {
			t.Fatalf("steps recorded: %v", rows)
		}
		if steps[1].Error != msg {
			t.Fatalf("step error %q, want %q", steps[1].Error, msg)
		}
		resumed := 0
		for _, ev := range events {
			switch ev.Type {
			case EventRunResumed:
				resumed++
				var d map[string]any
				_ = json.Unmarshal(ev.Data, &d)
				if ev.StepID != "boom" || d["recoveries"] != float64(resumed) {
					t.Fatalf("run.resumed event %d: step %s data %s", resumed, ev.StepID, ev.Data)
				}
			case EventStepFailed:
				if !strings.Contains(string(ev.Data), `"code":"STEP_CRASHED"`) {
					t.Fatalf("step.failed without its code: %s", ev.Data)
				}
			}
		}
		if resumed != want {
			t.Fatalf("%d run.resumed events, want %d", resumed, want)
		}
	}
}

// A step failed by STEP_CRASHED follows the failure path of any failed
// step: with continue_on_error the run goes on.
func TestCrashedStepContinuesOnError(t *testing.T) {
	l := newCrashLoop(t, 1)
	p := l.start()
	id := l.startRun(p, strings.Replace(crashLoopFlow, "    uses: crash\n", "    uses: crash\n    continue_on_error: true\n", 1))
	waitFor(t, func() bool { return p.store.crashed.Load() })
	l.recoverUntil(id)
	l.recoverUntil(id)
	run, steps, _ := l.read(id)
	if run.Status != store.StatusSucceeded || l.crasher.calls.Load() != 2 {
		t.Fatalf("run %s after %d calls, want succeeded after 2", run.Status, l.crasher.calls.Load())
	}
	var rows []string
	for _, s := range steps {
		rows = append(rows, s.StepID+" "+s.Status)
	}
	if strings.Join(rows, ",") != "before succeeded,boom failed,after succeeded" {
		t.Fatalf("steps recorded: %v", rows)
	}
}

// Counting starts again for another execution of the step: a retry's new
// attempt, after the earlier one failed and was recorded.
func TestRecoveriesCountPerAttempt(t *testing.T) {
	l := newCrashLoop(t, 1)
	// Attempt 1: crashes (call 1), recovered once: fails on its own (2),
	// recorded; attempt 2: crashes (3), recovered: fails (4); attempt 3:
	// crashes (5), recovered: crashes (6); the next recovery fails it.
	l.crasher.plan = map[int64]string{2: "fail", 4: "fail"}
	p := l.start()
	id := l.startRun(p, `version: 1
name: crash-retry
steps:
  - id: boom
    uses: crash
    retry: {attempts: 3, backoff: 1ms, max_backoff: 1ms}
`)
	waitFor(t, func() bool { return p.store.crashed.Load() })
	for range 10 {
		if run := l.recoverUntil(id); run.Status == store.StatusFailed {
			break
		}
	}
	run, _, _ := l.read(id)
	if run.Status != store.StatusFailed || l.crasher.calls.Load() != 6 || !strings.Contains(string(run.Error), CodeStepCrashed) {
		t.Fatalf("run %s %s after %d calls, want failed with %s after 6", run.Status, run.Error, l.crasher.calls.Load(), CodeStepCrashed)
	}
}

// A shutdown that interrupts a step is no crash: however often it happens,
// the step runs again and is not failed.
func TestShutdownIsNotCounted(t *testing.T) {
	l := newCrashLoop(t, 1)
	l.crasher.plan = map[int64]string{1: "block", 2: "block", 3: "block", 4: "block", 5: "ok"}
	p := l.start()
	id := l.startRun(p, crashLoopFlow)
	for i := int64(1); i <= 4; i++ {
		waitFor(t, func() bool {
			if l.crasher.calls.Load() == i {
				return true
			}
			r, err := p.db.GetRun(context.Background(), id)
			return err == nil && r.Status != store.StatusRunning
		})
		// A graceful close: the step is interrupted after the grace.
		l.stop()
		p = l.start()
		if _, err := p.eng.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool {
		r, err := p.db.GetRun(context.Background(), id)
		return err == nil && r.Status != store.StatusRunning
	})
	run, _, events := l.read(id)
	// The step succeeded at its fifth call; then the after step ran.
	if run.Status != store.StatusSucceeded || l.crasher.calls.Load() != 5 {
		t.Fatalf("run %s %s after %d calls, want succeeded after 5", run.Status, run.Error, l.crasher.calls.Load())
	}
	for _, ev := range events {
		if ev.Type == EventRunResumed && !strings.Contains(string(ev.Data), `"recoveries":0`) {
			t.Fatalf("a shutdown counted as a crash: %s %s", ev.Type, ev.Data)
		}
	}
}

// Runs that nobody interrupted write nothing for recovery, and neither
// does a run whose step waited for a wake-up that came due only after the
// process started: no process ran it before.
func TestNoRecoveryWithoutACrash(t *testing.T) {
	l := newCrashLoop(t, 1)
	l.crasher.plan = map[int64]string{1: "ok", 2: "ok"}
	p := l.start()
	plain := l.startRun(p, crashLoopFlow)
	waitFor(t, func() bool {
		r, err := p.db.GetRun(context.Background(), plain)
		return err == nil && r.Status == store.StatusSucceeded
	})
	sleeper := l.startRun(p, `version: 1
name: sleeper
steps:
  - id: nap
    sleep: 300ms
  - id: boom
    uses: crash
`)
	waitFor(t, func() bool {
		evs, err := p.db.Events(context.Background(), sleeper, 0, 0)
		return err == nil && len(evs) > 0 && evs[len(evs)-1].Type == EventStepSleeping
	})
	l.stop()
	p = l.start()
	if _, err := p.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, err := p.db.GetRun(context.Background(), sleeper)
		return err == nil && r.Status == store.StatusSucceeded
	})
	for _, id := range []string{plain, sleeper} {
		run, _, events := l.read(id)
		if run.Status != store.StatusSucceeded {
			t.Fatalf("run %s: %s %s", id, run.Status, run.Error)
		}
		var st State
		_ = json.Unmarshal(run.State, &st)
		for _, ev := range events {
			if ev.Type == EventRunResumed || st.Recovered != nil {
				t.Fatalf("run %s recorded a recovery: %s %s, state %s", id, ev.Type, ev.Data, run.State)
			}
		}
	}
}

// A run recorded to be driven elsewhere (run --detach) that a process
// picks up for the first time is no recovery: the step runs there, then
// after each of MaxRecoveries recoveries.
func TestDetachedRunFirstPickUpIsNoRecovery(t *testing.T) {
	l := newCrashLoop(t, 2)
	p := l.start()
	// The first step crashes: what the first pick-up counts is it.
	doc := strings.Replace(crashLoopFlow, "  - id: before\n    uses: count\n", "", 1)
	res := workflow.Check([]byte(doc), workflow.Options{})
	def, _ := workflow.Canonical(res.Source.Value)
	id, err := p.eng.Start(context.Background(), StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def, Detached: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if run := l.recoverUntil(id); run.Status == store.StatusFailed {
			break
		}
	}
	run, _, _ := l.read(id)
	if run.Status != store.StatusFailed || l.crasher.calls.Load() != 3 || !strings.Contains(string(run.Error), crashedMessage(3)) {
		t.Fatalf("run %s %s after %d calls, want failed (%s) after 3", run.Status, run.Error, l.crasher.calls.Load(), crashedMessage(3))
	}
}

// A process that ends while a pure step runs (a noop, a transform) did not
// end because of it: such steps are never counted, however often it
// happens, and their recovery writes nothing.
func TestPureStepsAreNotCounted(t *testing.T) {
	l := newCrashLoop(t, 1)
	l.crasher.plan = map[int64]string{5: "ok"}
	p := l.start()
	id := l.startRun(p, `version: 1
name: pure-crash
steps:
  - id: calc
    uses: pure-crash
  - id: after
    uses: count
`)
	waitFor(t, func() bool { return p.store.crashed.Load() })
	for range 6 {
		if run := l.recoverUntil(id); run.Status != store.StatusRunning {
			break
		}
	}
	run, _, events := l.read(id)
	if run.Status != store.StatusSucceeded || l.crasher.calls.Load() != 5 {
		t.Fatalf("run %s %s after %d calls, want succeeded after 5", run.Status, run.Error, l.crasher.calls.Load())
	}
	for _, ev := range events {
		if ev.Type == EventRunResumed {
			t.Fatalf("a pure step's recovery was counted: %s", ev.Data)
		}
	}
}

// Hooks and compensations that end their process are counted like steps:
// after MaxRecoveries recoveries the next one fails the operation with
// STEP_CRASHED instead of running it, and the run finishes.
func TestCrashLoopInFinishingPhases(t *testing.T) {
	for _, tc := range []struct{ name, doc, row, event string }{
		{"compensation", `version: 1
name: crash-compensation
steps:
  - id: create
    uses: count
    compensate: {uses: crash}
  - id: stop
    fail: no
`, "compensate:create", EventCompensationFail},
		{"on_failure", `version: 1
name: crash-hook
steps:
  - id: stop
    fail: no
on_failure:
  - uses: crash
  - uses: count
`, "on_failure:0", EventHookFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newCrashLoop(t, 1)
			p := l.start()
			id := l.startRun(p, tc.doc)
			waitFor(t, func() bool { return p.store.crashed.Load() })
			for range 6 {
				if run := l.recoverUntil(id); run.Status != store.StatusRunning {
					break
				}
			}
			run, steps, events := l.read(id)
			if run.Status != store.StatusFailed || l.crasher.calls.Load() != 2 {
				t.Fatalf("run %s %s after %d calls, want failed after 2", run.Status, run.Error, l.crasher.calls.Load())
			}
			var row *store.Step
			for i := range steps {
				if steps[i].Key == tc.row {
					row = &steps[i]
				}
			}
			if row == nil || row.Status != "failed" || row.Error != crashedMessage(2) {
				t.Fatalf("row %s: %+v", tc.row, row)
			}
			found := false
			for _, ev := range events {
				found = found || (ev.Type == tc.event && strings.Contains(string(ev.Data), `"code":"STEP_CRASHED"`))
			}
			if !found {
				t.Fatalf("no %s event with the code STEP_CRASHED", tc.event)
			}
		})
	}
}

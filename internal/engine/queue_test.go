package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/postgres/pgtest"
	"stepwise.dev/stepwise/internal/workflow"
)

// queueProbe records when each run's step begins and ends, in one log shared by
// every engine of the test.
type queueProbe struct {
	mu    sync.Mutex
	log   []string // "+run" at the start, "-run" at the end
	quick bool     // no pause inside the step (benchmarks)
}

func (p *queueProbe) Name() string        { return "probe" }
func (p *queueProbe) Description() string { return "" }
func (p *queueProbe) Safety() string      { return action.ReadOnly }
func (p *queueProbe) Run(ctx context.Context, call action.Call) (any, error) {
	run := strings.SplitN(call.IdempotencyKey, "/", 2)[0]
	p.mu.Lock()
	p.log = append(p.log, "+"+run)
	p.mu.Unlock()
	if !p.quick {
		time.Sleep(2 * time.Millisecond) // room for another run to overlap, were it admitted
	}
	p.mu.Lock()
	p.log = append(p.log, "-"+run)
	p.mu.Unlock()
	return nil, nil
}

// starts returns the runs in the order their step began, and fails the
// test if more than limit were inside their step at once.
func (p *queueProbe) starts(t *testing.T, limit int) []string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var order []string
	inside := 0
	for _, e := range p.log {
		if e[0] == '+' {
			inside++
			order = append(order, e[1:])
		} else {
			inside--
		}
		if inside > limit {
			t.Fatalf("%d runs inside their step at once, limit %d: %v", inside, limit, p.log)
		}
	}
	return order
}

const queuedDoc = `version: 1
name: queued
inputs:
  customer: {type: string, default: acme}
  ask: {type: boolean, default: false}
concurrency: {limit: 1, key: '${{ inputs.customer }}'}
steps:
  - id: gate
    if: ${{ inputs.ask }}
    ask: {prompt: "Go on?", type: boolean}
  - id: work
    uses: probe
`

func startQueued(t *testing.T, e *Engine, customer string, ask bool) string {
	t.Helper()
	res := workflow.Check([]byte(queuedDoc), workflow.Options{})
	if !res.Valid() {
		t.Fatal(res.Violations)
	}
	def, _ := workflow.Canonical(res.Source.Value)
	id, err := e.Start(context.Background(), StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def,
		Inputs: map[string]any{"customer": customer, "ask": ask}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func openQueueEngine(t *testing.T, path string, p *queueProbe) (*Engine, store.Store) {
	t.Helper()
	reg := action.Builtins()
	reg.Register(p)
	proc := openLeaseProc(t, path, reg, time.Minute)
	return proc.eng, proc.db
}

func waitStatus(t *testing.T, s store.Store, id string, want ...string) store.Run {
	t.Helper()
	var r store.Run
	waitFor(t, func() bool {
		var err error
		r, err = s.GetRun(context.Background(), id)
		return err == nil && slices.Contains(want, r.Status)
	})
	return r
}

func answer(t *testing.T, e *Engine, id string) {
	t.Helper()
	ps, err := e.Pauses(context.Background(), id)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pauses of %s: %v %v", id, ps, err)
	}
	if _, err := e.Continue(context.Background(), ps[0].Token, true); err != nil {
		t.Fatal(err)
	}
}

// creationOrder sorts run ids as the store's queues do.
func creationOrder(t *testing.T, s store.Store, ids []string) []string {
	t.Helper()
	runs := make([]store.Run, len(ids))
	for i, id := range ids {
		r, err := s.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = r
	}
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].CreatedAt.Equal(runs[j].CreatedAt) {
			return runs[i].CreatedAt.Before(runs[j].CreatedAt)
		}
		return runs[i].ID < runs[j].ID
	})
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.ID
	}
	return out
}

// A limit of 1: 20 runs started at once while a first one holds the slot
// (waiting for an answer) are all queued; once it finishes they run one at
// a time, in creation order, and all succeed.
func TestQueueLimitOneRunsOneAtATimeInOrder(t *testing.T) {
	p := &queueProbe{}
	eng, st := openQueueEngine(t, filepath.Join(t.TempDir(), "q.db"), p)
	first := startQueued(t, eng, "acme", true)
	waitStatus(t, st, first, store.StatusWaiting)
	ids := make([]string, 20)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() { defer wg.Done(); ids[i] = startQueued(t, eng, "acme", false) }()
	}
	wg.Wait()
	for _, id := range ids {
		r, err := st.GetRun(context.Background(), id)
		if err != nil || r.Status != store.StatusQueued {
			t.Fatalf("run %s started while the slot is held: %+v %v", id, r.Status, err)
		}
	}
	order := creationOrder(t, st, ids)
	if n, err := st.QueuePosition(context.Background(), order[19]); err != nil || n != 19 {
		t.Fatalf("position of the last run: %d %v", n, err)
	}
	answer(t, eng, first)
	for _, id := range ids {
		if r := waitStatus(t, st, id, store.StatusSucceeded, store.StatusFailed); r.Status != store.StatusSucceeded {
			t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
		}
	}
	got := p.starts(t, 1)
	want := append([]string{first}, order...)
	if !slices.Equal(got, want) {
		t.Fatalf("runs started in order\n%v\nwant (creation order)\n%v", got, want)
	}
	evs, err := st.Events(context.Background(), order[0], 0, 0)
	if err != nil || len(evs) < 3 || evs[0].Type != EventRunCreated || evs[1].Type != EventRunQueued || evs[2].Type != EventRunStarted {
		t.Fatalf("events of a queued run: %+v %v", evs, err)
	}
}

// Per-key queues are independent, and a queued run can be canceled: it
// leaves its queue and never runs.
func TestQueuePerKeyAndCancel(t *testing.T) {
	p := &queueProbe{}
	eng, st := openQueueEngine(t, filepath.Join(t.TempDir(), "q.db"), p)
	acme := startQueued(t, eng, "acme", true)
	waitStatus(t, st, acme, store.StatusWaiting)
	behind := startQueued(t, eng, "acme", false)
	canceled := startQueued(t, eng, "acme", false)
	other := startQueued(t, eng, "globex", false)
	if r := waitStatus(t, st, other, store.StatusSucceeded, store.StatusFailed); r.Status != store.StatusSucceeded {
		t.Fatalf("another key's run: %s", r.Status)
	}
	for _, id := range []string{behind, canceled} {
		if r, _ := st.GetRun(context.Background(), id); r.Status != store.StatusQueued {
			t.Fatalf("run %s of the full queue is %s", id, r.Status)
		}
	}
	if err := eng.HoldRun(context.Background(), canceled); CodeOf(err) != CodeRunBusy {
		t.Fatalf("pausing a queued run: %v", err)
	}
	if err := eng.Cancel(context.Background(), canceled, "not needed", true); err != nil {
		t.Fatal(err)
	}
	if r, _ := st.GetRun(context.Background(), canceled); r.Status != store.StatusCanceled {
		t.Fatalf("canceled queued run is %s", r.Status)
	}
	if n, err := st.QueuePosition(context.Background(), behind); err != nil || n != 0 {
		t.Fatalf("position after the cancel: %d %v", n, err)
	}
	answer(t, eng, acme)
	waitStatus(t, st, behind, store.StatusSucceeded)
	for _, id := range p.starts(t, 2) {
		if id == canceled {
			t.Fatal("the canceled queued run ran")
		}
	}
}

// An engine closed while a run holds the slot (it waits for an answer)
// does not leak the slot: another engine on the same database keeps the
// next run queued, and admits it once the first finishes there.
func TestQueueSlotSurvivesAnEngine(t *testing.T) {
	p := &queueProbe{}
	path := filepath.Join(t.TempDir(), "q.db")
	reg := action.Builtins()
	reg.Register(p)
	proc := openLeaseProc(t, path, reg, time.Minute)
	holder := startQueued(t, proc.eng, "acme", true)
	waitStatus(t, proc.db, holder, store.StatusWaiting)
	next := startQueued(t, proc.eng, "acme", false)
	proc.close()
	eng2, st2 := openQueueEngine(t, path, p)
	if _, err := eng2.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	eng2.wantAdmission()
	if r, _ := st2.GetRun(context.Background(), next); r.Status != store.StatusQueued {
		t.Fatalf("the queued run is %s while the slot's holder waits", r.Status)
	}
	answer(t, eng2, holder)
	waitStatus(t, st2, next, store.StatusSucceeded)
	p.starts(t, 1)
}

// Two replicas on one PostgreSQL database share a limit: runs started
// through both never overlap, and all finish.
func TestQueueSharedByReplicasOnPostgres(t *testing.T) {
	url := pgtest.Schema(t)
	p := &queueProbe{}
	reg := action.Builtins()
	reg.Register(p)
	a, ast := openPGReplica(t, url, reg)
	b, _ := openPGReplica(t, url, reg)
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		e := a
		if i%2 == 1 {
			e = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := startQueued(t, e, "acme", false)
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if r := waitStatus(t, ast, id, store.StatusSucceeded, store.StatusFailed); r.Status != store.StatusSucceeded {
			t.Fatalf("run %s: %s", id, r.Status)
		}
	}
	if got := p.starts(t, 1); len(got) != len(ids) {
		t.Fatalf("%d executions for %d runs", len(got), len(ids))
	}
}

// An engine stopped while the slot's holder is inside a step (a crash, as
// far as the run can tell: it stays running) does not leak the slot, nor
// lose it: the next run stays queued while another engine recovers the
// holder, and runs only once the holder finished there.
func TestQueueSlotOfAStoppedDriver(t *testing.T) {
	const doc = `version: 1
name: held
concurrency: {limit: 1}
steps:
  - id: work
    uses: ledger
`
	path := filepath.Join(t.TempDir(), "q.db")
	l1 := newLedger()
	started := make(chan struct{})
	var once sync.Once
	l1.hold = func(ctx context.Context, key string) error {
		once.Do(func() { close(started) })
		<-ctx.Done() // never finishes here
		return ctx.Err()
	}
	p1 := openLeaseProc(t, path, ledgerRegistry(l1), time.Minute)
	holder := startDoc(t, p1.eng, doc)
	<-started
	next := startDoc(t, p1.eng, doc)
	p1.close()

	l2 := newLedger()
	var mu sync.Mutex
	var early []string
	p2 := openLeaseProc(t, path, ledgerRegistry(l2), time.Minute)
	l2.hold = func(ctx context.Context, key string) error {
		if strings.HasPrefix(key, next+"/") {
			if r, err := p2.db.GetRun(ctx, holder); err != nil || !store.Finished(r.Status) {
				mu.Lock()
				early = append(early, r.Status)
				mu.Unlock()
			}
		}
		return nil
	}
	if r, _ := p2.db.GetRun(context.Background(), holder); r.Status != store.StatusRunning {
		t.Fatalf("the interrupted holder is %s", r.Status)
	}
	if r, _ := p2.db.GetRun(context.Background(), next); r.Status != store.StatusQueued {
		t.Fatalf("the next run is %s before the holder was recovered", r.Status)
	}
	if _, err := p2.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{holder, next} {
		if r := waitStatus(t, p2.db, id, store.StatusSucceeded, store.StatusFailed); r.Status != store.StatusSucceeded {
			t.Fatalf("run %s: %s %s", id, r.Status, r.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("the next run ran while the holder was %v", early)
	}
	if n := l2.count(next, "work"); n != 1 {
		t.Fatalf("the next run's step ran %d times", n)
	}
}

// A detached start of a limited workflow leaves the run queued for the
// process that drives runs; Resume admits it here when its queue has room.
func TestQueueDetachedRunResumed(t *testing.T) {
	p := &queueProbe{}
	eng, st := openQueueEngine(t, filepath.Join(t.TempDir(), "q.db"), p)
	res := workflow.Check([]byte(queuedDoc), workflow.Options{})
	def, _ := workflow.Canonical(res.Source.Value)
	id, err := eng.Start(context.Background(), StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def, Detached: true,
		Inputs: map[string]any{"customer": "acme"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := st.GetRun(context.Background(), id); r.Status != store.StatusQueued {
		t.Fatalf("a detached limited run is %s", r.Status)
	}
	if _, err := eng.Resume(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, st, id, store.StatusSucceeded)
}

// BenchmarkQueueLimitOne starts b.N runs of a workflow limited to one (or
// four) runs at a time, all at once, and waits for the last: the admission's cost per
// run (a start that queues, a finish that admits the next).
func BenchmarkQueueLimitOne(b *testing.B) {
	for _, limit := range []int{0, 1, 4} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			p := &queueProbe{quick: true}
			reg := action.Builtins()
			reg.Register(p)
			proc := openLeaseProc(b, filepath.Join(b.TempDir(), "q.db"), reg, time.Minute)
			doc := "version: 1\nname: bench\nsteps:\n  - id: work\n    uses: probe\n"
			if limit > 0 { // 0: no concurrency, for comparison
				doc = fmt.Sprintf("version: 1\nname: bench\nconcurrency: {limit: %d}\nsteps:\n  - id: work\n    uses: probe\n", limit)
			}
			ids := make([]string, b.N)
			b.ResetTimer()
			for i := range ids {
				ids[i] = startDoc(b, proc.eng, doc)
			}
			for _, id := range ids {
				if st, err := proc.eng.Wait(context.Background(), id); err != nil || st != store.StatusSucceeded {
					b.Fatalf("run %s: %s %v", id, st, err)
				}
			}
		})
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// slowStore makes every commit take a while (so that pure steps queue up
// behind it) and can refuse one commit.
type slowStore struct {
	store.Store
	delay   time.Duration
	commits atomic.Int64
	// failAt is the number of the commit that fails (0: none); failed is
	// closed when it did.
	failAt int64
	failed chan struct{}
}

var errDiskFull = errors.New("disk full")

func (s *slowStore) Commit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	n := s.commits.Add(1)
	if n == s.failAt {
		close(s.failed)
		return store.CommitResult{}, errDiskFull
	}
	time.Sleep(s.delay)
	return s.Store.Commit(ctx, c)
}

// probe is an action with an effect: it records how many steps of its run
// were durable when it ran.
type probe struct {
	st   store.Store
	mu   sync.Mutex
	seen []int
}

func (*probe) Name() string        { return "probe" }
func (*probe) Description() string { return "" }
func (*probe) Safety() string      { return action.Mutating }
func (p *probe) Run(ctx context.Context, c action.Call) (any, error) {
	runID, _, _ := strings.Cut(c.IdempotencyKey, "/")
	steps, err := p.st.Steps(ctx, runID)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.seen = append(p.seen, len(steps))
	p.mu.Unlock()
	return map[string]any{}, nil
}

func noops(prefix string, n int) string { return slowNoops(prefix, n, "") }

// slowNoops is noops whose steps take delay each.
func slowNoops(prefix string, n int, delay string) string {
	with := ""
	if delay != "" {
		with = ", with: {delay: " + delay + "}"
	}
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - {id: %s%d, uses: noop%s}\n", prefix, i, with)
	}
	return b.String()
}

func openSlow(t *testing.T, path string, s *slowStore) (*Engine, *sqlite.Store) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{Durability: sqlite.Normal})
	if err != nil {
		t.Fatal(err)
	}
	s.Store = db
	eng, err := New(Config{Store: s, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return eng, db
}

func startOn(t *testing.T, eng *Engine, doc string) string {
	t.Helper()
	res := workflow.Check([]byte(doc), workflow.Options{})
	if !res.Valid() {
		t.Fatalf("invalid workflow: %v", res.Violations)
	}
	def, _ := workflow.Canonical(res.Source.Value)
	id, err := eng.Start(context.Background(), StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func awaitOn(t *testing.T, eng *Engine, id string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := eng.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A step with an effect starts only once every step before it is durable,
// however far the driver ran ahead of the store with pure ones.
func TestEffectWaitsForEarlierPureSteps(t *testing.T) {
	s := &slowStore{delay: 3 * time.Millisecond}
	eng, db := openSlow(t, filepath.Join(t.TempDir(), "t.db"), s)
	defer db.Close()
	defer eng.Close(context.Background())
	p := &probe{st: db}
	eng.actions.Register(p)
	doc := "version: 1\nname: effect\nsteps:\n" + noops("a", 20) +
		"  - {id: check, uses: probe}\n  - {id: s, max_visits: 1, switch: [{if: 'false', goto: a1}]}\n  - {id: skipped, uses: noop, if: 'false'}\n" +
		"  - {id: again, uses: probe}\n" + noops("b", 5)
	id := startOn(t, eng, doc)
	if st := awaitOn(t, eng, id); st != store.StatusSucceeded {
		t.Fatalf("status %s", st)
	}
	// 20 noops before the first probe; 20 + probe + switch + skipped
	// before the second.
	if fmt.Sprint(p.seen) != "[20 23]" {
		t.Fatalf("durable steps seen by the effects: %v, want [20 23]", p.seen)
	}
}

// Pure steps that queue up behind a commit in flight share the next one;
// every step and event is recorded once, in order.
func TestPureStepsShareCommits(t *testing.T) {
	s := &slowStore{delay: 2 * time.Millisecond}
	eng, db := openSlow(t, filepath.Join(t.TempDir(), "t.db"), s)
	defer db.Close()
	defer eng.Close(context.Background())
	const n = 200
	id := startOn(t, eng, "version: 1\nname: many\nsteps:\n"+noops("a", n))
	if st := awaitOn(t, eng, id); st != store.StatusSucceeded {
		t.Fatalf("status %s", st)
	}
	if c := s.commits.Load(); c >= n/2 {
		t.Fatalf("%d commits for %d pure steps: they did not share commits", c, n)
	}
	checkRecordedOnce(t, db, id, "a", n)
}

// checkRecordedOnce checks that the run's steps are prefix1…prefixN, each
// recorded once and succeeded, with its started and succeeded events in
// step order.
func checkRecordedOnce(t *testing.T, db store.Store, id, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	steps, err := db.Steps(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != n {
		t.Fatalf("%d step rows, want %d", len(steps), n)
	}
	for i, st := range steps {
		if want := fmt.Sprintf("%s%d", prefix, i+1); st.StepID != want || st.Status != "succeeded" || st.Visit != 1 {
			t.Fatalf("step row %d: %s %s visit %d, want %s succeeded visit 1", i, st.StepID, st.Status, st.Visit, want)
		}
	}
	evs, err := db.Events(ctx, id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	var last int64
	for _, ev := range evs {
		if ev.Seq <= last {
			t.Fatalf("event seq %d after %d", ev.Seq, last)
		}
		last = ev.Seq
		if ev.Type == EventStepStarted || ev.Type == EventStepSucceeded {
			order = append(order, ev.StepID+" "+ev.Type)
		}
	}
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf("%s%d %s", prefix, i, EventStepStarted), fmt.Sprintf("%s%d %s", prefix, i, EventStepSucceeded))
	}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("step events out of order or repeated:\n got %v\nwant %v", order, want)
	}
}

// A commit of the pipeline that fails stops the driver: nothing is written
// on top of the steps it lost, the stored state matches the stored steps,
// and the run, driven again, records every step exactly once.
func TestFailedPipelineCommitLosesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	s := &slowStore{delay: 2 * time.Millisecond, failAt: 3, failed: make(chan struct{})}
	eng, db := openSlow(t, path, s)
	const n = 60
	// Steps of 1 ms behind commits of 2 ms: the third commit is one of the
	// pipeline's, in the middle of the run.
	id := startOn(t, eng, "version: 1\nname: fails\nsteps:\n"+slowNoops("a", n, "1ms"))
	select {
	case <-s.failed:
	case <-time.After(30 * time.Second):
		t.Fatal("the third commit never came")
	}
	if err := eng.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c := s.commits.Load(); c != s.failAt {
		t.Fatalf("%d commits: the driver went on writing after commit %d failed", c, s.failAt)
	}
	run, steps, st := stored(t, db, id)
	if run.Status != store.StatusRunning || st.Cursor != len(steps) || len(steps) == 0 || len(steps) >= n {
		t.Fatalf("stored run %s at cursor %d with %d step rows: want running, the cursor after the last of some (not all) rows", run.Status, st.Cursor, len(steps))
	}
	for i, row := range steps {
		if want := fmt.Sprintf("a%d", i+1); row.StepID != want {
			t.Fatalf("step row %d is %s, want %s", i, row.StepID, want)
		}
	}
	_ = db.Close()

	again := &slowStore{}
	eng2, db2 := openSlow(t, path, again)
	defer db2.Close()
	defer eng2.Close(context.Background())
	if n, err := eng2.Recover(context.Background()); err != nil || n != 1 {
		t.Fatalf("recover: %d runs, %v", n, err)
	}
	if st := awaitOn(t, eng2, id); st != store.StatusSucceeded {
		t.Fatalf("status after a new engine took the run: %s", st)
	}
	checkRecordedOnce(t, db2, id, "a", n)
}

// Answering a question that a switch asks again costs one commit: the
// Continue hands the answer to the run's driver, and the answer, the
// switch and the next question are written together.
func TestSwitchRidesWithTheNextQuestion(t *testing.T) {
	// The 2 ms a lone queued commit waits is a scheduling matter on a
	// loaded machine (-race, CI): what is counted here is the merging.
	was := lingerFor
	t.Cleanup(func() { lingerFor = was }) // after the harness's engine is closed
	lingerFor = time.Minute
	h := newHarness(t)
	id, err := h.start(`version: 1
name: loop
steps:
  - id: number
    max_visits: 100
    ask: {prompt: "Next?", type: integer}
  - id: again
    switch:
      - goto: number
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusWaiting {
		t.Fatalf("status %s", r.Status)
	}
	for i := range 5 {
		p := h.pause(id)
		// The driver that opened the pause may still be on its way out: a
		// Continue then commits the answer itself (two commits, as before).
		driverGone(t, h.eng, id)
		c0 := h.store.Stats().Commits
		if _, err := h.eng.Continue(context.Background(), p.Token, i); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() bool {
			ps, err := h.eng.Pauses(context.Background(), id)
			return err == nil && len(ps) == 1 && ps[0].Seq != p.Seq
		})
		if r := h.wait(id); r.Status != store.StatusWaiting {
			t.Fatalf("status %s", r.Status)
		}
		if c := h.store.Stats().Commits - c0; c != 1 {
			t.Fatalf("answer %d: %d commits, want 1 (the answer, the switch and the next question)", i, c)
		}
	}
	steps, err := h.store.Steps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 10 {
		t.Fatalf("%d step rows after 5 answers, want 10", len(steps))
	}
}

// A pure step followed by a long one is durable (and seen) while the long
// one runs: a lone queued commit waits only a moment for company.
func TestLoneQueuedStepIsFlushedSoon(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(`version: 1
name: lone
steps:
  - {id: first, uses: noop}
  - {id: long, uses: noop, with: {delay: 60s}}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		steps, err := h.store.Steps(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(steps) == 1 && steps[0].StepID == "first" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first step is still not recorded while the second runs: %v", steps)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Stop without the grace period the long step would use up.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = h.eng.Close(ctx)
	_ = h.store.Close()
	h.eng = nil
}

// The answer handed to the driver is durable when Continue returns, even
// when what follows it is a long pure step (the answer does not wait for
// the step after it), and the run goes on from it.
func TestHandedAnswerIsDurableOnReturn(t *testing.T) {
	s := &slowStore{delay: 5 * time.Millisecond}
	eng, db := openSlow(t, filepath.Join(t.TempDir(), "t.db"), s)
	defer db.Close()
	id := startOn(t, eng, `version: 1
name: handed
steps:
  - id: q
    ask: {prompt: "N?", type: integer}
  - {id: then, uses: noop}
  - {id: long, uses: noop, with: {delay: 60s}}
`)
	if st := awaitOn(t, eng, id); st != store.StatusWaiting {
		t.Fatalf("status %s", st)
	}
	ps, err := eng.Pauses(context.Background(), id)
	if err != nil || len(ps) != 1 {
		t.Fatal(ps, err)
	}
	t0 := time.Now()
	res, err := eng.Continue(context.Background(), ps[0].Token, 42)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("Continue took %s: it waited for the long step", d)
	}
	steps, err := db.Steps(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) == 0 || steps[0].StepID != "q" || string(steps[0].Answer) != "42" || res.AnswerID == 0 {
		t.Fatalf("after Continue returned: steps %+v, answer id %d: the answer is not recorded", steps, res.AnswerID)
	}
	run, err := db.GetRun(context.Background(), id)
	if err != nil || run.Status != store.StatusRunning {
		t.Fatalf("run %s %v, want running", run.Status, err)
	}
	if _, err := eng.Continue(context.Background(), ps[0].Token, 43); err == nil {
		t.Fatal("the token answered twice")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = eng.Close(ctx) // without the grace the long step would use up
}

// driverGone waits until no driver of eng holds the run: the one that
// opened a pause has kept its state and left.
func driverGone(t *testing.T, eng *Engine, id string) {
	t.Helper()
	waitFor(t, func() bool {
		eng.mu.Lock()
		defer eng.mu.Unlock()
		_, busy := eng.active[id]
		return !busy
	})
}

// stored reads a run's row, its step rows and its state from db.
func stored(t *testing.T, db store.Store, id string) (store.Run, []store.Step, State) {
	t.Helper()
	ctx := context.Background()
	run, err := db.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := db.Steps(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.Unmarshal(run.State, &st); err != nil {
		t.Fatal(err)
	}
	return run, steps, st
}

package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/store/sqlite"
)

// stepKind is the action of the measured steps.
type stepKind struct {
	// prefix starts the figure's name.
	prefix string
	// uses is the action.
	uses string
}

var (
	// noopSteps are the no-op steps: `uses: noop`, a pure action,
	// so the engine does not wait for one step's record before the next
	// (engine/ahead.go): what queued behind a commit in flight shares the
	// next commit.
	noopSteps = stepKind{prefix: "steps_", uses: "noop"}
	// effectSteps do nothing either but say they have an effect: the
	// engine waits for every step's commit before the next starts, as for
	// an HTTP call, so a run of them costs a commit per step.
	effectSteps = stepKind{prefix: "effect_steps_", uses: "effect"}
)

// effect is the action of effectSteps.
type effect struct{}

func (effect) Name() string        { return "effect" }
func (effect) Description() string { return "Do nothing, as if it were an effect (benchmark)." }
func (effect) Safety() string      { return action.Mutating }
func (effect) Run(context.Context, action.Call) (any, error) {
	return map[string]any{}, nil
}

// stepWorkflow is a workflow of n steps of kind: each costs the engine
// its record and nothing else, so steps/s measures the engine and the
// store, not an action.
func stepWorkflow(kind stepKind, n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: " + kind.uses + "s\nsteps:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: s%d, uses: %s}\n", i, kind.uses)
	}
	return []byte(b.String())
}

// stepHome is a service on a fresh home of its own under dir, as
// `stepwise --durability D` would open it, with the workflow of n steps of
// kind parsed and validated (outside the timing).
func stepHome(ctx context.Context, dir, durability string, kind stepKind, n int) (*service.Service, *service.Loaded, error) {
	svc, err := service.Open(ctx, service.Options{Home: dir, Durability: durability})
	if err != nil {
		return nil, nil, err
	}
	svc.Actions.Register(effect{})
	l, err := svc.Parse(stepWorkflow(kind, n))
	if err == nil {
		err = growWAL(ctx, svc.Store.(*sqlite.Store).Writer())
	}
	if err != nil {
		svc.Close(ctx)
		return nil, nil, err
	}
	return svc, l, nil
}

// growWAL brings a fresh database to the state of one that has been in
// use: its write-ahead log grown past the automatic checkpoint (1000
// pages) and restarted, so that commits overwrite the log rather than
// extend it. Extending a file makes every fsync write metadata too: on
// this machine a fresh log takes a third as many commits per second under
// Full durability. The engine's database and the raw one get the same
// warm-up, one transaction of 5 MB in a scratch table.
func growWAL(ctx context.Context, db *sql.DB) error {
	for _, q := range []string{
		`CREATE TABLE bench_warmup (b BLOB)`,
		`INSERT INTO bench_warmup VALUES (zeroblob(5 << 20))`,
		`DROP TABLE bench_warmup`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("warm up the log: %w", err)
		}
	}
	return nil
}

// commits reads the store's commit counter.
func commits(svc *service.Service) int64 {
	return svc.Store.(*sqlite.Store).Stats().Commits
}

// runToEnd starts a run of l and waits until it has succeeded.
func runToEnd(ctx context.Context, svc *service.Service, l *service.Loaded) error {
	id, err := svc.StartRun(ctx, l, nil, false)
	if err != nil {
		return err
	}
	st, err := svc.Wait(ctx, id, 0)
	if err == nil && st != "succeeded" {
		err = fmt.Errorf("run %s ended %s", id, st)
	}
	return err
}

// runAll starts runs runs of l at once and waits until all have
// succeeded.
func runAll(ctx context.Context, svc *service.Service, l *service.Loaded, runs int) error {
	errs := make(chan error, runs)
	var wg sync.WaitGroup
	for range runs {
		wg.Go(func() { errs <- runToEnd(ctx, svc, l) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// stepsSerial measures one run of n steps of kind, driven by the engine in
// this process, against the raw commit rate of a fresh database in the
// same directory, measured just before and just after (their mean, so that
// a drift of the machine's load during the run affects both sides).
func stepsSerial(ctx context.Context, dir, durability string, kind stepKind, n, rawN int) (Figure, error) {
	f := Figure{Name: kind.prefix + "serial_" + durability, Unit: "steps/s",
		target: ratioAtLeast(0.9, "≥ 90% of raw commits/s")}
	svc, l, err := stepHome(ctx, dir, durability, kind, n)
	if err != nil {
		return f, err
	}
	defer svc.Close(ctx)
	before, err := rawCommitRate(ctx, dir, durability, rawN)
	if err != nil {
		return f, err
	}
	c0, cpu0, t0 := commits(svc), cpuTime(), time.Now()
	if err := runToEnd(ctx, svc, l); err != nil {
		return f, err
	}
	elapsed, cpu, c := time.Since(t0), cpuTime()-cpu0, commits(svc)-c0
	after, err := rawCommitRate(ctx, dir, durability, rawN)
	if err != nil {
		return f, err
	}
	f.Value = float64(n) / elapsed.Seconds()
	f.compare(fmt.Sprintf("raw SQLite commits/s (%s)", durability), (before+after)/2)
	f.detail = fmt.Sprintf("1 run × %d steps, %d commits (%.2f/step), CPU %.0f µs/step (%.0f%% of the wall time); raw %d commits before %.0f/s, after %.0f/s",
		n, c, float64(c)/float64(n), perStepUS(cpu, n), 100*cpu.Seconds()/elapsed.Seconds(), rawN, before, after)
	return f, nil
}

// rawCommitRate is the limit the engine is compared with: single-row
// insert transactions in a loop, on a fresh database in dir opened by
// store/sqlite itself so that the driver, the journal mode, the
// synchronous setting and the connection are exactly the store's.
func rawCommitRate(ctx context.Context, dir, durability string, n int) (float64, error) {
	path := filepath.Join(dir, fmt.Sprintf("raw-%d.db", time.Now().UnixNano()))
	st, err := sqlite.Open(ctx, path, sqlite.Options{Durability: durability})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	db := st.Writer()
	if err := growWAL(ctx, db); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE raw (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		return 0, err
	}
	start := time.Now()
	for range n {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return 0, err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO raw (v) VALUES (?)`, "x"); err != nil {
			tx.Rollback()
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// stepsConcurrent runs runs × n steps of kind at once (all started, then
// all awaited) and reports aggregate steps/s and store commits per step,
// against serial, the serial figure of the same kind and durability.
func stepsConcurrent(ctx context.Context, dir, durability string, kind stepKind, runs, n int, serial Figure) (Figure, error) {
	f := Figure{Name: kind.prefix + "concurrent_" + durability, Unit: "steps/s"}
	if durability == sqlite.Normal {
		f.target = valueAtLeast(20000, "≥ 20,000 steps/s")
	} else {
		f.target = ratioAtLeast(10, "≥ 10× serial")
	}
	svc, l, err := stepHome(ctx, dir, durability, kind, n)
	if err != nil {
		return f, err
	}
	defer svc.Close(ctx)
	c0, cpu0, t0 := commits(svc), cpuTime(), time.Now()
	if err := runAll(ctx, svc, l, runs); err != nil {
		return f, err
	}
	elapsed, cpu, c := time.Since(t0), cpuTime()-cpu0, commits(svc)-c0
	steps := runs * n
	perStep := float64(c) / float64(steps)
	f.Value = float64(steps) / elapsed.Seconds()
	f.compare(fmt.Sprintf("serial steps/s (%s); %.2f commits/step", durability, perStep), serial.Value)
	f.detail = fmt.Sprintf("%d runs × %d steps at once, %d commits (%.2f/step, run start and finish included), CPU %.0f µs/step (%.0f%% of the wall time)",
		runs, n, c, perStep, perStepUS(cpu, steps), 100*cpu.Seconds()/elapsed.Seconds())
	return f, nil
}

// perStepUS is a CPU time per step in microseconds.
func perStepUS(cpu time.Duration, steps int) float64 {
	return float64(cpu.Microseconds()) / float64(steps)
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/store/postgres"
)

// appendEffect is the effect of the PostgreSQL figures' effect steps: it
// appends a line to a file, as the DBOS peer's steps do.
type appendEffect struct{ path string }

func (appendEffect) Name() string        { return "append" }
func (appendEffect) Description() string { return "Append a line to the bench's file (benchmark)." }
func (appendEffect) Safety() string      { return action.Mutating }
func (a appendEffect) Run(_ context.Context, call action.Call) (any, error) {
	f, err := os.OpenFile(a.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	_, err = fmt.Fprintf(f, "%s\n", call.IdempotencyKey)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return map[string]any{}, err
}

// appendSteps are the effect steps of the PostgreSQL figures.
var appendSteps = stepKind{prefix: "pg_effect_", uses: "append"}

// openPG opens a service on home whose runs live in the database db, at
// Full durability (synchronous_commit as the server has it, as DBOS
// leaves it), with the bench's actions; effects append to file.
func openPG(ctx context.Context, home, db, file string) (*service.Service, error) {
	svc, err := service.Open(ctx, service.Options{Home: home, Database: db, Durability: postgres.Full})
	if err != nil {
		return nil, err
	}
	svc.Actions.Register(effect{})
	svc.Actions.Register(appendEffect{path: file})
	return svc, nil
}

// pgCount is what a measurement on PostgreSQL committed.
type pgCount struct {
	// Server is PostgreSQL's count of committed transactions in the
	// database (pg_stat_database.xact_commit, reads included), less what
	// opening and closing the service commits.
	Server int64
	// Store is the store's own count of its write transactions.
	Store int64
	// CPU is this process's CPU time over the measurement, Server that of
	// the server processes connected to the database.
	CPU, ServerCPU time.Duration
}

// String says the counts and the CPU times per step, for the table's details.
func (c pgCount) String(steps int) string {
	return fmt.Sprintf("PostgreSQL counted %d commits in the database (%.3f/step, reads included), the store %d write transactions (%.3f/step); CPU per step: this process %.0f µs, the server's processes %.0f µs",
		c.Server, float64(c.Server)/float64(steps), c.Store, float64(c.Store)/float64(steps), perStepUS(c.CPU, steps), perStepUS(c.ServerCPU, steps))
}

// pgMeasure runs fn on a service opened on a fresh database of srv and
// counts what it commits. The service is opened once before (the
// migrations) and once after fn's (the overhead of an open and a close,
// subtracted), each time closed so that PostgreSQL has its sessions'
// counts.
func pgMeasure(ctx context.Context, srv pgServer, dir string, fn func(svc *service.Service) error) (pgCount, error) {
	var c pgCount
	name, db, drop, err := srv.createDB(ctx, "bench_stepwise")
	if err != nil {
		return c, err
	}
	defer drop()
	home, err := newHome(dir, name)
	if err != nil {
		return c, err
	}
	file := filepath.Join(dir, name+"-effects")
	defer os.Remove(file)
	openClose := func(fn func(svc *service.Service) error) (int64, error) {
		svc, err := openPG(ctx, home, db, file)
		if err != nil {
			return 0, err
		}
		if fn != nil {
			s0 := svc.Store.(*postgres.Store).Stats().Commits
			b0, berr := srv.backendCPU(ctx, name)
			cpu0 := cpuTime()
			err = fn(svc)
			c.CPU = cpuTime() - cpu0
			c.Store = svc.Store.(*postgres.Store).Stats().Commits - s0
			if b1, berr1 := srv.backendCPU(ctx, name); berr == nil && berr1 == nil {
				c.ServerCPU = serverCPU(b0, b1)
			}
		}
		if cerr := svc.Close(ctx); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
		return srv.commits(ctx, name)
	}
	c0, err := openClose(nil)
	if err != nil {
		return c, err
	}
	c1, err := openClose(fn)
	if err != nil {
		return c, err
	}
	c2, err := openClose(nil)
	if err != nil {
		return c, err
	}
	c.Server = c1 - c0 - (c2 - c1)
	return c, nil
}

// pgSteps runs runs runs of n steps of kind at once on a fresh database
// and returns steps/s and the commits.
func pgSteps(ctx context.Context, srv pgServer, dir string, kind stepKind, runs, n int) (float64, pgCount, error) {
	var rate float64
	c, err := pgMeasure(ctx, srv, dir, func(svc *service.Service) error {
		l, err := svc.Parse(stepWorkflow(kind, n))
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := runAll(ctx, svc, l, runs); err != nil {
			return err
		}
		rate = float64(runs*n) / time.Since(t0).Seconds()
		return nil
	})
	return rate, c, err
}

// pgEffectRuns times runs of a 10-step workflow of effect steps, one after
// another, from the start to the end of each.
func pgEffectRuns(ctx context.Context, srv pgServer, dir string, runs int) (Latencies, pgCount, error) {
	var lat Latencies
	c, err := pgMeasure(ctx, srv, dir, func(svc *service.Service) error {
		l, err := svc.Parse(stepWorkflow(appendSteps, 10))
		if err != nil {
			return err
		}
		for range runs {
			t0 := time.Now()
			if err := runToEnd(ctx, svc, l); err != nil {
				return err
			}
			lat = append(lat, time.Since(t0))
		}
		return nil
	})
	return lat, c, err
}

// pgContinues answers n questions of ask-loop runs in this process, one
// at a time, as run_continue does behind the MCP surface: the answer, then
// the run's view once it asks again.
func pgContinues(ctx context.Context, srv pgServer, dir string, n int) (Latencies, pgCount, error) {
	var lat Latencies
	c, err := pgMeasure(ctx, srv, dir, func(svc *service.Service) error {
		l, err := svc.LoadWorkflow("ask-loop")
		if err != nil {
			return err
		}
		for len(lat) < n {
			id, err := svc.StartRun(ctx, l, nil, false)
			if err != nil {
				return err
			}
			v, err := svc.AwaitBrief(ctx, id, 10*time.Second, nil, nil)
			if err != nil {
				return err
			}
			for i := range min(loopLength, n-len(lat)) {
				if v.Pause == nil {
					return fmt.Errorf("run %s does not wait: %s", id, v.Status)
				}
				t0 := time.Now()
				sub := svc.Subscribe()
				res, err := svc.ContinueFromAgent(ctx, v.Pause.Token, i)
				if err == nil {
					v, err = svc.AwaitContinued(ctx, id, res, 10*time.Second, sub, nil)
				}
				sub.Close()
				if err != nil {
					return err
				}
				lat = append(lat, time.Since(t0))
			}
		}
		return nil
	})
	return lat, c, err
}

// pgContinueStdio is continue_stdio on PostgreSQL: the built server over
// stdio with --database, Full durability.
func pgContinueStdio(ctx context.Context, srv pgServer, bin, dir string, n int) (Latencies, error) {
	name, db, drop, err := srv.createDB(ctx, "bench_stepwise")
	if err != nil {
		return nil, err
	}
	defer drop()
	home, err := newHome(dir, name)
	if err != nil {
		return nil, err
	}
	cs, err := stdioWith(ctx, bin, home, "--durability", postgres.Full, "--database", db, "serve")
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	return continueLoop(ctx, cs, n)
}

// pgNames lists the figures of the PostgreSQL section, for -only.
var pgNames = strings.Fields(`pg_steps_serial pg_steps_concurrent pg_effect_10step_p50_ms pg_effect_10step_p99_ms
	pg_effect_steps_serial pg_effect_commits_serial pg_effect_steps_concurrent pg_effect_commits_concurrent pg_continue_p50_ms pg_continue_p99_ms
	pg_continue_stdio_p50_ms pg_continue_stdio_p99_ms pg_replicas_3 pg_replicas_3_effect`)

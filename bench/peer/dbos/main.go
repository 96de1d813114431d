// Command dbos is the DBOS Transact peer of stepwise's PostgreSQL figures
// (bench -peer dbos): the same shapes, run with DBOS Transact for Go on
// the database it is given, printed as one JSON object on stdout.
//
//	go run . -db postgres://…/bench_dbos_x -shape serial -steps 1000
//	go run . -db … -shape concurrent -runs 64 -steps 100
//	go run . -db … -shape effect -steps 10 -repeat 200 -file /tmp/effects
//	go run . -db … -shape continue -repeat 300
//	go run . -db … -shape none        start, one warm-up workflow, stop
//
// With -file, the steps of serial and concurrent append to the file, as
// effect's do.
//
// It is its own module so that stepwise's does not depend on DBOS.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
)

// Result is what the program prints.
type Result struct {
	Shape     string  `json:"shape"`
	Runs      int     `json:"runs"`
	Steps     int     `json:"steps"` // per workflow
	Seconds   float64 `json:"seconds"`
	StepsPerS float64 `json:"steps_per_s"`
	// P50Ms and P99Ms are the latencies of whole workflows (effect).
	P50Ms float64 `json:"p50_ms,omitempty"`
	P99Ms float64 `json:"p99_ms,omitempty"`
	// LatMs are the latencies themselves, for a caller that merges rounds.
	LatMs []float64 `json:"lat_ms,omitempty"`
	// CPUS is this process's CPU time over the shape, ServerCPUS that of
	// the server processes connected to its database (read from /proc:
	// the server runs on this machine), in seconds.
	CPUS       float64 `json:"cpu_s"`
	ServerCPUS float64 `json:"server_cpu_s"`
}

type input struct {
	Steps int    `json:"steps"`
	File  string `json:"file"`
}

// tiny is the body of a serial or concurrent step: it does nothing.
func tiny(context.Context) (int, error) { return 1, nil }

// steps is a workflow of in.Steps steps with tiny bodies, or of effects
// when in.File is set.
func steps(ctx dbos.Context, in input) (int, error) {
	if in.File != "" {
		return effects(ctx, in)
	}
	sum := 0
	for range in.Steps {
		v, err := dbos.RunAsStep(ctx, tiny, dbos.WithStepName("tiny"))
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// effects is a workflow of in.Steps steps that each append a line to
// in.File, as the effect steps of stepwise's figure do.
func effects(ctx dbos.Context, in input) (int, error) {
	for i := range in.Steps {
		_, err := dbos.RunAsStep(ctx, func(context.Context) (int, error) {
			return appendLine(in.File, i)
		}, dbos.WithStepName("append"))
		if err != nil {
			return 0, err
		}
	}
	return in.Steps, nil
}

// asker is the ask-loop of stepwise's run_continue figure in DBOS's
// terms: it opens a question (the event asked-0), then in.Steps times
// receives an answer (Recv) and opens the next question (asked-i+1).
func asker(ctx dbos.Context, in input) (int, error) {
	if err := dbos.SetEvent(ctx, "asked-0", 0); err != nil {
		return 0, err
	}
	for i := range in.Steps {
		v, err := dbos.Recv[int](ctx, "answer", time.Minute)
		if err != nil {
			return 0, err
		}
		if err := dbos.SetEvent(ctx, fmt.Sprintf("asked-%d", i+1), v); err != nil {
			return 0, err
		}
	}
	return in.Steps, nil
}

// appendLine appends one line to the file at path.
func appendLine(path string, i int) (int, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	_, err = fmt.Fprintf(f, "step %d\n", i)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return i, err
}

func main() {
	var db, shape, file string
	var runs, n, repeat int
	flag.StringVar(&db, "db", "", "PostgreSQL URL of DBOS's system database")
	flag.StringVar(&shape, "shape", "serial", "serial, concurrent, effect, continue or none")
	flag.IntVar(&runs, "runs", 64, "concurrent workflows (concurrent)")
	flag.IntVar(&n, "steps", 1000, "steps per workflow")
	flag.IntVar(&repeat, "repeat", 200, "workflows timed one after another (effect), answers timed (continue)")
	flag.StringVar(&file, "file", "", "the file effect steps append to (serial and concurrent: steps are effects)")
	flag.Parse()
	if err := run(db, shape, file, runs, n, repeat); err != nil {
		fmt.Fprintln(os.Stderr, "dbos peer:", err)
		os.Exit(1)
	}
}

func run(db, shape, file string, runs, n, repeat int) error {
	if db == "" {
		return fmt.Errorf("-db is required")
	}
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{
		AppName:     "stepwise-bench-peer",
		DatabaseURL: db,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		// The smallest batching of event notifications DBOS allows (the
		// default is 10ms), so that continue measures DBOS at its best.
		NotificationCoalesceInterval: time.Millisecond,
	})
	if err != nil {
		return err
	}
	dbos.RegisterWorkflow(ctx, steps)
	dbos.RegisterWorkflow(ctx, effects)
	dbos.RegisterWorkflow(ctx, asker)
	if err := dbos.Launch(ctx); err != nil {
		return err
	}
	defer func() { _ = dbos.Shutdown(ctx, 10*time.Second) }()
	// One workflow before the timing: the pool's connections and the
	// first statements' plans, as stepwise's figures start warm.
	if err := once(ctx, steps, input{Steps: 2}); err != nil {
		return err
	}
	res := Result{Shape: shape, Runs: 1, Steps: n}
	b0, berr := backendCPU(db)
	cpu0 := cpuTime()
	switch shape {
	case "serial":
		t0 := time.Now()
		if err := once(ctx, steps, input{Steps: n, File: file}); err != nil {
			return err
		}
		res.Seconds = time.Since(t0).Seconds()
	case "concurrent":
		res.Runs = runs
		t0 := time.Now()
		errs := make(chan error, runs)
		var wg sync.WaitGroup
		for range runs {
			wg.Go(func() { errs <- once(ctx, steps, input{Steps: n, File: file}) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				return err
			}
		}
		res.Seconds = time.Since(t0).Seconds()
	case "effect":
		if file == "" {
			return fmt.Errorf("-file is required for effect")
		}
		res.Runs = repeat
		lat := make([]time.Duration, 0, repeat)
		t0 := time.Now()
		for range repeat {
			s := time.Now()
			if err := once(ctx, effects, input{Steps: n, File: file}); err != nil {
				return err
			}
			lat = append(lat, time.Since(s))
		}
		res.Seconds = time.Since(t0).Seconds()
		res.setLatencies(lat)
	case "continue":
		lat, elapsed, err := continues(ctx, repeat)
		if err != nil {
			return err
		}
		res.Runs, res.Steps, res.Seconds = 1, repeat, elapsed.Seconds()
		res.setLatencies(lat)
	case "none":
		res.Runs, res.Steps = 0, 0
	default:
		return fmt.Errorf("unknown shape %q", shape)
	}
	res.CPUS = (cpuTime() - cpu0).Seconds()
	if b1, berr1 := backendCPU(db); berr == nil && berr1 == nil {
		for pid, t := range b1 {
			res.ServerCPUS += (t - b0[pid]).Seconds()
		}
	}
	if res.Seconds > 0 {
		res.StepsPerS = float64(res.Runs*res.Steps) / res.Seconds
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// loopLength is how many questions one asker answers before the next
// starts, as in stepwise's figure.
const loopLength = 100

// continues answers n questions of asker workflows, one at a time: each
// is a Send of the answer and a GetEvent of the next question, timed.
func continues(ctx dbos.Context, n int) ([]time.Duration, time.Duration, error) {
	var lat []time.Duration
	var elapsed time.Duration
	for len(lat) < n {
		k := min(loopLength, n-len(lat))
		h, err := dbos.RunWorkflow(ctx, asker, input{Steps: k})
		if err != nil {
			return nil, 0, err
		}
		id := h.GetWorkflowID()
		if _, err := dbos.GetEvent[int](ctx, id, "asked-0", time.Minute); err != nil {
			return nil, 0, err
		}
		t0 := time.Now()
		for i := range k {
			s := time.Now()
			if err := dbos.Send(ctx, id, i, "answer"); err != nil {
				return nil, 0, err
			}
			if _, err := dbos.GetEvent[int](ctx, id, fmt.Sprintf("asked-%d", i+1), time.Minute); err != nil {
				return nil, 0, err
			}
			lat = append(lat, time.Since(s))
		}
		elapsed += time.Since(t0)
		if _, err := h.GetResult(); err != nil {
			return nil, 0, err
		}
	}
	return lat, elapsed, nil
}

// setLatencies sets the latency fields of r from lat.
func (r *Result) setLatencies(lat []time.Duration) {
	r.P50Ms, r.P99Ms = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	for _, d := range lat {
		r.LatMs = append(r.LatMs, ms(d))
	}
}

// once runs one workflow of fn and waits for its result.
func once(ctx dbos.Context, fn dbos.Workflow[input, int], in input) error {
	h, err := dbos.RunWorkflow(ctx, fn, in)
	if err != nil {
		return err
	}
	_, err = h.GetResult()
	return err
}

// percentile is the p-th percentile by the nearest-rank method, as the
// bench computes it.
func percentile(l []time.Duration, p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// backendCPU is the CPU time of each server process connected to the
// database of db (this one's own connection left out), by pid.
func backendCPU(db string) (map[int32]time.Duration, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return nil, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	cpu := map[int32]time.Duration{}
	for _, pid := range pids {
		cpu[pid] = procCPU(pid)
	}
	return cpu, nil
}

// procCPU is a process's CPU time from /proc/PID/stat (0 if unreadable).
func procCPU(pid int32) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ
}

// cpuTime is this process's CPU time (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

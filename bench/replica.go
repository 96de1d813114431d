package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"stepwise.dev/stepwise/internal/service"
)

// replicaFlag makes the bench binary a replica of pg_replicas_3 instead
// of measuring: `bench -pg-replica DB HOME RUNS STEPS KIND` opens a
// service on the database DB, prints "ready", waits for a line on stdin,
// then starts RUNS runs of STEPS steps of KIND (noop or append) at once,
// waits until all succeeded and prints {"seconds": …}.
//
// Today each replica drives the runs it starts. Once the engine claims
// runs by lease, the parent starts all runs detached through one replica
// and each replica claims what it can: only replicaMain's loop changes,
// not how the figure is measured.
const replicaFlag = "-pg-replica"

// replicaMain is the replica process.
func replicaMain(args []string) {
	if err := replica(context.Background(), args, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench replica:", err)
		os.Exit(1)
	}
}

func replica(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	if len(args) != 5 {
		return fmt.Errorf("want DB HOME RUNS STEPS KIND, got %q", args)
	}
	kind := noopSteps
	switch args[4] {
	case noopSteps.uses:
	case appendSteps.uses:
		kind = appendSteps
	default:
		return fmt.Errorf("KIND is %s or %s, not %q", noopSteps.uses, appendSteps.uses, args[4])
	}
	runs, err1 := strconv.Atoi(args[2])
	steps, err2 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("RUNS and STEPS are numbers: %q", args)
	}
	svc, err := openPG(ctx, args[1], args[0], filepath.Join(args[1], "effects"))
	if err != nil {
		return err
	}
	defer svc.Close(ctx)
	l, err := svc.Parse(stepWorkflow(kind, steps))
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "ready")
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return err
	}
	t0 := time.Now()
	if err := runAll(ctx, svc, l, runs); err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(map[string]float64{"seconds": time.Since(t0).Seconds()})
}

// replicaRate shares runs runs of steps steps of kind among k replica
// processes on the database db and returns the steps/s of all together:
// from the moment all are told to start until the last is done.
func replicaRate(ctx context.Context, db, dir string, kind stepKind, k, runs, steps int) (float64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	type proc struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	var procs []proc
	defer func() {
		for _, p := range procs {
			p.in.Close()
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	}()
	for i := range k {
		home, err := newHome(dir, fmt.Sprintf("replica-%d-of-%d", i, k))
		if err != nil {
			return 0, err
		}
		share := runs / k
		if i < runs%k {
			share++
		}
		cmd := exec.CommandContext(ctx, self, replicaFlag, db, home, strconv.Itoa(share), strconv.Itoa(steps), kind.uses)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return 0, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		p := proc{cmd: cmd, in: in, out: bufio.NewReader(out)}
		procs = append(procs, p)
		if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
			return 0, fmt.Errorf("replica %d: %q %v", i, line, err)
		}
	}
	t0 := time.Now()
	for _, p := range procs {
		if _, err := io.WriteString(p.in, "go\n"); err != nil {
			return 0, err
		}
	}
	for i, p := range procs {
		var res struct{ Seconds float64 }
		if err := json.NewDecoder(p.out).Decode(&res); err != nil {
			return 0, fmt.Errorf("replica %d: %w", i, err)
		}
	}
	return float64(runs*steps) / time.Since(t0).Seconds(), nil
}

// pgReplicas measures one replica, then k, then k, then one (steps of
// kind), all on one
// fresh database (later rounds find more rows), and returns the mean rate
// of each.
func pgReplicas(ctx context.Context, srv pgServer, dir string, kind stepKind, k, runs, steps int) (one, many float64, err error) {
	_, db, drop, err := srv.createDB(ctx, "bench_stepwise")
	if err != nil {
		return 0, 0, err
	}
	defer drop()
	// Migrate once before any replica starts.
	home, err := newHome(dir, "replica-migrate")
	if err != nil {
		return 0, 0, err
	}
	svc, err := service.Open(ctx, service.Options{Home: home, Database: db})
	if err != nil {
		return 0, 0, err
	}
	if err := svc.Close(ctx); err != nil {
		return 0, 0, err
	}
	for _, n := range []int{1, k, k, 1} {
		r, err := replicaRate(ctx, db, dir, kind, n, runs, steps)
		if err != nil {
			return 0, 0, err
		}
		if n == 1 {
			one += r / 2
		} else {
			many += r / 2
		}
	}
	return one, many, nil
}

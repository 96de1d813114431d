package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/store/postgres"
)

// DBOSPeer is the program of bench/peer/dbos (DBOS Transact for Go doing
// the PostgreSQL shapes) built into a temporary directory, or why it
// could not be built.
type DBOSPeer struct {
	bin    string
	reason string // non-empty: unavailable
}

// Available reports whether the peer can run.
func (p *DBOSPeer) Available() bool { return p != nil && p.reason == "" }

// buildDBOSPeer builds bench/peer/dbos, its own module, into dir. Without
// the Go module proxy (or a module cache holding DBOS) it cannot: the
// peer is then unavailable, never the benchmark failed.
func buildDBOSPeer(ctx context.Context, root, dir string) *DBOSPeer {
	p := &DBOSPeer{bin: filepath.Join(dir, "dbos-peer")}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", p.bin, ".")
	cmd.Dir = filepath.Join(root, "bench", "peer", "dbos")
	if out, err := cmd.CombinedOutput(); err != nil {
		p.reason = "go build bench/peer/dbos failed (is the Go module proxy reachable?): " + firstLine(string(out), err)
	}
	return p
}

// PeerResult is what the peer prints for one shape.
type PeerResult struct {
	Shape     string    `json:"shape"`
	Runs      int       `json:"runs"`
	Steps     int       `json:"steps"`
	Seconds   float64   `json:"seconds"`
	StepsPerS float64   `json:"steps_per_s"`
	P50Ms     float64   `json:"p50_ms"`
	P99Ms     float64   `json:"p99_ms"`
	LatMs     []float64 `json:"lat_ms"`
	// CPUS and ServerCPUS are the CPU seconds of the peer's process and
	// of the server's processes connected to its database over the shape.
	CPUS       float64 `json:"cpu_s"`
	ServerCPUS float64 `json:"server_cpu_s"`
	// Commits is PostgreSQL's count of transactions committed in the
	// peer's database while the shape ran (see pgServer.commits), less
	// what starting and stopping DBOS costs.
	Commits int64 `json:"-"`
}

// run runs the peer on the database db (named name on srv) with args and
// counts the commits PostgreSQL saw in that database, less overhead (what
// a run of the peer that measures nothing commits).
func (p *DBOSPeer) run(ctx context.Context, srv pgServer, name, db string, overhead int64, args ...string) (PeerResult, error) {
	var res PeerResult
	c0, err := srv.commits(ctx, name)
	if err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, p.bin, append([]string{"-db", db}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("dbos peer %v: %w: %s", args, err, firstLine(stderr.String(), err))
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("dbos peer %v printed %q: %w", args, out, err)
	}
	c1, err := srv.commits(ctx, name)
	if err != nil {
		return res, err
	}
	res.Commits = c1 - c0 - overhead
	return res, nil
}

// cpu says the CPU time per step of the peer and of the server for it.
func (r PeerResult) cpu(steps int) string {
	return fmt.Sprintf("CPU per step: its process %.0f µs, the server's processes %.0f µs", 1e6*r.CPUS/float64(steps), 1e6*r.ServerCPUS/float64(steps))
}

// latencies are the peer's latencies.
func (r PeerResult) latencies() Latencies {
	lat := make(Latencies, len(r.LatMs))
	for i, v := range r.LatMs {
		lat[i] = time.Duration(v * float64(time.Millisecond))
	}
	return lat
}

// pgServer is the PostgreSQL server of the figures, reached through the
// URL of a database on it where databases may be created (the tests').
type pgServer struct{ raw string }

// createDB creates a fresh database prefix_<random> and returns its name,
// a URL for it and a function that drops it.
func (s pgServer) createDB(ctx context.Context, prefix string) (string, string, func(), error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := prefix + "_" + hex.EncodeToString(b[:])
	if err := s.exec(ctx, `CREATE DATABASE `+name); err != nil {
		return "", "", nil, err
	}
	drop := func() { _ = s.exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`) }
	u, err := url.Parse(s.raw)
	if err != nil {
		drop()
		return "", "", nil, err
	}
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return name, u.String(), drop, nil
}

func (s pgServer) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.raw)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", postgres.Redact(s.raw), err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// commits is pg_stat_database.xact_commit of the database name: every
// transaction committed in it, reads included. A session reports its
// counts when it ends (and at most once a second while it works), so
// commits waits until no session is connected to name: call it after
// closing the pools that used it.
func (s pgServer) commits(ctx context.Context, name string) (int64, error) {
	conn, err := pgx.Connect(ctx, s.raw)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(15 * time.Second)
	for {
		var backends int
		var commits int64
		if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			return 0, err
		}
		err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = $1),
			coalesce((SELECT xact_commit FROM pg_stat_database WHERE datname = $1), 0)`, name).Scan(&backends, &commits)
		if err != nil {
			return 0, err
		}
		if backends == 0 {
			return commits, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("database %s: %d sessions still connected; cannot count its commits", name, backends)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// dbosRunner runs the peer's shapes on one fresh database.
type dbosRunner struct {
	peer     *DBOSPeer
	srv      pgServer
	name, db string
	// idle is what a start and stop of the peer commits (subtracted).
	idle int64
	// file is where the peer's effect steps append.
	file string
	drop func()
}

// newDBOSRunner creates the peer's database and measures its overhead:
// the first start migrates the database, the second is the overhead
// subtracted from each shape's count of commits (start, one warm-up
// workflow of 2 steps, stop).
func newDBOSRunner(ctx context.Context, p *DBOSPeer, srv pgServer, tmp string) (*dbosRunner, error) {
	name, db, drop, err := srv.createDB(ctx, "bench_dbos")
	if err != nil {
		return nil, err
	}
	d := &dbosRunner{peer: p, srv: srv, name: name, db: db, file: filepath.Join(tmp, name+"-effects"), drop: drop}
	if _, err := d.shape(ctx, "-shape", "none"); err != nil {
		d.close()
		return nil, err
	}
	idle, err := d.shape(ctx, "-shape", "none")
	if err != nil {
		d.close()
		return nil, err
	}
	d.idle = idle.Commits
	return d, nil
}

// shape runs the peer with args.
func (d *dbosRunner) shape(ctx context.Context, args ...string) (PeerResult, error) {
	return d.peer.run(ctx, d.srv, d.name, d.db, d.idle, args...)
}

// concurrent (one run of it is serial), effects and continues are the
// shapes.
func (d *dbosRunner) concurrent(ctx context.Context, runs, n int, effects bool) (PeerResult, error) {
	args := []string{"-shape", "concurrent", "-runs", strconv.Itoa(runs), "-steps", strconv.Itoa(n)}
	if effects {
		args = append(args, "-file", d.file)
	}
	return d.shape(ctx, args...)
}

func (d *dbosRunner) effects(ctx context.Context, repeat int) (PeerResult, error) {
	return d.shape(ctx, "-shape", "effect", "-steps", "10", "-repeat", strconv.Itoa(repeat), "-file", d.file)
}

func (d *dbosRunner) continues(ctx context.Context, n int) (PeerResult, error) {
	return d.shape(ctx, "-shape", "continue", "-repeat", strconv.Itoa(n))
}

// close drops the peer's database and its file.
func (d *dbosRunner) close() {
	d.drop()
	_ = os.Remove(d.file)
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// backendCPU is the CPU time (user and system) of each server process
// connected to the database name, by pid, read from /proc: the server
// runs on this machine in the figures (the time is zero for a process
// /proc does not show).
func (s pgServer) backendCPU(ctx context.Context, name string) (map[int]time.Duration, error) {
	conn, err := pgx.Connect(ctx, s.raw)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, name)
	if err != nil {
		return nil, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	cpu := map[int]time.Duration{}
	for _, pid := range pids {
		cpu[int(pid)] = procCPU(int(pid))
	}
	return cpu, nil
}

// procCPU is a process's CPU time from /proc/PID/stat (0 if unreadable).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command may hold spaces: the fields after it start past ')'.
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}

// serverCPU is the CPU time the database's server processes spent between
// two readings of backendCPU (a process that appeared in between counts
// whole).
func serverCPU(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}

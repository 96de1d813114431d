// Command bench is stepwise's performance instrument: one command that
// measures the figures of the issue "Performance" and prints each beside
// the limit or the peer it is compared with, both measured in the same run.
//
//	go run ./bench -quick          reduced sizes, well under two minutes
//	go run ./bench -full           the sizes (10,000 waiting runs, 100,000 stored)
//	go run ./bench -smoke          the smallest sizes: proves every measurement works (CI)
//	go run ./bench -quick -json    the same figures as a JSON array
//	go run ./bench -quick -cpuprofile DIR   CPU profiles of the step loops and of the MCP calls instead
//	go run ./bench -peer dbos      also stepwise on PostgreSQL beside DBOS Transact (bench/peer/dbos)
//
// It builds cmd/stepwise into a temporary directory, measures the engine
// in this process and the built server over stdio and HTTP from its own
// JSON-RPC client (wire.go), and compares the tool calls with a minimal TypeScript SDK server
// (bench/peer; "peer unavailable" without node and npm). Missing a target
// is reported, never an error. docs/PERFORMANCE.md explains every figure.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 3 && (os.Args[1] == floorFlag || os.Args[1] == floorHTTPFlag) {
		floorMain(os.Args[2], os.Args[1] == floorHTTPFlag)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == replicaFlag {
		replicaMain(os.Args[2:])
		return
	}
	var quick, full, smoke, asJSON bool
	var profileDir, only, peer string
	flag.BoolVar(&quick, "quick", false, "reduced sizes (default)")
	flag.BoolVar(&full, "full", false, "the issue's sizes: 10,000 waiting runs, 100,000 stored runs")
	flag.BoolVar(&smoke, "smoke", false, "the smallest sizes: proves that every measurement works, says nothing about speed")
	flag.BoolVar(&asJSON, "json", false, "print the figures as a JSON array")
	flag.StringVar(&only, "only", "", "measure only the figures whose names start with one of these comma-separated prefixes (e.g. toolcall,continue)")
	flag.StringVar(&peer, "peer", "", "dbos: also measure stepwise on PostgreSQL ($"+envPostgres+") beside DBOS Transact for Go doing the same shapes (bench/peer/dbos, built with the Go module proxy)")
	flag.StringVar(&profileDir, "cpuprofile", "", "instead of the figures, write CPU profiles of the step loops, of run_get over stdio and over HTTP, and of run_continue into this directory")
	flag.Parse()
	if peer != "" && peer != peerDBOS {
		fmt.Fprintf(os.Stderr, "bench: -peer %q: the only peer is %q\n", peer, peerDBOS)
		os.Exit(2)
	}
	sz := quickSizes
	switch {
	case full && (quick || smoke), quick && smoke:
		fmt.Fprintln(os.Stderr, "bench: give one of -quick, -full, -smoke")
		os.Exit(2)
	case full:
		sz = fullSizes
	case smoke:
		sz = smokeSizes
	}
	ctx := context.Background()
	if profileDir != "" {
		if err := profileAll(ctx, profileDir, sz, peer == peerDBOS, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	env := describe(sz)
	figs, err := measure(ctx, sz, splitList(only), peer, os.Stderr)
	env.LoadAfter = loadAverage()
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(figs)
	} else {
		printTable(os.Stdout, env, figs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// measure runs every measurement in a temporary directory and returns the
// figures in the order of the issue. A measurement that fails leaves its
// figures at zero with the error as their detail; the first error is
// returned after all have run.
func measure(ctx context.Context, sz Sizes, only []string, peerName string, progress io.Writer) ([]Figure, error) {
	tmp, err := os.MkdirTemp("", "stepwise-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	r := &runner{progress: progress, only: only}
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	var bin string
	if r.timed("go build ./cmd/stepwise", func() error { bin, err = buildBinary(ctx, tmp); return err }); r.err != nil {
		return nil, r.err
	}
	var peer *Peer
	r.timed("TypeScript peer", func() error {
		if peer = findPeer(ctx, root, true); !peer.Available() {
			fmt.Fprintf(progress, " unavailable: %s;", peer.reason)
		}
		return nil
	})
	homes := map[string]string{}
	for _, name := range []string{"noop-serial-full", "noop-serial-normal", "noop-concurrent-full", "noop-concurrent-normal",
		"effect-serial-full", "effect-serial-normal", "effect-concurrent-full", "effect-concurrent-normal", "noop-serial-postgres", "effect-serial-postgres", "continue", "toolcall-stdio", "toolcall-http", "spawn", "waiting", "stored"} {
		if homes[name], err = newHome(tmp, name); err != nil {
			return nil, err
		}
	}
	home := func(name string) string {
		h, ok := homes[name]
		if !ok {
			panic("bench: no home " + name) // never the user's: "" would be ~/.stepwise
		}
		return h
	}
	d := serverDurability

	for _, kind := range []stepKind{noopSteps, effectSteps} {
		serial := map[string]Figure{}
		for _, dur := range []string{"full", "normal"} {
			serial[dur] = r.one(kind.prefix+"serial_"+dur, func() (Figure, error) {
				return stepsSerial(ctx, home(kind.uses+"-serial-"+dur), dur, kind, sz.SerialSteps, sz.RawCommits)
			})
		}
		for _, dur := range []string{"full", "normal"} {
			r.one(kind.prefix+"concurrent_"+dur, func() (Figure, error) {
				return stepsConcurrent(ctx, home(kind.uses+"-concurrent-"+dur), dur, kind, sz.ConcurrentRuns, sz.ConcurrentSteps, serial[dur])
			})
		}
	}
	if pg := postgresURL(); pg != "" {
		for _, kind := range []stepKind{noopSteps, effectSteps} {
			r.one(kind.prefix+"serial_postgres", func() (Figure, error) {
				return stepsSerialPostgres(ctx, home(kind.uses+"-serial-postgres"), pg, kind, sz.SerialSteps, sz.RawCommits)
			})
		}
	}
	if peerName == peerDBOS {
		measurePG(ctx, r, root, bin, tmp, sz.PG)
	}
	r.two("continue_stdio_p50_ms", "continue_stdio_p99_ms", func() (Figure, Figure, error) {
		return continueStdio(ctx, bin, home("continue"), d, sz.Continues)
	})
	r.one("toolcall_stdio", func() (Figure, error) {
		h := home("toolcall-stdio")
		return toolcall(ctx, "toolcall_stdio", "stdio", sz.Calls,
			func(ctx context.Context) (*Session, error) { return stepwiseStdio(ctx, bin, h, d) },
			func(ctx context.Context) (*Session, error) { return peer.stdio(ctx) },
			func(ctx context.Context, result Result, n int) (Load, Load, error) {
				return floorLoads(ctx, tmp, false, result, n)
			})
	})
	r.one("toolcall_http", func() (Figure, error) {
		h := home("toolcall-http")
		return toolcall(ctx, "toolcall_http", "streamable HTTP", sz.Calls,
			func(ctx context.Context) (*Session, error) { return stepwiseHTTP(ctx, bin, h, d) },
			func(ctx context.Context) (*Session, error) { return peer.http(ctx) },
			func(ctx context.Context, result Result, n int) (Load, Load, error) {
				return floorLoads(ctx, tmp, true, result, n)
			})
	})
	r.two("spawn_ms", "idle_rss_mb", func() (Figure, Figure, error) {
		return spawnFigures(ctx, bin, home("spawn"), d, sz.Spawns, peer)
	})
	r.one("waiting_10k_rss_mb", func() (Figure, error) {
		return waitingRSS(ctx, bin, home("waiting"), d, sz.Waiting)
	})
	r.two("run_get_p99_ms_100k", "run_list_p99_ms_100k", func() (Figure, Figure, error) {
		return storedReads(ctx, bin, home("stored"), d, sz.Stored, sz.Reads)
	})
	return r.figs, r.err
}

// serverDurability is the --durability of the servers measured over MCP.
// Normal, because the MCP figures are about the protocol path and the
// read path; what Full costs per commit is what steps_serial_full shows.
const serverDurability = "normal"

// runner runs measurements one after another, printing progress and
// keeping the first error.
type runner struct {
	progress io.Writer
	only     []string // prefixes of the figures to measure (none: all)
	figs     []Figure
	err      error
}

func (r *runner) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// selected reports whether any of names is to be measured.
func (r *runner) selected(names ...string) bool {
	if len(r.only) == 0 {
		return true
	}
	for _, n := range names {
		for _, p := range r.only {
			if strings.HasPrefix(n, p) {
				return true
			}
		}
	}
	return false
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (r *runner) one(name string, fn func() (Figure, error)) Figure {
	var f Figure
	if !r.selected(name) {
		return f
	}
	r.timed(name, func() error {
		var err error
		f, err = fn()
		f.Name = name
		r.add(&f, err)
		return err
	})
	return f
}

func (r *runner) two(a, b string, fn func() (Figure, Figure, error)) {
	if !r.selected(a, b) {
		return
	}
	r.timed(a+", "+b, func() error {
		f, g, err := fn()
		f.Name, g.Name = a, b
		r.add(&f, err)
		r.add(&g, err)
		return err
	})
}

func (r *runner) add(f *Figure, err error) {
	if err != nil {
		f.Value, f.detail = 0, "error: "+err.Error()
	}
	r.figs = append(r.figs, *f)
}

func (r *runner) timed(what string, fn func() error) {
	fmt.Fprintf(r.progress, "bench: %s …", what)
	t0 := time.Now()
	err := fn()
	if err != nil {
		fmt.Fprintf(r.progress, " error after %s: %v\n", since(t0), err)
		r.fail(fmt.Errorf("%s: %w", what, err))
		return
	}
	fmt.Fprintf(r.progress, " %s\n", since(t0))
}

// moduleRoot is the directory of stepwise's go.mod (bench/peer lives
// under it).
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run bench inside the stepwise module")
	}
	return filepath.Dir(mod), nil
}

package main

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// These tests prove that every measurement produces a finite positive
// number at the smallest sizes. They assert nothing about speed: the
// figures are the benchmark's to report, not a test's to judge.

func finitePositive(t *testing.T, f Figure) {
	t.Helper()
	if f.Value <= 0 || math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
		t.Errorf("%s = %v %s, want a finite positive number (%s)", f.Name, f.Value, f.Unit, f.detail)
	}
	if f.BaselineValue != nil && (*f.BaselineValue <= 0 || math.IsInf(*f.BaselineValue, 0)) {
		t.Errorf("%s: baseline %v", f.Name, *f.BaselineValue)
	}
	if f.Baseline == "" {
		t.Errorf("%s: no baseline named", f.Name)
	}
	t.Logf("%s = %.3g %s (%s)", f.Name, f.Value, f.Unit, f.Result())
}

func TestStepFigures(t *testing.T) {
	ctx := context.Background()
	sz := smokeSizes
	for _, kind := range []stepKind{noopSteps, effectSteps} {
		for _, d := range []string{"full", "normal"} {
			t.Run(kind.uses+"/"+d, func(t *testing.T) {
				testStepFigures(t, ctx, kind, d, sz)
			})
		}
	}
}

func testStepFigures(t *testing.T, ctx context.Context, kind stepKind, d string, sz Sizes) {
	dir := t.TempDir()
	serial, err := stepsSerial(ctx, dir+"/serial", d, kind, sz.SerialSteps, sz.RawCommits)
	if err != nil {
		t.Fatal(err)
	}
	finitePositive(t, serial)
	conc, err := stepsConcurrent(ctx, dir+"/concurrent", d, kind, 4, sz.ConcurrentSteps, serial)
	if err != nil {
		t.Fatal(err)
	}
	finitePositive(t, conc)
	if !strings.Contains(conc.Baseline, "commits/step") {
		t.Errorf("baseline %q does not give commits per step", conc.Baseline)
	}
}

// TestServerFigures measures the built binary at the smoke sizes, with
// the TypeScript peer when bench/peer/node_modules is installed.
func TestServerFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts servers")
	}
	ctx := context.Background()
	sz := smokeSizes
	tmp := t.TempDir()
	bin, err := buildBinary(ctx, tmp)
	if err != nil {
		t.Fatal(err)
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peer := findPeer(ctx, root, false)
	home := func(name string) string {
		h, err := newHome(tmp, name)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	d := serverDurability
	t.Run("continue", func(t *testing.T) {
		p50, p99, err := continueStdio(ctx, bin, home("continue"), d, sz.Continues)
		if err != nil {
			t.Fatal(err)
		}
		finitePositive(t, p50)
		finitePositive(t, p99)
	})
	t.Run("toolcall", func(t *testing.T) {
		h := home("toolcall")
		for _, transport := range []string{"stdio", "http"} {
			start, startPeer := func(ctx context.Context) (*Session, error) { return stepwiseStdio(ctx, bin, h, d) }, func(ctx context.Context) (*Session, error) { return peer.stdio(ctx) }
			floor := func(ctx context.Context, result Result, n int) (Load, Load, error) {
				return floorLoads(ctx, t.TempDir(), transport == "http", result, n)
			}
			if transport == "http" {
				start, startPeer = func(ctx context.Context) (*Session, error) { return stepwiseHTTP(ctx, bin, h, d) }, func(ctx context.Context) (*Session, error) { return peer.http(ctx) }
			}
			f, err := toolcall(ctx, "toolcall_"+transport, transport, sz.Calls, start, startPeer, floor)
			if err != nil {
				t.Fatal(err)
			}
			finitePositive(t, f)
			if hasFloor := strings.Contains(f.detail, "the floor ("); hasFloor != (floor != nil) || strings.Contains(f.detail, "floor server:") {
				t.Errorf("%s: floor measured %v, want %v (%s)", f.Name, hasFloor, floor != nil, f.detail)
			}
			if peer.Available() != (f.Ratio != nil) {
				t.Errorf("%s: peer available %v but ratio %v (%s)", f.Name, peer.Available(), f.Ratio, f.detail)
			}
		}
		// Without node the figure is still measured and says why it has
		// no ratio.
		gone := &Peer{reason: "node not found"}
		f, err := toolcall(ctx, "toolcall_stdio", "stdio", sz.Calls,
			func(ctx context.Context) (*Session, error) { return stepwiseStdio(ctx, bin, h, d) }, func(ctx context.Context) (*Session, error) { return gone.stdio(ctx) }, nil)
		if err != nil {
			t.Fatal(err)
		}
		finitePositive(t, f)
		if f.Ratio != nil || f.Result() != "peer unavailable" {
			t.Errorf("without the peer: ratio %v, result %q", f.Ratio, f.Result())
		}
	})
	t.Run("spawn", func(t *testing.T) {
		spawn, idle, err := spawnFigures(ctx, bin, home("spawn"), d, sz.Spawns, peer)
		if err != nil {
			t.Fatal(err)
		}
		finitePositive(t, spawn)
		finitePositive(t, idle)
	})
	t.Run("waiting", func(t *testing.T) {
		f, err := waitingRSS(ctx, bin, home("waiting"), d, sz.Waiting)
		if err != nil {
			t.Fatal(err)
		}
		finitePositive(t, f)
	})
	t.Run("stored", func(t *testing.T) {
		get, list, err := storedReads(ctx, bin, home("stored"), d, sz.Stored, sz.Reads)
		if err != nil {
			t.Fatal(err)
		}
		finitePositive(t, get)
		finitePositive(t, list)
	})
}

func TestPercentileIsNearestRank(t *testing.T) {
	var l Latencies
	for i := 1; i <= 300; i++ {
		l = append(l, time.Duration(301-i)*time.Millisecond) // unsorted on purpose
	}
	for p, want := range map[float64]time.Duration{50: 150 * time.Millisecond, 99: 297 * time.Millisecond, 100: 300 * time.Millisecond} {
		if got := l.Percentile(p); got != want {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := (Latencies{}).Percentile(99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
}

// TestJSONShape: exactly the six keys, and null where the peer was not
// measured.
func TestJSONShape(t *testing.T) {
	f := Figure{Name: "toolcall_stdio", Value: 10, Unit: "calls/s"}
	f.compare("TS SDK peer", 0)
	g := Figure{Name: "spawn_ms", Value: 30, Unit: "ms", target: valueAtMost(15, "≤ 15 ms")}
	g.againstTarget(15)
	data, err := json.Marshal([]Figure{f, g})
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, m := range got {
		if len(m) != 6 {
			t.Errorf("keys %v, want name, value, unit, baseline, baseline_value, ratio", m)
		}
	}
	if got[0]["ratio"] != nil || got[0]["baseline_value"] != nil {
		t.Errorf("unmeasured peer: %v", got[0])
	}
	if got[1]["ratio"] != 2.0 || g.Result() != "missed" {
		t.Errorf("spawn 30 ms against 15: %v, %s", got[1], g.Result())
	}
}

func TestOnlySelectsByPrefix(t *testing.T) {
	r := &runner{only: splitList(" toolcall, continue_stdio_p99,,")}
	for name, want := range map[string]bool{"toolcall_stdio": true, "toolcall_http": true, "steps_serial_full": false, "spawn_ms": false} {
		if got := r.selected(name); got != want {
			t.Errorf("selected(%q) = %v, want %v", name, got, want)
		}
	}
	if !r.selected("continue_stdio_p50_ms", "continue_stdio_p99_ms") {
		t.Error("a pair is measured when either of its figures is selected")
	}
	if all := (&runner{}); !all.selected("anything") {
		t.Error("without -only every figure is measured")
	}
}

// TestPostgresStepFigures measures the postgres figures at the smoke sizes
// when the test server is set (STEPWISE_TEST_DATABASE_URL).
func TestPostgresStepFigures(t *testing.T) {
	pg := postgresURL()
	if pg == "" {
		t.Skip(envPostgres + " is not set")
	}
	for _, kind := range []stepKind{noopSteps, effectSteps} {
		f, err := stepsSerialPostgres(context.Background(), t.TempDir(), pg, kind, smokeSizes.SerialSteps, smokeSizes.RawCommits)
		if err != nil {
			t.Fatal(err)
		}
		finitePositive(t, f)
	}
}

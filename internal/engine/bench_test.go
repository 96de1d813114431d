package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/workflow"
)

func noopWorkflow(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: noops\nsteps:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  - id: s%d\n    uses: noop\n", i)
	}
	return b.String()
}

func benchEngine(b *testing.B, durability string) (*Engine, *sqlite.Store) {
	b.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), sqlite.Options{Durability: durability})
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(Config{Store: s, Key: testKey})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = e.Close(context.Background()); _ = s.Close() })
	return e, s
}

func startDoc(b testing.TB, e *Engine, doc string) string {
	b.Helper()
	res := workflow.Check([]byte(doc), workflow.Options{})
	if !res.Valid() {
		b.Fatal(res.Violations)
	}
	def, _ := workflow.Canonical(res.Source.Value)
	id, err := e.Start(context.Background(), StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def})
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// rawCommitRate measures one small insert per transaction on the same
// database and connection settings: the limit the engine is compared with.
func rawCommitRate(b *testing.B, s *sqlite.Store, n int) float64 {
	b.Helper()
	ctx := context.Background()
	db := s.Writer()
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS bench_raw (id INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO bench_raw (v) VALUES (?)`, "x"); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkSerialSteps runs durable no-op steps one after another and, in
// the same benchmark, measures the raw SQLite commit rate; steps/s over
// commits/s is reported as "ratio".
func BenchmarkSerialSteps(b *testing.B) {
	for _, d := range []string{sqlite.Full, sqlite.Normal} {
		b.Run(d, func(b *testing.B) {
			e, s := benchEngine(b, d)
			const perRun = 200
			res := workflow.Check([]byte(noopWorkflow(perRun)), workflow.Options{})
			def, _ := workflow.Canonical(res.Source.Value)
			req := StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def}
			raw := rawCommitRate(b, s, 300)
			b.ResetTimer()
			start := time.Now()
			steps := 0
			for steps < b.N {
				id, err := e.Start(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				if st, err := e.Wait(context.Background(), id); err != nil || st != "succeeded" {
					b.Fatalf("run %s: %s %v", id, st, err)
				}
				steps += perRun
			}
			elapsed := time.Since(start)
			b.StopTimer()
			rate := float64(steps) / elapsed.Seconds()
			b.ReportMetric(rate, "steps/s")
			b.ReportMetric(raw, "raw_commits/s")
			b.ReportMetric(rate/raw, "ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkContinue measures in-process Continue latency (p50, p99): a
// question is answered and the pause closed, the answer committed.
func BenchmarkContinue(b *testing.B) {
	e, _ := benchEngine(b, sqlite.Normal)
	doc := "version: 1\nname: one-question\nsteps:\n  - id: q\n    ask: {prompt: 'N?', type: integer, min: 0}\n"
	const batch = 200
	var lat []time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		b.StopTimer()
		n := min(batch, b.N-done)
		toks := make([]string, n)
		for i := range toks {
			id := startDoc(b, e, doc)
			if _, err := e.Wait(context.Background(), id); err != nil {
				b.Fatal(err)
			}
			ps, err := e.Pauses(context.Background(), id)
			if err != nil || len(ps) != 1 {
				b.Fatal(ps, err)
			}
			toks[i] = ps[0].Token
		}
		b.StartTimer()
		for _, tok := range toks {
			t0 := time.Now()
			if _, err := e.Continue(context.Background(), tok, int64(1)); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		done += n
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
}

// BenchmarkParallelGroup runs a 64-way parallel group of no-op steps:
// compare its steps/s with BenchmarkSerialSteps.
func BenchmarkParallelGroup(b *testing.B) {
	e, _ := benchEngine(b, sqlite.Normal)
	var sb strings.Builder
	sb.WriteString("version: 1\nname: wide\nsteps:\n  - id: group\n    parallel:\n")
	for i := 0; i < 64; i++ {
		fmt.Fprintf(&sb, "      - {id: b%d, uses: noop}\n", i)
	}
	res := workflow.Check([]byte(sb.String()), workflow.Options{})
	if !res.Valid() {
		b.Fatal(res.Violations)
	}
	def, _ := workflow.Canonical(res.Source.Value)
	req := StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def}
	b.ResetTimer()
	start := time.Now()
	steps := 0
	for steps < b.N {
		id, err := e.Start(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if st, err := e.Wait(context.Background(), id); err != nil || st != "succeeded" {
			b.Fatalf("%s %v", st, err)
		}
		steps += 64
	}
	b.ReportMetric(float64(steps)/time.Since(start).Seconds(), "steps/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkFirstRun is the bench's serial figure in the engine: one run of
// 3,000 no-op steps of a workflow the engine has not seen, on a fresh store
// each time (op = one step, so ns/op is wall time per step with the run's
// start and first-use costs spread over its steps).
func BenchmarkFirstRun(b *testing.B) {
	const perRun = 3000
	res := workflow.Check([]byte(noopWorkflow(perRun)), workflow.Options{})
	def, _ := workflow.Canonical(res.Source.Value)
	req := StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def}
	ctx := context.Background()
	var timed time.Duration
	runs := 0
	for steps := 0; steps < b.N; steps += perRun {
		b.StopTimer()
		s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), fmt.Sprintf("run%d.db", runs)), sqlite.Options{Durability: sqlite.Normal})
		if err != nil {
			b.Fatal(err)
		}
		e, err := New(Config{Store: s, Key: testKey})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		id, err := e.Start(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if st, err := e.Wait(ctx, id); err != nil || st != "succeeded" {
			b.Fatalf("run %s: %s %v", id, st, err)
		}
		timed += time.Since(t0)
		runs++
		b.StopTimer()
		_ = e.Close(ctx)
		_ = s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(timed.Milliseconds())/float64(runs), "ms/run")
	b.ReportMetric(float64(runs*perRun)/timed.Seconds(), "steps/s")
}

package engine

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/workflow"
)

// cpuNow is the process's CPU time (user and system): on a shared machine
// CPU per step says more than wall time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStepLoop drives runs of 100 no-op steps; an op is one step, so
// allocs/op and cpu-ns/op are per step (run start and finish included,
// spread over its 100 steps). runs=64 drives 64 runs at once.
func BenchmarkStepLoop(b *testing.B) {
	for _, d := range []string{sqlite.Full, sqlite.Normal} {
		for _, runs := range []int{1, 64} {
			name := d + "/serial"
			if runs > 1 {
				name = d + "/runs=64"
			}
			b.Run(name, func(b *testing.B) {
				e, s := benchEngine(b, d)
				const perRun = 100
				res := workflow.Check([]byte(noopWorkflow(perRun)), workflow.Options{})
				def, _ := workflow.Canonical(res.Source.Value)
				req := StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def}
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				cpu0, c0 := cpuNow(), s.Stats().Commits
				rounds := (b.N + perRun*runs - 1) / (perRun * runs)
				for range rounds {
					var wg sync.WaitGroup
					for range runs {
						wg.Go(func() {
							id, err := e.Start(ctx, req)
							if err != nil {
								b.Error(err)
								return
							}
							if st, err := e.Wait(ctx, id); err != nil || st != "succeeded" {
								b.Errorf("run %s: %s %v", id, st, err)
							}
						})
					}
					wg.Wait()
				}
				steps := float64(rounds * perRun * runs)
				b.ReportMetric(float64((cpuNow()-cpu0).Nanoseconds())/steps, "cpu-ns/step")
				b.ReportMetric(float64(s.Stats().Commits-c0)/steps, "tx/step")
				b.ReportMetric(steps/b.Elapsed().Seconds(), "steps/s")
			})
		}
	}
}

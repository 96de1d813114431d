package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// cpuNow is the CPU time (user and system) this process has used: the
// machine is shared, so CPU per operation says more than wall time.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchStore opens a store with the run rows the benchmark commits to.
func benchStore(b *testing.B, durability string, runs int) (*Store, []string) {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(b.TempDir(), "bench.db"), Options{Durability: durability})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.PutVersion(ctx, storeVersion()); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = storeRun(i).ID
		if _, err := s.CreateRun(ctx, storeRun(i), []store.Event{{Type: "run.created"}}); err != nil {
			b.Fatal(err)
		}
	}
	return s, ids
}

// stepCommit is what the engine commits for one no-op step: the run's new
// state, the step row, its started and succeeded events.
func stepCommit(runID string, rev int64, i int) store.Commit {
	now := time.Now()
	key := fmt.Sprintf("s%d", i)
	return store.Commit{RunID: runID, Rev: rev,
		Run:   store.RunUpdate{State: []byte(fmt.Sprintf(`{"cursor":%d,"started_at":"2026-11-23T12:00:00Z"}`, i+1))},
		Steps: []store.Step{{Key: key, Visit: 1, StepID: key, Status: "succeeded", Attempts: 1, StartedAt: now, FinishedAt: now}},
		Events: []store.Event{
			{Type: "step.started", StepID: key, Data: []byte(`{"kind":"uses","visit":1}`), At: now},
			{Type: "step.succeeded", StepID: key, Data: []byte(`{"visit":1}`), At: now},
		}}
}

func reportCPU(b *testing.B, cpu0 time.Duration, s *Store, c0 int64) {
	b.ReportMetric(float64((cpuNow()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(s.Stats().Commits-c0)/float64(b.N), "tx/op")
}

// BenchmarkCommit commits one no-op step at a time to one run.
func BenchmarkCommit(b *testing.B) {
	for _, d := range []string{Full, Normal} {
		b.Run(d, func(b *testing.B) {
			s, ids := benchStore(b, d, 1)
			ctx := context.Background()
			rev := int64(1)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, c0 := cpuNow(), s.Stats().Commits
			for i := 0; i < b.N; i++ {
				res, err := s.Commit(ctx, stepCommit(ids[0], rev, i))
				if err != nil {
					b.Fatal(err)
				}
				rev = res.Rev
			}
			reportCPU(b, cpu0, s, c0)
		})
	}
}

// BenchmarkCommitConcurrent commits no-op steps of 64 runs at once, one
// goroutine per run, as 64 drivers do: group commit shows as tx/op < 1.
func BenchmarkCommitConcurrent(b *testing.B) {
	for _, d := range []string{Full, Normal} {
		b.Run(d, func(b *testing.B) {
			const runs = 64
			s, ids := benchStore(b, d, runs)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, c0 := cpuNow(), s.Stats().Commits
			var wg sync.WaitGroup
			for g := range runs {
				n := b.N / runs
				if g < b.N%runs {
					n++
				}
				wg.Go(func() {
					rev := int64(1)
					for i := 0; i < n; i++ {
						res, err := s.Commit(ctx, stepCommit(ids[g], rev, i))
						if err != nil {
							b.Error(err)
							return
						}
						rev = res.Rev
					}
				})
			}
			wg.Wait()
			reportCPU(b, cpu0, s, c0)
		})
	}
}

func storeVersion() store.Version {
	return store.Version{Version: "v", Name: "n", Definition: []byte("{}")}
}

// storeRun is the i-th run of the tests' version, as benchStore creates it.
func storeRun(i int) store.Run {
	return store.Run{ID: fmt.Sprintf("run-%03d", i), Workflow: "n", Version: "v", Status: store.StatusRunning, State: []byte(`{"cursor":0}`)}
}

// BenchmarkCommitMerged commits what the engine's pipeline of pure steps
// writes at once: the queued steps of a run merged into one commit (32 or
// 256 steps, two events each); ns/op and cpu-ns/op are per step.
func BenchmarkCommitMerged(b *testing.B) {
	for _, steps := range []int{32, 256} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			s, ids := benchStore(b, Normal, 1)
			ctx := context.Background()
			rev := int64(1)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0, c0 := cpuNow(), s.Stats().Commits
			for i := 0; i < b.N; i += steps {
				c := stepCommit(ids[0], rev, i)
				for j := 1; j < steps; j++ {
					more := stepCommit(ids[0], rev, i+j)
					c.Steps = append(c.Steps, more.Steps...)
					c.Events = append(c.Events, more.Events...)
				}
				res, err := s.Commit(ctx, c)
				if err != nil {
					b.Fatal(err)
				}
				rev = res.Rev
			}
			reportCPU(b, cpu0, s, c0)
		})
	}
}

// BenchmarkCommitAnswer commits what one answered question writes when the
// next question follows it through a switch (the bench's continue figure):
// the pause closed with its answer, the question's and the switch's step
// rows, the next pause, and their events.
func BenchmarkCommitAnswer(b *testing.B) {
	s, ids := benchStore(b, Normal, 1)
	ctx := context.Background()
	rev, seq := int64(1), int64(1)
	open := func(rev int64, seq int64) int64 {
		res, err := s.Commit(ctx, store.Commit{RunID: ids[0], Rev: rev, Run: store.RunUpdate{Status: store.StatusWaiting},
			OpenPause: &store.Pause{Seq: seq, StepKey: "ask", Visit: int(seq), Kind: "question", Request: []byte(`{"prompt":"n?"}`)},
			Events:    []store.Event{{Type: "run.paused", StepID: "ask"}}})
		if err != nil {
			b.Fatal(err)
		}
		return res.Rev
	}
	rev = open(rev, seq)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, c0 := cpuNow(), s.Stats().Commits
	for i := 0; i < b.N; i++ {
		now := time.Now()
		visit := int(seq)
		c := store.Commit{RunID: ids[0], Rev: rev, Run: store.RunUpdate{Status: answerStatus},
			ClosePause: &store.PauseClose{Seq: seq, Status: store.PauseAnswered, Answer: []byte(`1`), At: now},
			Answer:     &store.Answer{PauseSeq: seq, StepKey: "ask", Value: []byte(`1`), At: now},
			Steps: []store.Step{
				{Key: "ask", Visit: visit, StepID: "ask", Status: "succeeded", Answer: []byte(`1`), Attempts: 1, StartedAt: now, FinishedAt: now},
				{Key: "again", Visit: visit, StepID: "again", Status: "succeeded", Output: []byte(`{"next":"ask"}`), Attempts: 1, StartedAt: now, FinishedAt: now}},
			OpenPause: &store.Pause{Seq: seq + 1, StepKey: "ask", Visit: visit + 1, Kind: "question", Request: []byte(`{"prompt":"n?"}`)},
			Events: []store.Event{{Type: "run.continued", StepID: "ask"}, {Type: "step.answered", StepID: "ask"}, {Type: "step.succeeded", StepID: "ask"},
				{Type: "step.started", StepID: "again"}, {Type: "step.succeeded", StepID: "again"}, {Type: "step.waiting", StepID: "ask"}, {Type: "run.paused", StepID: "ask"}}}
		res, err := s.Commit(ctx, c)
		if err != nil {
			b.Fatal(err)
		}
		rev, seq = res.Rev, seq+1
	}
	reportCPU(b, cpu0, s, c0)
}

var answerStatus = store.StatusWaiting

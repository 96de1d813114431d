package web

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// benchRuns is how many runs the page benchmarks store
// ($STEPWISE_BENCH_RUNS overrides it).
const benchRuns = 100_000

const benchWorkflow = `version: 1
name: populate
steps:
  - {id: first, uses: noop}
  - {id: second, uses: noop}
  - {id: third, uses: noop}
`

var (
	benchOnce sync.Once
	benchDash *Handler
	benchIDs  []string
	benchErr  error
)

// benchSetup opens a service on a temporary home holding benchRuns
// finished runs: one driven for real, its rows then written again under
// new ids through the store's CreateRun (every tenth marked failed).
func benchSetup(b *testing.B) (*Handler, []string) {
	b.Helper()
	benchOnce.Do(func() {
		n := benchRuns
		if s := os.Getenv("STEPWISE_BENCH_RUNS"); s != "" {
			n, _ = strconv.Atoi(s)
		}
		ctx := context.Background()
		// $STEPWISE_BENCH_HOME keeps the seeded home for the next run.
		home, reuse := os.Getenv("STEPWISE_BENCH_HOME"), false
		if home != "" {
			_, err := os.Stat(filepath.Join(home, "seeded"))
			reuse = err == nil
		} else if home, benchErr = os.MkdirTemp("", "stepwise-web-bench"); benchErr != nil {
			return
		}
		svc, err := service.Open(ctx, service.Options{Home: home, Durability: "normal"})
		if err != nil {
			benchErr = err
			return
		}
		benchDash = New(svc, Options{AuthTokens: []string{testToken}})
		if reuse {
			for cursor := ""; ; {
				runs, next, err := svc.Store.ListRuns(ctx, service.RunFilter{Limit: 1000, Cursor: cursor})
				if err != nil {
					benchErr = err
					return
				}
				for _, r := range runs {
					benchIDs = append(benchIDs, r.ID)
				}
				if cursor = next; next == "" {
					return
				}
			}
		}
		l, _ := svc.Parse([]byte(benchWorkflow))
		id, err := svc.StartRun(ctx, l, nil, false)
		if err != nil {
			benchErr = err
			return
		}
		if _, err := svc.Wait(ctx, id, 0); err != nil {
			benchErr = err
			return
		}
		run, _ := svc.Store.GetRun(ctx, id)
		steps, _ := svc.Store.Steps(ctx, id)
		events, _ := svc.Store.Events(ctx, id, 0, 0)
		first := time.Now().Add(-time.Duration(n) * time.Millisecond)
		t0 := time.Now()
		for i := range n {
			r := run
			r.ID = uuid.Must(uuid.NewV7()).String()
			r.CreatedAt = first.Add(time.Duration(i) * time.Millisecond)
			r.FinishedAt = r.CreatedAt.Add(time.Millisecond)
			if i%10 == 9 {
				r.Status = code.StatusFailed
			}
			ss := slices.Clone(steps)
			for j := range ss {
				ss[j].RunID = r.ID
			}
			evs := slices.Clone(events)
			for j := range evs {
				evs[j].RunID, evs[j].Seq = r.ID, 0
			}
			if _, err := svc.Store.CreateRun(ctx, r, evs, ss...); err != nil {
				benchErr = fmt.Errorf("seed run %d: %w", i, err)
				return
			}
			benchIDs = append(benchIDs, r.ID)
		}
		fmt.Fprintf(os.Stderr, "seeded %d runs in %s\n", n, time.Since(t0).Round(time.Millisecond))
		benchErr = os.WriteFile(filepath.Join(home, "seeded"), nil, 0o644)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDash, benchIDs
}

// serveTimes serves the paths in turn b.N times and reports the p50 and
// p99 server time (the handler called directly: no network).
func serveTimes(b *testing.B, h *Handler, paths func(i int) string) {
	b.Helper()
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest(http.MethodGet, paths(i), nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(w, req)
		times = append(times, time.Since(t0))
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d", req.URL, w.Code)
		}
	}
	b.StopTimer()
	slices.Sort(times)
	q := func(p float64) float64 {
		return float64(times[min(len(times)-1, int(p*float64(len(times))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// BenchmarkRunsPage serves /runs with 100,000 stored runs, five shapes:
// the first page, failed runs, one workflow, searches (a run id's
// start, a workflow name's, nothing, one character that starts every run
// id: the worst case), the second page.
func BenchmarkRunsPage(b *testing.B) {
	h, ids := benchSetup(b)
	_, next, err := h.svc.ListRuns(context.Background(), service.RunFilter{Limit: runsPageSize})
	if err != nil {
		b.Fatal(err)
	}
	shapes := []struct{ name, path string }{{"first", "/runs"}, {"failed", "/runs?status=failed"}, {"workflow", "/runs?workflow=populate"},
		{"search", "/runs?q=" + ids[len(ids)/2][:18]}, {"search_workflow", "/runs?q=pop"}, {"search_none", "/runs?q=zzz"},
		{"search_short", "/runs?q=" + ids[0][:1]},
		{"page2", "/runs?cursor=" + next}}
	for _, sh := range shapes {
		b.Run(sh.name, func(b *testing.B) { serveTimes(b, h, func(int) string { return sh.path }) })
	}
}

// BenchmarkRunPage serves /runs/{id} of random runs among 100,000.
func BenchmarkRunPage(b *testing.B) {
	h, ids := benchSetup(b)
	rng := rand.New(rand.NewPCG(1, 2))
	serveTimes(b, h, func(int) string { return "/runs/" + ids[rng.IntN(len(ids))] })
}

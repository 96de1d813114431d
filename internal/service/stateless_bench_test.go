package service

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/home"
)

// BenchmarkStatelessContinue100: one run_continue of a stateless server
// on a run holding 100 answers (bench/workflows/ask-loop.yaml: each
// answer recorded, a jump back, the next question): open the state,
// import it, answer, let the engine commit, export and seal the next
// state. Reports p50/p99 per call and the state's size.
//
//	go test ./service -run '^$' -bench StatelessContinue100 -benchtime 200x
func BenchmarkStatelessContinue100(b *testing.B) {
	ctx := context.Background()
	b.Setenv(home.EnvSecretKey, testKeyA)
	svc, err := Open(ctx, Options{Home: b.TempDir(), Stateless: true})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	def, err := os.ReadFile(filepath.Join("..", "..", "bench", "workflows", "ask-loop.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	l, err := svc.Parse(def)
	if err != nil {
		b.Fatal(err)
	}
	res, err := svc.StartStateless(ctx, l, nil, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100 {
		if res, err = svc.ContinueStateless(ctx, res.State, res.View.Pause.Token, i, 10*time.Second); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("continue", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			next, err := svc.ContinueStateless(ctx, res.State, res.View.Pause.Token, 7, 10*time.Second)
			lat = append(lat, time.Since(t0))
			if err != nil || next.View.Pause == nil {
				b.Fatalf("continue: %v", err)
			}
		}
		report(b, lat, len(res.State))
	})
	// The state's part alone: open it (decrypt, decompress, decode) and
	// seal it again.
	b.Run("open+seal", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			p, err := svc.stateless.openState(res.State)
			if err == nil {
				_, err = svc.stateless.sealState(p)
			}
			lat = append(lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
		}
		report(b, lat, len(res.State))
	})
}

func report(b *testing.B, lat []time.Duration, stateBytes int) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(stateBytes), "state_bytes")
}

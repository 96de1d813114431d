package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/postgres/pgtest"
)

// The gauges a metrics scrape reads count what the store holds: open
// pauses (two runs waiting on a question) and runs no process drives (a
// detached run), each stopping at the limit; on SQLite and PostgreSQL.
func TestStoreGauges(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			opts := Options{Home: t.TempDir(), Durability: "normal"}
			if db == "postgres" {
				opts.Database = pgtest.Schema(t)
			}
			ctx := context.Background()
			s, err := Open(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			gr, ok := s.Store.(store.GaugeReader)
			if !ok {
				t.Fatalf("%T counts no gauges", s.Store)
			}
			path := filepath.Join(t.TempDir(), "ask.yaml")
			if err := os.WriteFile(path, []byte("version: 1\nname: ask\nsteps:\n  - id: who\n    ask: {prompt: \"Who?\", type: string}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := s.LoadWorkflow(path)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				id, err := s.StartRun(ctx, l, nil, false)
				if err != nil {
					t.Fatal(err)
				}
				if st, err := s.Wait(ctx, id, time.Minute); err != nil || st != store.StatusWaiting {
					t.Fatalf("run %s: %s %v", id, st, err)
				}
			}
			if _, err := s.StartRun(ctx, l, nil, true); err != nil {
				t.Fatal(err)
			}
			g, err := gr.Gauges(ctx, time.Now(), 100)
			if err != nil || g.OpenPauses != 2 || g.RunsWaitingToBeDriven != 1 {
				t.Fatalf("gauges: %+v %v", g, err)
			}
			if g, err = gr.Gauges(ctx, time.Now(), 1); err != nil || g.OpenPauses != 1 || g.RunsWaitingToBeDriven != 1 {
				t.Fatalf("gauges up to 1: %+v %v", g, err)
			}
		})
	}
}

// BenchmarkStoreGauges is a scrape's store read with 20,000 runs no
// process drives and 2,000 open pauses (go test -bench StoreGauges
// -run x ./service).
func BenchmarkStoreGauges(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres"} {
		b.Run(db, func(b *testing.B) {
			opts := Options{Home: b.TempDir(), Durability: "normal"}
			if db == "postgres" {
				opts.Database = pgtest.Schema(b)
			}
			ctx := context.Background()
			s, err := Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(ctx)
			path := filepath.Join(b.TempDir(), "ask.yaml")
			if err := os.WriteFile(path, []byte("version: 1\nname: ask\nsteps:\n  - id: who\n    ask: {prompt: \"Who?\", type: string}\n"), 0o600); err != nil {
				b.Fatal(err)
			}
			l, err := s.LoadWorkflow(path)
			if err != nil {
				b.Fatal(err)
			}
			for range 20_000 {
				if _, err := s.StartRun(ctx, l, nil, true); err != nil {
					b.Fatal(err)
				}
			}
			for range 2_000 {
				id, err := s.StartRun(ctx, l, nil, false)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Wait(ctx, id, time.Minute); err != nil {
					b.Fatal(err)
				}
			}
			gr := s.Store.(store.GaugeReader)
			b.ResetTimer()
			for b.Loop() {
				g, err := gr.Gauges(ctx, time.Now(), 1_000_000)
				if err != nil || g.OpenPauses != 2_000 || g.RunsWaitingToBeDriven != 20_000 {
					b.Fatalf("%+v %v", g, err)
				}
			}
		})
	}
}

package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/sqlite"
)

// The read path in process: what run_get and run_continue cost the server
// without the protocol around them.
//
//	go test ./service -run '^$' -bench ReadPath -benchmem

// benchService opens a service on a fresh home whose library holds bench's
// ask-loop workflow (it asks again and again).
func benchService(b testing.TB) *Service {
	b.Helper()
	loop, err := os.ReadFile(filepath.Join("..", "..", "bench", "workflows", "ask-loop.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return serviceWith(b, "ask-loop", loop)
}

// serviceWith opens a service (durability normal) on a fresh home whose
// library holds one workflow, closed when the test ends.
func serviceWith(t testing.TB, name string, source []byte) *Service {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "workflows", name+".yaml"), source, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(context.Background(), Options{Home: dir, Durability: sqlite.Normal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func benchWaitingRun(b *testing.B, s *Service) string {
	b.Helper()
	id, _ := startPaused(b, s, "ask-loop", nil)
	return id
}

// startPaused starts the library workflow name and returns the run and its
// brief view once it waits on its first pause.
func startPaused(t testing.TB, s *Service, name string, inputs map[string]any) (string, *RunView) {
	t.Helper()
	ctx := context.Background()
	l, err := s.LoadWorkflow(name)
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.StartRun(ctx, l, inputs, false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.AwaitBrief(ctx, id, 5*time.Second, nil, nil)
	if err != nil || v.Pause == nil {
		t.Fatalf("first pause of %s: %v %+v", name, err, v)
	}
	return id, v
}

// BenchmarkReadPathGetRun is run_get of a waiting run.
func BenchmarkReadPathGetRun(b *testing.B) {
	s := benchService(b)
	id := benchWaitingRun(b, s)
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		v, err := s.GetRun(ctx, id)
		if err != nil || v.Pause == nil {
			b.Fatalf("get run: %v", err)
		}
	}
}

// BenchmarkReadPathContinue is run_continue as the MCP server makes it:
// answer, then the run's brief view once it asks again (AwaitContinued:
// from the commit that carried the answer when it left the run waiting).
// Runs of 100 questions, as the bench's figure. readBack=1 makes the view
// be read back from the store instead (AwaitBrief), as before Settled.
func BenchmarkReadPathContinue(b *testing.B) {
	for _, readBack := range []bool{false, true} {
		name := "readBack=0"
		if readBack {
			name = "readBack=1"
		}
		b.Run(name, func(b *testing.B) {
			s := benchService(b)
			ctx := context.Background()
			var id, tok string
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if i%100 == 0 {
					b.StopTimer()
					id = benchWaitingRun(b, s)
					v, err := s.GetRun(ctx, id)
					if err != nil {
						b.Fatal(err)
					}
					tok = v.Pause.Token
					b.StartTimer()
				}
				sub := s.Subscribe()
				res, err := s.ContinueFromAgent(ctx, tok, i)
				if err != nil {
					b.Fatal(err)
				}
				if readBack {
					res.Settled = nil
				}
				v, err := s.AwaitContinued(ctx, id, res, 5*time.Second, sub, nil)
				sub.Close()
				if err != nil || v.Pause == nil {
					b.Fatalf("get run: %v %+v", err, v)
				}
				tok = v.Pause.Token
			}
		})
	}
}

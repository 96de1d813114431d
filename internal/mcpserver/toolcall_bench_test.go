package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// The server's share of a tool call, in process: the server behind real
// pipes with the stdio transport `serve` uses, a go-sdk client at their
// other ends (it speaks the sessionless protocol, 2026-07-28).
// The server's goroutines carry the label side=server, so a CPU profile
// can leave the client out:
//
//	go test ./mcpserver -run '^$' -bench ToolCall -benchmem -cpuprofile /tmp/cpu.out
//	go tool pprof -top -tagfocus side=server /tmp/cpu.out

// benchServer serves a fresh home holding greet and ask-loop (which asks
// again and again, as bench's continue figure uses it); stop ends it.
func benchServer(b *testing.B) (srv *Server, ctx context.Context, stop func()) {
	b.Helper()
	home := b.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, src := range []string{filepath.Join("testdata", "greet.yaml"), filepath.Join("..", "..", "bench", "workflows", "ask-loop.yaml")} {
		data, err := os.ReadFile(src)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lib, filepath.Base(src)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := service.Open(ctx, service.Options{Home: home, Durability: "normal"})
	if err != nil {
		b.Fatal(err)
	}
	srv = New(svc, Options{Version: "bench"})
	srv.Start(ctx)
	return srv, ctx, func() {
		cancel()
		srv.Close()
		_ = svc.Close(context.Background())
	}
}

// pipeSession serves a fresh home over pipes and returns a client session.
func pipeSession(b *testing.B) *mcp.ClientSession {
	b.Helper()
	srv, ctx, stop := benchServer(b)
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fromServer, toClient, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	pprof.Do(ctx, pprof.Labels("side", "server"), func(ctx context.Context) {
		go func() {
			defer close(done)
			if ss, err := srv.ConnectStdio(ctx, toServer, toClient); err == nil {
				_ = ss.Wait()
			}
		}()
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.IOTransport{Reader: fromServer, Writer: fromClient}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.Close()
		toServer.Close()
		toClient.Close()
		<-done
		stop()
	})
	return cs
}

func callOK(b *testing.B, cs *mcp.ClientSession, name string, args any) map[string]any {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		b.Fatalf("%s: %v %+v", name, err, res)
	}
	return res.StructuredContent.(map[string]any)
}

// BenchmarkToolCallRunGet is one run_get of a waiting run at a time.
func BenchmarkToolCallRunGet(b *testing.B) {
	cs := pipeSession(b)
	id := callOK(b, cs, "run_start", map[string]any{"workflow": "greet"})["run_id"].(string)
	args := map[string]any{"run_id": id}
	b.ReportAllocs()
	for b.Loop() {
		callOK(b, cs, "run_get", args)
	}
}

// BenchmarkToolCallContinue is one run_continue at a time, runs of 100
// questions (the start of each run untimed).
func BenchmarkToolCallContinue(b *testing.B) {
	cs := pipeSession(b)
	var token string
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n%100 == 0 {
			b.StopTimer()
			token = callOK(b, cs, "run_start", map[string]any{"workflow": "ask-loop"})["pause"].(map[string]any)["token"].(string)
			b.StartTimer()
		}
		res := callOK(b, cs, "run_continue", map[string]any{"token": token, "value": n})
		pause, _ := res["pause"].(map[string]any)
		if pause == nil {
			b.Fatalf("no pause: %v", res)
		}
		token = pause["token"].(string)
		n++
	}
}

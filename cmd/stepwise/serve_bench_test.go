//go:build unix

package main

import (
	"context"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP surface from outside the process: the built binary, a go-sdk
// client, the transport the agent would use.
//
//	go test ./cmd/stepwise -run '^$' -bench Serve -benchtime 3s

func BenchmarkServeSpawnToInitialized(b *testing.B) {
	bin := sharedBinary(b)
	home := libraryHome(b)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	b.ResetTimer()
	for range b.N {
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(bin, "--home", home, "serve")}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = cs.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/spawn")
}

// waitingRun starts a run that waits on a question and returns its id.
func waitingRun(b *testing.B, cs *mcp.ClientSession) string {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"workflow": "greet"}})
	if err != nil || res.IsError {
		b.Fatalf("run_start: %v %v", err, res)
	}
	return res.StructuredContent.(map[string]any)["run_id"].(string)
}

func benchRunGet(b *testing.B, cs *mcp.ClientSession, inFlight int) {
	id := waitingRun(b, cs)
	params := &mcp.CallToolParams{Name: "run_get", Arguments: map[string]any{"run_id": id}}
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N / inFlight
	for w := range inFlight {
		n := per
		if w == 0 {
			n += b.N % inFlight
		}
		wg.Go(func() {
			for range n {
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Errorf("run_get: %v %v", err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

func BenchmarkServeRunGetStdio(b *testing.B) {
	for _, inFlight := range []int{1, 8} {
		b.Run(map[int]string{1: "sequential", 8: "8-in-flight"}[inFlight], func(b *testing.B) {
			bin := sharedBinary(b)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
				&mcp.CommandTransport{Command: exec.Command(bin, "--home", libraryHome(b), "serve")}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			benchRunGet(b, cs, inFlight)
		})
	}
}

func BenchmarkServeRunGetHTTP(b *testing.B) {
	for _, inFlight := range []int{1, 8} {
		b.Run(map[int]string{1: "sequential", 8: "8-in-flight"}[inFlight], func(b *testing.B) {
			url, _ := startHTTP(b, sharedBinary(b))
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			time.Sleep(50 * time.Millisecond)
			benchRunGet(b, cs, inFlight)
		})
	}
}

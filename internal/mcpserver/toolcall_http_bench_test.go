package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's share of a tool call over streamable HTTP, in process: the
// HTTP handler `serve --http` uses behind a loopback listener, a go-sdk
// client at the other end; the server's handlers carry the label
// side=server as in toolcall_bench_test.go:
//
//	go test ./mcpserver -run '^$' -bench ToolCallHTTP -benchmem -cpuprofile /tmp/cpu.out
//	go tool pprof -top -tagfocus side=server /tmp/cpu.out

// httpSession serves a fresh home over loopback HTTP and returns a client
// session.
func httpSession(b *testing.B) *mcp.ClientSession {
	b.Helper()
	srv, ctx, stop := benchServer(b)
	h := srv.HTTPHandler(HTTPOptions{})
	labelled := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pprof.Do(r.Context(), pprof.Labels("side", "server"), func(context.Context) { h.ServeHTTP(w, r) })
	})
	hs := httptest.NewServer(labelled)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.Close()
		hs.Close()
		stop()
	})
	return cs
}

// BenchmarkToolCallHTTPRunGet is one run_get of a waiting run at a time
// over streamable HTTP.
func BenchmarkToolCallHTTPRunGet(b *testing.B) {
	cs := httpSession(b)
	id := callOK(b, cs, "run_start", map[string]any{"workflow": "greet"})["run_id"].(string)
	args := map[string]any{"run_id": id}
	b.ReportAllocs()
	for b.Loop() {
		callOK(b, cs, "run_get", args)
	}
}

// BenchmarkToolCallHTTPRunGetInFlight is run_get over streamable HTTP with
// eight calls in flight on one session, as the bench's in-flight load.
func BenchmarkToolCallHTTPRunGetInFlight(b *testing.B) {
	cs := httpSession(b)
	id := callOK(b, cs, "run_start", map[string]any{"workflow": "greet"})["run_id"].(string)
	args := map[string]any{"run_id": id}
	b.ReportAllocs()
	b.SetParallelism(4) // 8 goroutines on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			callOK(b, cs, "run_get", args)
		}
	})
}

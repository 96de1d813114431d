package metric

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/engine"
)

// BenchmarkStepEvents is what the metrics cost per step: its
// step.started (published and committed) and its outcome.
func BenchmarkStepEvents(b *testing.B) {
	m := New()
	ctx := context.Background()
	at := time.Unix(1000, 0)
	m.event(ctx, engine.Event{RunID: "r", Type: engine.EventRunCreated, Data: []byte(`{"workflow":"w"}`), At: at}, nil)
	kind := []byte(`{"kind":"uses","visit":1}`)
	b.ReportAllocs()
	for b.Loop() {
		m.event(ctx, engine.Event{RunID: "r", Type: engine.EventStepStarted, StepID: "a", At: at}, nil)
		m.event(ctx, engine.Event{RunID: "r", Type: engine.EventStepStarted, StepID: "a", Seq: 1, Data: kind, At: at}, nil)
		m.event(ctx, engine.Event{RunID: "r", Type: engine.EventStepSucceeded, StepID: "a", At: at.Add(time.Millisecond)}, nil)
	}
}

// BenchmarkMCPMiddleware is the middleware's cost per request.
func BenchmarkMCPMiddleware(b *testing.B) {
	h := New().MCPMiddleware()(func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.CallToolResult{}, nil })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h(ctx, "tools/call", nil)
	}
}

package metric

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"stepwise.dev/stepwise/internal/engine"
)

// Workflow names label the run families up to MaxWorkflowLabels; later
// names are counted under "other", so a process that runs many distinct
// workflows from files keeps a bounded number of series.
func TestWorkflowLabelsBounded(t *testing.T) {
	m := New()
	ctx := context.Background()
	at := time.Unix(1000, 0)
	for i := range MaxWorkflowLabels + 10 {
		id := fmt.Sprintf("r%d", i)
		m.event(ctx, engine.Event{RunID: id, Type: engine.EventRunCreated, Data: []byte(fmt.Sprintf(`{"workflow":"wf%d"}`, i)), At: at}, nil)
		m.event(ctx, engine.Event{RunID: id, Type: engine.EventRunSucceeded, At: at.Add(time.Second)}, nil)
	}
	if n := testutil.CollectAndCount(m.runs); n != MaxWorkflowLabels+1 {
		t.Fatalf("%d series of stepwise_runs_total, want %d", n, MaxWorkflowLabels+1)
	}
	if v := testutil.ToFloat64(m.runs.WithLabelValues("other", "succeeded")); v != 10 {
		t.Fatalf("other: %v", v)
	}
	if len(m.tracked) != 0 {
		t.Fatalf("%d runs still tracked after they ended", len(m.tracked))
	}
}

// A run whose creation this process did not see (resumed here) is looked
// up when it ends: its workflow labels it and its duration is observed;
// when the lookup fails it is counted as "unknown".
func TestRunLookedUp(t *testing.T) {
	m := New()
	ctx := context.Background()
	created := time.Unix(1000, 0)
	lookup := func(_ context.Context, id string) (string, time.Time, error) {
		if id == "known" {
			return "resumed", created, nil
		}
		return "", time.Time{}, errors.New("not found")
	}
	m.event(ctx, engine.Event{RunID: "known", Type: engine.EventRunFailed, At: created.Add(3 * time.Second)}, lookup)
	m.event(ctx, engine.Event{RunID: "gone", Type: engine.EventRunCanceled, At: created}, lookup)
	if v := testutil.ToFloat64(m.runs.WithLabelValues("resumed", "failed")); v != 1 {
		t.Fatalf("resumed failed: %v", v)
	}
	if v := testutil.ToFloat64(m.runs.WithLabelValues("unknown", "canceled")); v != 1 {
		t.Fatalf("unknown canceled: %v", v)
	}
	if n := testutil.CollectAndCount(m.runDur); n != 1 {
		t.Fatalf("run duration series: %d", n)
	}
}

// Steps are counted by the kind their step.started said and their
// outcome; a step whose start was not seen is of kind "unknown".
func TestStepKinds(t *testing.T) {
	m := New()
	ctx := context.Background()
	at := time.Unix(1000, 0)
	m.event(ctx, engine.Event{RunID: "r", Type: engine.EventRunCreated, Data: []byte(`{"workflow":"w"}`), At: at}, nil)
	m.event(ctx, engine.Event{RunID: "r", Type: engine.EventStepStarted, StepID: "a", At: at}, nil)
	m.event(ctx, engine.Event{RunID: "r", Type: engine.EventStepStarted, StepID: "a", Seq: 3, Data: []byte(`{"kind":"uses","visit":1}`), At: at}, nil)
	m.event(ctx, engine.Event{RunID: "r", Type: engine.EventStepFailed, StepID: "a", At: at.Add(time.Second)}, nil)
	m.event(ctx, engine.Event{RunID: "r", Type: engine.EventStepSkipped, StepID: "b", At: at.Add(time.Second)}, nil)
	if v := testutil.ToFloat64(m.steps.WithLabelValues("uses", "failed")); v != 1 {
		t.Fatalf("uses failed: %v", v)
	}
	if v := testutil.ToFloat64(m.steps.WithLabelValues("unknown", "skipped")); v != 1 {
		t.Fatalf("unknown skipped: %v", v)
	}
	if n := testutil.CollectAndCount(m.stepDur); n != 1 {
		t.Fatalf("step duration series: %d", n)
	}
}

// MCP methods outside the known set are counted as "other"; a Go error
// is outcome error, a tool result with isError tool_error.
func TestMCPMiddlewareLabels(t *testing.T) {
	m := New()
	mw := m.MCPMiddleware()
	ok := mw(func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.CallToolResult{}, nil })
	toolErr := mw(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{IsError: true}, nil
	})
	fail := mw(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, errors.New("no") })
	ctx := context.Background()
	_, _ = ok(ctx, "tools/call", nil)
	_, _ = toolErr(ctx, "tools/call", nil)
	for i := range 50 {
		_, _ = fail(ctx, fmt.Sprintf("made/up/%d", i), nil)
	}
	for _, c := range []struct {
		method, outcome string
		want            float64
	}{{"tools/call", "ok", 1}, {"tools/call", "tool_error", 1}, {"other", "error", 50}} {
		if v := testutil.ToFloat64(m.mcpReqs.WithLabelValues(c.method, c.outcome)); v != c.want {
			t.Fatalf("%s %s: %v, want %v", c.method, c.outcome, v, c.want)
		}
	}
	if n := testutil.CollectAndCount(m.mcpReqs); n != 3 {
		t.Fatalf("%d series of stepwise_mcp_requests_total", n)
	}
}

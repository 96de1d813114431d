package telemetry_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/mcpserver"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/telemetry"
)

const askWorkflow = `version: 1
name: asker
steps:
  - id: name
    ask: {prompt: "Your name?", type: string}
  - id: say
    uses: log
    with: {message: "hi ${{ steps.name.answer }}"}
`

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A run with a question, driven through the MCP server: a span per MCP
// request, a run span ended at the pause and a new one linked to it after
// the answer, and step spans under the run span they ran in.
func TestRunWithQuestionOverMCP(t *testing.T) {
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "asker.yaml"), []byte(askWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	svc, err := service.Open(context.Background(), service.Options{Home: home, Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := telemetry.New(tp)
	ctx, cancel := context.WithCancel(context.Background())
	// A subscriber of our own, to know when the run's last event was handed
	// out (the tracer's subscription gets it before this one is told).
	done, stopDone := svc.Engine.Subscribe("")
	tr.Watch(ctx, svc.Engine, nil)
	srv := mcpserver.New(svc, mcpserver.Options{Tracer: tr})
	srv.Start(ctx)
	defer func() { cancel(); srv.Close(); _ = svc.Close(context.Background()); stopDone() }()

	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); _ = ss.Wait() }()

	call := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", name, err, res)
		}
		var out map[string]any
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		return out
	}
	run := call("run_start", map[string]any{"workflow": "asker"})
	pause, _ := run["pause"].(map[string]any)
	if run["status"] != "waiting" || pause == nil {
		t.Fatalf("run_start: %v", run)
	}
	run = call("run_continue", map[string]any{"token": pause["token"], "value": "Ada"})
	if run["status"] != "succeeded" {
		t.Fatalf("run_continue: %v", run)
	}
	// Wait, without a clock, for the run's end to be handed out.
	for ev := range done {
		if ev.Type == engine.EventRunSucceeded {
			break
		}
	}
	// The tracer's goroutine may still be on that event: Shutdown takes
	// the same lock, so after it every event before it is handled.
	for {
		var ended bool
		for _, s := range exp.GetSpans() {
			if s.Name == "run asker" && attrs(s.Snapshot())["stepwise.status"].AsString() == "succeeded" {
				ended = true
			}
		}
		if ended {
			break
		}
		runtime.Gosched()
	}

	spans := exp.GetSpans().Snapshots()
	var mcpTools []string
	var runs, steps []sdktrace.ReadOnlySpan
	for _, s := range spans {
		a := attrs(s)
		switch {
		case a["mcp.method.name"].AsString() == "tools/call":
			mcpTools = append(mcpTools, a["gen_ai.tool.name"].AsString())
			if a["stepwise.outcome"].AsString() != "ok" {
				t.Errorf("%s: outcome %q", s.Name(), a["stepwise.outcome"].AsString())
			}
		case s.Name() == "run asker":
			runs = append(runs, s)
		case a["stepwise.step.id"].AsString() != "":
			steps = append(steps, s)
		}
	}
	if len(mcpTools) != 2 || mcpTools[0] != "run_start" || mcpTools[1] != "run_continue" {
		t.Errorf("MCP tool spans: %v", mcpTools)
	}
	if len(runs) != 2 {
		t.Fatalf("run spans: %d, want 2 (one before the pause, one after)", len(runs))
	}
	first, second := runs[0], runs[1]
	if attrs(first)["stepwise.status"].AsString() != "waiting" || attrs(second)["stepwise.status"].AsString() != "succeeded" {
		t.Errorf("run statuses: %v, %v", attrs(first)["stepwise.status"], attrs(second)["stepwise.status"])
	}
	if attrs(second)["stepwise.workflow"].AsString() != "asker" || attrs(first)["stepwise.workflow"].AsString() != "asker" {
		t.Errorf("workflow attribute missing")
	}
	if _, ok := attrs(first)["stepwise.workflow.version"]; !ok {
		t.Errorf("version attribute missing: %v", attrs(first))
	}
	if len(second.Links()) != 1 || second.Links()[0].SpanContext.SpanID() != first.SpanContext().SpanID() {
		t.Errorf("resumed run span not linked to the first: %v", second.Links())
	}
	byStep := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range steps {
		a := attrs(s)
		if a["stepwise.step.attempt"].AsInt64() != 1 || a["stepwise.workflow"].AsString() != "asker" {
			t.Errorf("step %s attributes: %v", s.Name(), a)
		}
		byStep[a["stepwise.step.id"].AsString()] = s
	}
	name, say := byStep["name"], byStep["say"]
	if name == nil || say == nil {
		t.Fatalf("step spans: %d, %v", len(steps), byStep)
	}
	if name.Parent().SpanID() != first.SpanContext().SpanID() {
		t.Errorf("the question's span is not under the first run span")
	}
	if say.Parent().SpanID() != second.SpanContext().SpanID() {
		t.Errorf("the log step's span is not under the resumed run span")
	}
	if k := attrs(say)["stepwise.step.kind"].AsString(); k == "" {
		t.Errorf("step kind missing: %v", attrs(say))
	}
	if s := attrs(say)["stepwise.status"].AsString(); s != "succeeded" {
		t.Errorf("log step status %q", s)
	}
	_ = tr.Shutdown(context.Background())
}

// With no OTEL_* variable nothing is set up: no tracer, no exporter, no
// goroutine.
func TestOffWithoutVariables(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	before := runtime.NumGoroutine()
	tr, err := telemetry.FromEnv(context.Background(), "test")
	if err != nil || tr != nil {
		t.Fatalf("FromEnv without variables: %v, %v", tr, err)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("goroutines %d → %d", before, after)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if tr, err := telemetry.FromEnv(context.Background(), "test"); err != nil || tr != nil {
		t.Fatalf("FromEnv with OTEL_SDK_DISABLED: %v, %v", tr, err)
	}
	t.Setenv("OTEL_SDK_DISABLED", "")
	tr, err = telemetry.FromEnv(context.Background(), "test")
	if err != nil || tr == nil {
		t.Fatalf("FromEnv with an endpoint: %v, %v", tr, err)
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

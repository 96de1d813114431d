// Package telemetry keeps stepwise's OpenTelemetry traces: a span per MCP
// request (a receiving middleware), and spans per run and per step built
// from the events the engine publishes on its bus. Traces are exported
// over OTLP/HTTP only when the standard OTEL_* variables ask for it;
// surfaces call FromEnv and wire what it returns, computing nothing.
package telemetry

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"stepwise.dev/stepwise/internal/engine"
)

// MaxOpenRuns bounds the runs whose spans (and, for a paused run, the
// span context its next span links to) are kept in memory; the events of
// runs beyond it make no spans.
const MaxOpenRuns = 10_000

// maxOpenSteps bounds the open step spans of one run.
const maxOpenSteps = 1_000

// Tracer makes stepwise's spans on a tracer provider.
type Tracer struct {
	tp       trace.TracerProvider
	tr       trace.Tracer
	shutdown func(context.Context) error

	mu   sync.Mutex
	runs map[string]*runSpans // by run id
}

type runSpans struct {
	workflow, version string
	span              trace.Span // nil while the run is paused
	ctx               context.Context
	prev              trace.SpanContext // the span before a pause, linked from the next
	steps             map[string]*stepSpan
	attempts          map[string]int // by step id: the attempt the step's next start is
}

type stepSpan struct {
	span    trace.Span
	attempt int
}

// Enabled tells whether the OTEL_* variables ask for traces: an OTLP
// endpoint is set and the SDK is not disabled.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// FromEnv returns a Tracer exporting over OTLP/HTTP as the standard
// OTEL_* variables say (the exporter reads them), or nil, setting nothing
// up, when they do not ask for traces (Enabled). Shutdown flushes it.
func FromEnv(ctx context.Context, version string) (*Tracer, error) {
	if !Enabled(os.Getenv) {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		semconv.ServiceName("stepwise"), semconv.ServiceVersion(version)))
	if err != nil {
		res = resource.Default()
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, when set, win.
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := New(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// New returns a Tracer making its spans on tp (a test's, or the caller's).
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tp: tp, tr: tp.Tracer("stepwise.dev/stepwise"), runs: map[string]*runSpans{}}
}

// Shutdown ends the spans still open and flushes what is buffered to the
// exporter (for a Tracer from FromEnv).
func (t *Tracer) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	for id, r := range t.runs {
		r.endSteps("unfinished")
		if r.span != nil {
			r.span.End()
		}
		delete(t.runs, id)
	}
	t.mu.Unlock()
	if t.shutdown != nil {
		return t.shutdown(ctx)
	}
	return nil
}

// MCPMiddleware is a receiving middleware making a span per MCP request,
// with its method, the tool's name for tools/call, and its outcome: ok,
// error (a JSON-RPC error) or tool_error (a tool result with isError).
func (t *Tracer) MCPMiddleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
			name := method
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				attrs = append(attrs, attribute.String("gen_ai.tool.name", p.Name))
				name = method + " " + p.Name
			}
			ctx, span := t.tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			defer span.End()
			res, err := next(ctx, method, req)
			outcome := "ok"
			if err != nil {
				outcome = "error"
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			} else if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
				outcome = "tool_error"
				span.SetStatus(codes.Error, "tool error")
			}
			span.SetAttributes(attribute.String("stepwise.outcome", outcome))
			return res, err
		}
	}
}

// Watch makes the spans of the runs eng drives in this process from its
// events until ctx ends. lookup tells a run's workflow and version when
// its run.created was not seen (a run resumed here); nil leaves them out.
func (t *Tracer) Watch(ctx context.Context, eng *engine.Engine, lookup func(ctx context.Context, runID string) (workflow, version string, err error)) {
	events, stop := eng.SubscribeWanting(4096, func(string) bool { return false })
	go func() {
		defer stop()
		engine.Consume(ctx, events, func(ev engine.Event) { t.event(ctx, ev, lookup) })
	}()
}

// event updates the spans for one event.
func (t *Tracer) event(ctx context.Context, ev engine.Event, lookup func(context.Context, string) (string, string, error)) {
	var d struct {
		Workflow string `json:"workflow"`
		Version  string `json:"version"`
		Kind     string `json:"kind"`
		Attempt  int    `json:"attempt"`
	}
	if len(ev.Data) > 0 {
		_ = json.Unmarshal(ev.Data, &d)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.runs[ev.RunID]
	switch ev.Type {
	case engine.EventRunCreated:
		if r == nil && len(t.runs) < MaxOpenRuns {
			r = &runSpans{workflow: d.Workflow, version: d.Version, steps: map[string]*stepSpan{}, attempts: map[string]int{}}
			t.runs[ev.RunID] = r
			t.startRun(r, ev)
		}
		return
	case engine.EventRunPaused:
		if r != nil && r.span != nil {
			r.endSteps("paused")
			r.span.SetAttributes(attribute.String("stepwise.status", ev.Status))
			r.span.End(trace.WithTimestamp(ev.At))
			r.prev, r.span = r.span.SpanContext(), nil
		}
		return
	case engine.EventRunSucceeded, engine.EventRunFailed, engine.EventRunCanceled:
		if r != nil {
			r.endSteps("unfinished")
			if r.span != nil {
				status := strings.TrimPrefix(ev.Type, "run.")
				r.span.SetAttributes(attribute.String("stepwise.status", status))
				if ev.Type == engine.EventRunFailed {
					r.span.SetStatus(codes.Error, status)
				}
				r.span.End(trace.WithTimestamp(ev.At))
			}
			delete(t.runs, ev.RunID)
		}
		return
	}
	// Any other event of a run: it is running here, so it has a span (a
	// new one after a pause, or for a run resumed in this process).
	if r == nil {
		if len(t.runs) >= MaxOpenRuns {
			return
		}
		r = &runSpans{steps: map[string]*stepSpan{}, attempts: map[string]int{}}
		if lookup != nil {
			lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			r.workflow, r.version, _ = lookup(lctx, ev.RunID)
			cancel()
		}
		t.runs[ev.RunID] = r
	}
	if r.span == nil {
		t.startRun(r, ev)
	}
	switch ev.Type {
	case engine.EventStepStarted:
		if s := r.steps[ev.StepID]; s != nil { // the committed step.started after the published one
			if d.Kind != "" {
				s.span.SetAttributes(attribute.String("stepwise.step.kind", d.Kind))
			}
			return
		}
		if len(r.steps) >= maxOpenSteps {
			return
		}
		attempt := max(r.attempts[ev.StepID], 1)
		attrs := append(r.attrs(), attribute.String("stepwise.step.id", ev.StepID), attribute.Int("stepwise.step.attempt", attempt))
		if d.Kind != "" {
			attrs = append(attrs, attribute.String("stepwise.step.kind", d.Kind))
		}
		_, span := t.tr.Start(r.ctx, "step "+ev.StepID, trace.WithTimestamp(ev.At), trace.WithAttributes(attrs...))
		r.steps[ev.StepID] = &stepSpan{span: span, attempt: attempt}
	case engine.EventStepSucceeded, engine.EventStepFailed, engine.EventStepSkipped, engine.EventStepRetrying:
		if ev.Type == engine.EventStepRetrying && d.Attempt > 0 {
			r.attempts[ev.StepID] = d.Attempt + 1
		} else if ev.Type != engine.EventStepRetrying {
			delete(r.attempts, ev.StepID)
		}
		s := r.steps[ev.StepID]
		if s == nil {
			return
		}
		status := strings.TrimPrefix(ev.Type, "step.")
		s.span.SetAttributes(attribute.String("stepwise.status", status))
		if ev.Type != engine.EventStepSucceeded && ev.Type != engine.EventStepSkipped {
			s.span.SetStatus(codes.Error, status)
		}
		s.span.End(trace.WithTimestamp(ev.At))
		delete(r.steps, ev.StepID)
	}
}

// startRun starts r's span at ev, linked to its span before a pause.
func (t *Tracer) startRun(r *runSpans, ev engine.Event) {
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithTimestamp(ev.At), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append(r.attrs(), attribute.String("stepwise.run.id", ev.RunID))...)}
	if r.prev.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: r.prev, Attributes: []attribute.KeyValue{attribute.String("stepwise.link", "resumed_from")}}))
	}
	name := "run"
	if r.workflow != "" {
		name = "run " + r.workflow
	}
	r.ctx, r.span = t.tr.Start(context.Background(), name, opts...)
}

func (r *runSpans) attrs() []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 4)
	if r.workflow != "" {
		a = append(a, attribute.String("stepwise.workflow", r.workflow))
	}
	if r.version != "" {
		a = append(a, attribute.String("stepwise.workflow.version", r.version))
	}
	return a
}

// endSteps ends r's open step spans with status.
func (r *runSpans) endSteps(status string) {
	for id, s := range r.steps {
		s.span.SetAttributes(attribute.String("stepwise.status", status))
		s.span.End()
		delete(r.steps, id)
	}
}

package telemetry

import (
	"context"
	"fmt"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"stepwise.dev/stepwise/internal/engine"
)

func newTest() (*Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))), exp
}

// A retried step's spans count its attempts.
func TestRetryAttempts(t *testing.T) {
	tr, exp := newTest()
	at := time.Unix(1000, 0)
	for _, ev := range []engine.Event{
		{RunID: "r", Type: engine.EventRunCreated, Data: []byte(`{"workflow":"w","version":"3"}`), At: at},
		{RunID: "r", Type: engine.EventRunStarted, At: at},
		{RunID: "r", Type: engine.EventStepStarted, StepID: "s", Data: []byte(`{"kind":"uses","visit":1}`), At: at},
		{RunID: "r", Type: engine.EventStepRetrying, StepID: "s", Data: []byte(`{"attempt":1}`), At: at},
		{RunID: "r", Type: engine.EventStepStarted, StepID: "s", At: at},
		{RunID: "r", Type: engine.EventStepSucceeded, StepID: "s", At: at},
		{RunID: "r", Type: engine.EventRunSucceeded, At: at},
	} {
		tr.event(context.Background(), ev, nil)
	}
	var got []string
	for _, s := range exp.GetSpans() {
		a := map[string]string{}
		for _, kv := range s.Attributes {
			a[string(kv.Key)] = kv.Value.String()
		}
		got = append(got, fmt.Sprintf("%s attempt=%s status=%s version=%s", s.Name, a["stepwise.step.attempt"], a["stepwise.status"], a["stepwise.workflow.version"]))
	}
	want := []string{"step s attempt=1 status=retrying version=3", "step s attempt=2 status=succeeded version=3", "run w attempt= status=succeeded version=3"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("spans:\n%q\nwant\n%q", got, want)
	}
	if len(tr.runs) != 0 {
		t.Fatalf("%d runs kept after their end", len(tr.runs))
	}
}

// Runs beyond MaxOpenRuns make no spans and are not kept.
func TestOpenRunsBounded(t *testing.T) {
	tr, exp := newTest()
	for i := range MaxOpenRuns + 10 {
		id := fmt.Sprint("r", i)
		tr.event(context.Background(), engine.Event{RunID: id, Type: engine.EventRunCreated, Data: []byte(`{"workflow":"w"}`)}, nil)
		tr.event(context.Background(), engine.Event{RunID: id, Type: engine.EventStepStarted, StepID: "s"}, nil)
	}
	if len(tr.runs) != MaxOpenRuns {
		t.Fatalf("%d runs kept", len(tr.runs))
	}
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(exp.GetSpans()); n != 2*MaxOpenRuns {
		t.Fatalf("%d spans, want %d", n, 2*MaxOpenRuns)
	}
}

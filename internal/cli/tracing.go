package cli

import (
	"context"
	"time"

	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/telemetry"
)

// openTracer is the tracer the OTEL_* variables ask for, or nil (a setup
// error is told to report and tracing left off).
func openTracer(report func(error)) *telemetry.Tracer {
	tr, err := telemetry.FromEnv(context.Background(), Version)
	if err != nil {
		report(err)
		return nil
	}
	return tr
}

// watchRuns makes tr's run and step spans from svc's engine until ctx ends.
func watchRuns(ctx context.Context, tr *telemetry.Tracer, svc *service.Service) {
	tr.Watch(ctx, svc.Engine, func(ctx context.Context, runID string) (string, string, error) {
		r, err := svc.Store.GetRun(ctx, runID)
		return r.Workflow, r.Version, err
	})
}

// closeTracer ends tr's open spans and flushes them (at most 5 s).
func closeTracer(tr *telemetry.Tracer) {
	if tr == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tr.Shutdown(ctx)
}

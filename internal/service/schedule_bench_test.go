package service

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkSchedulerTickIdle is the cost of one scheduler tick when none
// of 100 schedules is due: what every replica pays each second.
func BenchmarkSchedulerTickIdle(b *testing.B) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	svc, err := Open(ctx, Options{Home: b.TempDir(), Durability: "normal", Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(ctx)
	for i := range 100 {
		content := scheduledWorkflow(fmt.Sprintf("w%03d", i), "{every: 1h, inputs: {who: x}}")
		if _, err := svc.SaveWorkflow(ctx, SaveRequest{Content: content}); err != nil {
			b.Fatal(err)
		}
	}
	if err := svc.SyncAllSchedules(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if f, err := svc.FireDueSchedules(ctx); err != nil || len(f) != 0 {
			b.Fatal(f, err)
		}
	}
}

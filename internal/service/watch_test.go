package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// A run that reached its pause before Watch started still reports every
// event the action caused: Watch catches up from the subscription.
func TestWatchCatchesUpWithEventsOfARunThatAlreadyPaused(t *testing.T) {
	ctx := context.Background()
	svc, err := Open(ctx, Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	file := filepath.Join(t.TempDir(), "w.yaml")
	def := "version: 1\nname: w\nsteps:\n  - id: a\n    uses: noop\n  - id: b\n    uses: noop\n  - id: q\n    ask: {prompt: Name?}\n"
	if err := os.WriteFile(file, []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := svc.LoadWorkflow(file)
	if err != nil {
		t.Fatal(err)
	}
	sub := svc.Subscribe()
	defer sub.Close()
	id, err := svc.StartRun(ctx, l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		run, err := svc.Store.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status == store.StatusWaiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %s", run.Status)
		}
	}
	var types []string
	status, err := svc.Watch(ctx, id, 5*time.Second, sub, func(ev engine.Event) {
		if ev.Seq > 0 {
			types = append(types, ev.Type+":"+ev.StepID)
		}
	})
	if err != nil || status != store.StatusWaiting {
		t.Fatalf("watch: %s %v", status, err)
	}
	want := map[string]bool{engine.EventStepSucceeded + ":a": false, engine.EventStepSucceeded + ":b": false, engine.EventRunPaused + ":q": false}
	for _, ty := range types {
		if _, ok := want[ty]; ok {
			want[ty] = true
		}
	}
	for ty, seen := range want {
		if !seen {
			t.Errorf("event %s not delivered; got %v", ty, types)
		}
	}
	// Without a subscription opened before, nothing old is replayed and
	// Watch returns at once.
	start := time.Now()
	types = nil
	if _, err := svc.Watch(ctx, id, 5*time.Second, nil, func(ev engine.Event) { types = append(types, ev.Type) }); err != nil {
		t.Fatal(err)
	}
	if len(types) != 0 || time.Since(start) > 500*time.Millisecond {
		t.Errorf("a fresh watch of a waiting run delivered %v after %s", types, time.Since(start))
	}
}

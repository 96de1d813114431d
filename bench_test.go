package stepwise_test

import (
	"context"
	"testing"

	"stepwise.dev/stepwise"
	"stepwise.dev/stepwise/code"
)

// BenchmarkGoActionRun: start a one-step run of a Go action (NewAction)
// and wait for it to succeed, on SQLite.
func BenchmarkGoActionRun(b *testing.B) {
	ctx := context.Background()
	eng, err := stepwise.Open(ctx, stepwise.Config{Home: b.TempDir(),
		Actions: []stepwise.Action{stepwise.NewAction("greet", "Greets someone.", greet)}})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close(ctx)
	def := []byte("version: 1\nname: one\nsteps:\n  - id: g\n    uses: greet\n    with: {name: Ada}\noutputs:\n  text: ${{ steps.g.output.text }}\n")
	for b.Loop() {
		run, err := eng.StartDefinition(ctx, def, nil)
		if err != nil {
			b.Fatal(err)
		}
		if run, err = eng.Wait(ctx, run.ID); err != nil || run.Status != code.StatusSucceeded {
			b.Fatalf("run %+v, %v", run, err)
		}
	}
}

// BenchmarkOpen: open and close an engine on a new home.
func BenchmarkOpen(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		eng, err := stepwise.Open(ctx, stepwise.Config{Home: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		if err := eng.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

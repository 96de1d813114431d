package service

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// A waiting run read again unchanged shows the same view (its rows kept),
// and the view follows every change: an answer through this service, then
// one through another service on the same home (another process), then a
// cancel.
func TestGetRunFollowsTheRunAfterKeptReads(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "version: 1\nname: loop\nsteps:\n  - id: n\n    max_visits: 100\n    ask: {prompt: Next?, type: integer}\n  - id: again\n    switch:\n      - goto: n\n"
	if err := os.WriteFile(filepath.Join(lib, "loop.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := openPurgeService(t, home, Options{})
	other := openPurgeService(t, home, Options{})
	id := start(t, svc, "loop", store.StatusWaiting)

	first, err := svc.GetRun(ctx, id)
	if err != nil || first.Pause == nil || len(first.Steps) != 0 {
		t.Fatalf("first view: %+v %v", first, err)
	}
	again, err := svc.GetRun(ctx, id)
	if err != nil || again.Pause == nil || again.Pause.Token != first.Pause.Token || again.Pause.Seq != first.Pause.Seq || len(again.Steps) != 0 {
		t.Fatalf("the same run read again: %+v %v", again, err)
	}
	// Each view has its own copy of the kept pause.
	again.Pause.Token, again.Pause.Prompt = "changed by a caller", "changed"
	if third, err := svc.GetRun(ctx, id); err != nil || third.Pause == nil || third.Pause.Token != first.Pause.Token || third.Pause.Prompt != first.Pause.Prompt {
		t.Fatalf("a caller's change reached the next view: %+v %v", third, err)
	}

	answer := func(via *Service, token string, value int) {
		t.Helper()
		if _, err := via.Continue(ctx, token, value); err != nil {
			t.Fatal(err)
		}
		if st, err := via.Wait(ctx, id, 30*time.Second); err != nil || st != store.StatusWaiting {
			t.Fatalf("after answer %d: %s %v", value, st, err)
		}
	}
	answers := func(v *RunView) []any {
		var out []any
		for _, st := range v.Steps {
			if st.ID == "n" {
				out = append(out, st.Answer)
			}
		}
		return out
	}

	answer(svc, first.Pause.Token, 1)
	v, err := svc.GetRun(ctx, id)
	if err != nil || v.Pause == nil || v.Pause.Seq == first.Pause.Seq || v.Pause.Token == first.Pause.Token || len(answers(v)) != 1 {
		t.Fatalf("after the first answer: %+v %v", v, err)
	}
	if _, err := svc.GetRun(ctx, id); err != nil {
		t.Fatal(err)
	}

	answer(other, v.Pause.Token, 2)
	w, err := svc.GetRun(ctx, id)
	if err != nil || w.Pause == nil || w.Pause.Seq == v.Pause.Seq || len(answers(w)) != 2 {
		t.Fatalf("after an answer through another service: %+v %v", w, err)
	}

	if err := other.Cancel(ctx, id, "done", false); err != nil {
		t.Fatal(err)
	}
	c, err := svc.GetRun(ctx, id)
	if err != nil || c.Status != store.StatusCanceled || c.Pause != nil {
		t.Fatalf("after a cancel through another service: %+v %v", c, err)
	}
}

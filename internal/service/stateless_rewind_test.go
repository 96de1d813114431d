package service

import (
	"context"
	"fmt"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Going back in a stateless run: rewinding the five-question run's state to
// its second question offers answers 2–5 as defaults on another service
// (sharing only the key); changing the third only ends with it and the
// others kept. The state returned holds the new run alone.
func TestStatelessRewind(t *testing.T) {
	ctx := context.Background()
	a, b := openStateless(t, testKeyA), openStateless(t, testKeyA)
	res, err := a.StartStateless(ctx, mustParse(t, a, fiveQuestions), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := []any{"x", "y", 3, true, "green"}
	for _, v := range first {
		if res, err = a.ContinueStateless(ctx, res.State, res.View.Pause.Token, v, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	oldID, finished := res.View.ID, res.State
	res, err = b.RewindStateless(ctx, finished, "q2", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.View.ID == oldID {
		t.Fatalf("the rewind kept the run id %s", oldID)
	}
	p, err := b.stateless.openState(res.State)
	if err != nil || len(p.Snapshot.Runs) != 1 || p.Snapshot.Runs[0].Run.ID != res.View.ID {
		t.Fatalf("the new state holds %d runs (%v)", len(p.Snapshot.Runs), err)
	}
	// q2..q5 offer the earlier answers; q3 gets a new one.
	for i, step := range []string{"q2", "q3", "q4", "q5"} {
		pa := res.View.Pause
		if res.View.Status != store.StatusWaiting || pa == nil || pa.StepID != step {
			t.Fatalf("at %s: %+v", step, res.View)
		}
		want := first[i+1]
		if !pa.Previous || fmt.Sprint(pa.Default) != fmt.Sprint(want) {
			t.Fatalf("%s: default %v (previous %v), want the earlier %v", step, pa.Default, pa.Previous, want)
		}
		value := pa.Default
		if step == "q3" {
			value = 7
		}
		svc := []*Service{a, b}[i%2]
		if res, err = svc.ContinueStateless(ctx, res.State, pa.Token, value, 10*time.Second); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	v := res.View
	if v.Status != store.StatusSucceeded || v.Outputs["joined"] != "x/y" || fmt.Sprint(v.Outputs["n"]) != "7" || v.Outputs["yes"] != true || v.Outputs["color"] != "green" {
		t.Fatalf("end: %s %v", v.Status, v.Outputs)
	}
	// Restart: the first question again, its earlier answer offered.
	res, err = a.RestartStateless(ctx, finished, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if pa := res.View.Pause; pa == nil || pa.StepID != "q1" || !pa.Previous || pa.Default != "x" {
		t.Fatalf("restart: %+v", res.View.Pause)
	}
	// A step that is no question: STEP_NOT_FOUND, as for a stored run.
	if _, err := a.RewindStateless(ctx, finished, "mid", time.Second); CodeOf(err) != "STEP_NOT_FOUND" {
		t.Fatalf("rewind to a transform: %v", err)
	}
	if _, err := a.RewindStateless(ctx, finished[:len(finished)-4], "q2", time.Second); CodeOf(err) != CodeStateInvalid {
		t.Fatalf("rewind of a truncated state: %v", err)
	}
}

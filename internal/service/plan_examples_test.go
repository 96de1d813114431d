package service

import (
	"context"
	"testing"
)

// planExample plans an example with the inputs its run gets: it must be
// ready, and no argument may fail to render with them.
func planExample(t *testing.T, svc *Service, file string, inputs map[string]any) *Plan {
	t.Helper()
	p, err := svc.Plan(context.Background(), PlanRequest{Ref: file, Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Ready {
		t.Fatalf("plan not ready: %s", toJSON(p.Violations))
	}
	for _, s := range p.Steps {
		if len(s.Problems) > 0 || s.Decision == DecisionError {
			t.Errorf("plan: step %s: %s %v", s.ID, s.Reason, s.Problems)
		}
	}
	return p
}

// checkPlanAgainstRun compares a plan's decisions with what the run did: a
// step planned to be skipped never ran, a step planned to run did.
func checkPlanAgainstRun(t *testing.T, svc *Service, p *Plan, runID string) {
	t.Helper()
	recs, err := svc.Store.Steps(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]bool{}
	for _, r := range recs {
		if r.Status != "skipped" {
			ran[r.StepID] = true
		}
	}
	for _, s := range p.Steps {
		switch {
		case s.Decision == DecisionSkip && ran[s.ID]:
			t.Errorf("step %s ran, the plan said skip: %s", s.ID, s.Reason)
		case s.Decision == DecisionRun && !ran[s.ID]:
			t.Errorf("step %s did not run, the plan said run", s.ID)
		}
	}
}

package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// library serves sub-workflows from documents.
func library(t *testing.T, h *harness, docs map[string]string) {
	h.eng.workflows = func(_ context.Context, name, _ string) (*WorkflowDef, error) {
		doc, ok := docs[name]
		if !ok {
			return nil, fmt.Errorf("no workflow %q", name)
		}
		res := workflow.Check([]byte(doc), workflow.Options{})
		if !res.Valid() {
			t.Fatalf("invalid child %s: %v", name, res.Violations)
		}
		def, _ := workflow.Canonical(res.Source.Value)
		return &WorkflowDef{Workflow: res.Workflow, Version: res.Version, Definition: def}, nil
	}
}

const childDoc = `version: 1
name: child
inputs:
  n: {type: integer}
steps:
  - id: double
    uses: transform
    with: {value: "${{ inputs.n * 2 }}"}
outputs:
  doubled: ${{ steps.double.output }}
`

const askingChild = `version: 1
name: asking
steps:
  - id: who
    ask: {prompt: "Who?", type: string}
outputs:
  who: ${{ steps.who.answer }}
`

func TestSubWorkflow(t *testing.T) {
	h := newHarness(t)
	library(t, h, map[string]string{"child": childDoc})
	doc := `version: 1
name: parent
steps:
  - id: call
    workflow: child
    with: {n: 21}
outputs:
  v: ${{ steps.call.output.doubled }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded || outputs(t, r)["v"] != 42.0 {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Outputs)
	}
	kids, _, _ := h.store.ListRuns(context.Background(), store.RunFilter{ParentID: id})
	if len(kids) != 1 || kids[0].Workflow != "child" || kids[0].Status != store.StatusSucceeded {
		t.Fatalf("children %+v", kids)
	}
}

func TestChildPauseSurfacesInParent(t *testing.T) {
	h := newHarness(t)
	library(t, h, map[string]string{"asking": askingChild})
	doc := `version: 1
name: parent
steps:
  - id: call
    workflow: asking
  - id: greet
    uses: transform
    with: {value: "hello ${{ steps.call.output.who }}"}
outputs:
  greeting: ${{ steps.greet.output }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, _ := h.store.GetRun(context.Background(), id)
		return r.Status == store.StatusWaiting
	})
	p := h.pause(id)
	if p.StepID != "who" || p.RunID == id {
		t.Fatalf("pause %+v", p)
	}
	if _, err := h.eng.Continue(context.Background(), p.Token, "Ada"); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded || outputs(t, r)["greeting"] != "hello Ada" {
		t.Fatalf("%s %s %s", r.Status, r.Error, r.Outputs)
	}
}

func TestRecursionIsBounded(t *testing.T) {
	h := newHarness(t)
	self := "version: 1\nname: again\nsteps:\n  - {id: deeper, workflow: again}\n"
	library(t, h, map[string]string{"again": self})
	id, err := h.start(self, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusFailed || !strings.Contains(string(r.Error), "nest deeper than") {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
}

func TestSubWorkflowsInsideAForeach(t *testing.T) {
	h := newHarness(t)
	library(t, h, map[string]string{"child": childDoc, "asking": askingChild})
	doc := `version: 1
name: fan-out
steps:
  - id: each
    foreach: ${{ [1, 2, 3, 4] }}
    concurrency: 2
    steps:
      - id: call
        workflow: child
        with: {n: "${{ item }}"}
  - id: who
    parallel:
      - {id: ask_child, workflow: asking}
outputs:
  doubled: '${{ map(steps.each.output, #.doubled) }}'
  who: ${{ steps.ask_child.output.who }}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, _ := h.store.GetRun(context.Background(), id)
		return r.Status == store.StatusWaiting
	})
	p := h.pause(id)
	if p.StepID != "who" {
		t.Fatalf("pause %+v", p)
	}
	if _, err := h.eng.Continue(context.Background(), p.Token, "Grace"); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("%s %s", r.Status, r.Error)
	}
	out := outputs(t, r)
	if fmt.Sprint(out["doubled"]) != "[2 4 6 8]" || out["who"] != "Grace" {
		t.Fatalf("outputs %v", out)
	}
	kids, _, _ := h.store.ListRuns(context.Background(), store.RunFilter{ParentID: id})
	if len(kids) != 5 {
		t.Fatalf("%d child runs", len(kids))
	}
}

package graph

import (
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/workflow"
)

// draw loads a workflow from YAML and reads its chart back.
func draw(t *testing.T, yaml string) *chart {
	t.Helper()
	w, _, err := workflow.Load([]byte(yaml), workflow.Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := Mermaid(w)
	c, err := parseChart(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return c
}

func wantEdge(t *testing.T, c *chart, from, to, style, label string) {
	t.Helper()
	e, ok := c.edge(from, to)
	if !ok {
		t.Fatalf("no edge %s → %s; edges: %v", from, to, c.edges)
	}
	if e.style != style || e.label != label {
		t.Errorf("edge %s → %s is %s %q, want %s %q", from, to, e.style, e.label, style, label)
	}
}

func TestSequenceAndShapes(t *testing.T) {
	c := draw(t, `version: 1
name: kinds
steps:
  - {id: act, uses: log, with: {message: a}}
  - {id: q, ask: {prompt: Why?}}
  - {id: ag, agent: {instructions: Do it}}
  - {id: sub, workflow: other}
  - {id: nap, sleep: 1s}
  - {id: stop, fail: no}
`)
	order := []string{"wf_start", "s_act", "s_q", "s_ag", "s_sub", "s_nap", "s_stop"}
	for i := 1; i < len(order); i++ {
		wantEdge(t, c, order[i-1], order[i], "-->", "")
	}
	shapes := map[string]string{"s_act": "[", "s_q": "[/", "s_ag": "{{", "s_sub": "[[", "s_nap": "(", "s_stop": "(["}
	for id, open := range shapes {
		if c.shapes[id] != open {
			t.Errorf("%s has shape %q, want %q", id, c.shapes[id], open)
		}
	}
	// fail is terminal: its only way on is the failure path.
	for _, e := range c.out("s_stop") {
		if e.style != "-.->" || e.to != "wf_failed" {
			t.Errorf("fail step leads on by %v", e)
		}
	}
	if _, ok := c.edge("s_stop", "wf_end"); ok {
		t.Error("a fail step leads to the end")
	}
	if got := c.nodes["s_q"]; got != "q<br>ask: Why?" {
		t.Errorf("question label %q", got)
	}
}

func TestIfSkipsTheStep(t *testing.T) {
	c := draw(t, `version: 1
name: cond
inputs: {go: {type: boolean}}
steps:
  - {id: a, uses: log, with: {message: a}}
  - {id: b, if: '${{ inputs.go }}', uses: log, with: {message: b}}
  - {id: c, uses: log, with: {message: c}}
`)
	wantEdge(t, c, "s_a", "i_b", "-->", "")
	wantEdge(t, c, "i_b", "s_b", "-->", "inputs.go")
	wantEdge(t, c, "i_b", "s_c", "-->", "else")
	wantEdge(t, c, "s_b", "s_c", "-->", "")
}

func TestSwitchCasesAndLoops(t *testing.T) {
	c := draw(t, `version: 1
name: sw
inputs: {n: {type: integer}}
steps:
  - {id: top, max_visits: 3, uses: log, with: {message: a}}
  - id: route
    switch:
      - {if: inputs.n == 1, goto: top}
      - {if: inputs.n == 2, goto: far}
  - {id: near, uses: log, with: {message: b}}
  - {id: far, uses: log, with: {message: c}}
  - id: back
    max_visits: 4
    switch: [{goto: back}]
`)
	wantEdge(t, c, "s_route", "s_top", "==>", "inputs.n == 1 · loop · max_visits 3 on top")
	wantEdge(t, c, "s_route", "s_far", "-->", "inputs.n == 2")
	wantEdge(t, c, "s_route", "s_near", "-->", "no match")
	wantEdge(t, c, "s_back", "s_back", "==>", "loop · max_visits 4 on back")
	// The last case always matches: nothing falls through to the end.
	if _, ok := c.edge("s_back", "wf_end"); ok {
		t.Error("an unconditional switch falls through")
	}
}

func TestGroups(t *testing.T) {
	c := draw(t, `version: 1
name: groups
inputs: {hosts: {type: array}}
steps:
  - id: both
    parallel:
      - id: each
        foreach: ${{ inputs.hosts }}
        concurrency: 4
        steps:
          - {id: one, uses: log, with: {message: '${{ item }}'}}
          - {id: two, uses: log, with: {message: '${{ item }}'}}
      - {id: side, uses: log, with: {message: s}}
  - {id: after, uses: log, with: {message: a}}
`)
	if c.parent["g_each"] != "g_both" || c.parent["s_one"] != "g_each" || c.parent["s_side"] != "g_both" {
		t.Errorf("nesting wrong: %v", c.parent)
	}
	if !strings.Contains(c.subgraphs["g_each"], "foreach inputs.hosts, concurrency 4") {
		t.Errorf("foreach label %q", c.subgraphs["g_each"])
	}
	// Both branches start together at the fork and join before after.
	wantEdge(t, c, "wf_start", "f_both", "-->", "")
	wantEdge(t, c, "f_both", "s_one", "-->", "")
	wantEdge(t, c, "f_both", "s_side", "-->", "")
	if c.parent["f_both"] != "g_both" {
		t.Error("the fork is outside its group")
	}
	wantEdge(t, c, "s_one", "s_two", "-->", "")
	wantEdge(t, c, "s_two", "s_after", "-->", "")
	wantEdge(t, c, "s_side", "s_after", "-->", "")
}

func TestFailurePath(t *testing.T) {
	c := draw(t, `version: 1
name: undo
inputs: {n: {type: integer}}
steps:
  - {id: a, uses: log, with: {message: a}, compensate: {uses: log}}
  - {id: stop, if: inputs.n > 1, fail: too many}
  - {id: b, uses: log, with: {message: b}, compensate: {uses: log}}
on_failure:
  - {uses: log, with: {message: failed}}
`)
	wantEdge(t, c, "s_a", "k_a", "-.->", "compensate")
	wantEdge(t, c, "s_b", "k_b", "-.->", "compensate")
	// b comes after the fail step, so it is not undone when stop fails.
	wantEdge(t, c, "s_stop", "k_a", "-.->", "fails")
	wantEdge(t, c, "k_b", "k_a", "-.->", "")
	wantEdge(t, c, "k_a", "hf_0", "-.->", "")
	wantEdge(t, c, "hf_0", "wf_failed", "-.->", "")
	for _, id := range []string{"k_a", "k_b", "hf_0", "wf_failed"} {
		if c.parent[id] != "wf_failure" {
			t.Errorf("%s is not in the failure subgraph", id)
		}
	}
}

func TestNoFailurePathWhenNothingFails(t *testing.T) {
	c := draw(t, "version: 1\nname: plain\nsteps: [{id: a, uses: log, with: {message: a}}]\n")
	if _, ok := c.subgraphs["wf_failure"]; ok {
		t.Error("a failure subgraph without anything that fails or undoes")
	}
}

func TestDeterministic(t *testing.T) {
	w := unsafeIDs()
	first := Mermaid(w)
	for i := 0; i < 20; i++ {
		if got := Mermaid(w); got != first {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, got, first)
		}
	}
}

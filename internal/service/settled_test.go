package service

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// settleFlow asks again and again, through a switch and a pure step, with
// a secret input the view masks, then asks once more and finishes.
const settleFlow = `version: 1
name: settle
inputs:
  who: {type: string}
  key: {type: string, secret: true}
steps:
  - id: n
    max_visits: 20
    ask: {prompt: "Number for ${{ inputs.who }}?", type: integer}
  - id: echo
    uses: transform
    with: {value: "${{ steps.n.answer }}"}
  - id: more
    switch:
      - if: steps.n.answer < 5
        goto: n
  - id: color
    ask: {prompt: "Color?", type: choice, choices: [red, blue]}
outputs:
  color: ${{ steps.color.answer }}
`

// groupFlow asks at the top level, then two questions side by side in a
// parallel group: after the first answer two pauses are open, so the
// view may not come from the commit (engine.Settled is nil).
const groupFlow = `version: 1
name: grouped
steps:
  - id: who
    ask: {prompt: "Who?", type: string}
  - id: both
    parallel:
      - id: color
        ask: {prompt: "Color?", type: string}
      - id: size
        ask: {prompt: "Size?", type: string}
`

// TestContinuedViewWithGroupsIsRead: a run whose workflow has groups
// takes no shortcut, and its result is still the view read back.
func TestContinuedViewWithGroupsIsRead(t *testing.T) {
	ctx := context.Background()
	s := serviceWith(t, "grouped", []byte(groupFlow))
	id, v := startPaused(t, s, "grouped", nil)
	sub := s.Subscribe()
	defer sub.Close()
	res, err := s.ContinueFromAgent(ctx, v.Pause.Token, "Ada")
	if err != nil {
		t.Fatal(err)
	}
	if res.Settled != nil {
		t.Fatalf("a workflow with groups settled: %+v", res.Settled)
	}
	got, err := s.AwaitContinued(ctx, id, res, 5*time.Second, sub, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.GetRunBrief(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) || got.Pause == nil {
		t.Fatalf("view\n%s\nread back\n%s", g, w)
	}
}

// TestContinuedViewIsTheStoredView: the view run_continue returns from
// the commit that recorded the answer (AwaitContinued with
// engine.Settled) is the view a read of the run gives right after, token
// included, for every answer of a run; and the shortcut is taken.
func TestContinuedViewIsTheStoredView(t *testing.T) {
	ctx := context.Background()
	s := serviceWith(t, "settle", []byte(settleFlow))
	id, v := startPaused(t, s, "settle", map[string]any{"who": "ada", "key": "hunter2"})
	answers := []any{1, 2, 3, 4, 9, "blue"}
	settled := 0
	for i, a := range answers {
		sub := s.Subscribe()
		res, err := s.ContinueFromAgent(ctx, v.Pause.Token, a)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		got, err := s.AwaitContinued(ctx, id, res, 5*time.Second, sub, nil)
		sub.Close()
		if err != nil {
			t.Fatalf("answer %d: await: %v", i, err)
		}
		want, err := s.GetRunBrief(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("answer %d (settled %v): view from the commit\n%s\nview read back\n%s", i, res.Settled != nil, g, w)
		}
		if res.Settled != nil {
			settled++
			if res.Settled.Run.Rev == 0 || res.Settled.Run.EventSeq == 0 {
				t.Fatalf("answer %d: settled run without revision or events: %+v", i, res.Settled.Run)
			}
		}
		if i < len(answers)-1 && got.Pause == nil {
			t.Fatalf("answer %d: no next pause: %s", i, g)
		}
		v = got
	}
	if v.Status != "succeeded" || v.Outputs["color"] != "blue" {
		t.Fatalf("run ended %s with %v", v.Status, v.Outputs)
	}
	// Every answer but the last (which finishes the run) opens the next
	// question in its own commit; a loaded machine may split one off (the
	// pipeline's flush), so most, not all, must have taken the shortcut.
	if settled < 3 {
		t.Fatalf("%d of %d continues built their view from the commit", settled, len(answers)-1)
	}
}

package graph

import (
	"math"
	"sort"
	"strconv"

	"stepwise.dev/stepwise/internal/workflow"
)

// pathNode is one node of the failure path.
type pathNode struct {
	id, class string
	label     []string
	shape     shape
	// after is the position (in workflow.Flatten order) of the step a
	// compensation undoes; -1 for what runs on every failure.
	after int
}

// failurePlan lists what runs once the run fails, in order: the
// compensations, last completed first, then the on_failure hooks, then the
// failed end. Completion order is only known at run time; reverse document
// order is what it is when nothing jumps, so that is what the chart shows.
// The plan is empty when nothing fails explicitly, undoes or reacts.
func failurePlan(w *workflow.Workflow) []pathNode {
	var path []pathNode
	// on_success hooks complete after every step: undone first.
	for i := len(w.OnSuccess) - 1; i >= 0; i-- {
		if h := w.OnSuccess[i]; h != nil && h.Compensate != nil {
			path = append(path, undo(hookID('c', i), hookName("on_success", i, h), h.Compensate, math.MaxInt))
		}
	}
	steps := workflow.Flatten(w.Steps)
	fails := false
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		fails = fails || s.Kind() == workflow.KindFail
		if s.Compensate != nil {
			path = append(path, undo(nodeID('k', s.ID), s.ID, s.Compensate, i))
		}
	}
	for i, h := range w.OnFailure {
		if h != nil {
			path = append(path, pathNode{id: hookID('f', i), shape: rect, label: hookLabel("on_failure", i, h), after: -1})
		}
	}
	if len(path) == 0 && !fails {
		return nil
	}
	return append(path, pathNode{id: "wf_failed", shape: stadium, class: "fail", label: []string{"failed"}, after: -1})
}

func undo(id, of string, a *workflow.Action, after int) pathNode {
	return pathNode{id: id, shape: reversed, class: "undo", label: []string{clip("undo "+of, 0), clip("uses "+a.Uses, maxText)}, after: after}
}

// failEntry is where a fail step at position pos (in workflow.Flatten
// order) joins the failure path: the compensation of the last step before
// it, as steps after it have not completed, else the on_failure hooks.
func (b *builder) failEntry(pos int) string {
	// The path is ordered by after, descending.
	i := sort.Search(len(b.failure), func(i int) bool { return b.failure[i].after < pos })
	if i == len(b.failure) {
		return "" // no failure path: the workflow has no fail step
	}
	return b.failure[i].id
}

// onSuccess draws the on_success hooks between the last steps and the end.
func (b *builder) onSuccess(hooks []*workflow.Hook, exits []exit) []exit {
	has := false
	for _, h := range hooks {
		has = has || h != nil
	}
	if !has {
		return exits
	}
	b.subgraph("wf_success", "on_success", nil, func() {
		for i, h := range hooks {
			if h == nil {
				continue
			}
			id := hookID('s', i)
			b.node(id, rect, hookLabel("on_success", i, h), "", nil)
			b.connect(exits, id)
			exits = []exit{{from: id}}
			if h.Compensate != nil {
				b.edge(id, hookID('c', i), "compensate", dashed)
			}
		}
	})
	return exits
}

// failurePath draws the failure plan as one dashed chain in its own
// subgraph; fail steps and compensate edges lead into it.
func (b *builder) failurePath() {
	if len(b.failure) == 0 {
		return
	}
	b.subgraph("wf_failure", "on failure", nil, func() {
		for _, n := range b.failure {
			b.node(n.id, n.shape, n.label, n.class, nil)
		}
	})
	for i := 1; i < len(b.failure); i++ {
		b.edge(b.failure[i-1].id, b.failure[i].id, "", dashed)
	}
}

// hookID names hook nodes: hs_N (on_success), hf_N (on_failure), hc_N
// (an on_success hook's compensation). The h prefix keeps them apart from
// step nodes, whose second character is _ or x.
func hookID(role byte, i int) string {
	return "h" + string(role) + "_" + strconv.Itoa(i)
}

// hookName is the hook's id, or its place in its list, counted from 1.
func hookName(list string, i int, h *workflow.Hook) string {
	if h.ID != "" {
		return h.ID
	}
	return list + " " + strconv.Itoa(i+1)
}

func hookLabel(list string, i int, h *workflow.Hook) []string {
	cond := ""
	if h.If != "" {
		cond = "if " + condition(h.If)
	}
	mods := ""
	if h.ContinueOnError {
		mods = "continue on error"
	}
	return []string{clip(hookName(list, i, h), 0), clip(cond, maxText), clip("uses "+h.Uses, maxText), mods}
}

package service

import (
	"encoding/json"

	"stepwise.dev/stepwise/engine"
)

// RunTree tells, from the events of every run in the order the bus
// delivers them, those of one run and of its sub-workflow runs at any
// depth. A child run is known from its run.created event (which names its
// parent and is published before the child runs a step) or from its
// parent's step.child_started.
type RunTree struct {
	depth map[string]int
}

// NewRunTree follows the run root and its sub-workflow runs.
func NewRunTree(root string) *RunTree {
	return &RunTree{depth: map[string]int{root: 0}}
}

// Depth reports whether e is an event of the tree, and the depth of its
// run (0 for the root, 1 for its sub-workflows, …).
func (t *RunTree) Depth(e engine.Event) (int, bool) {
	var d struct {
		ParentID   string `json:"parent_id"`
		ChildRunID string `json:"child_run_id"`
	}
	switch e.Type {
	case engine.EventRunCreated:
		if _, known := t.depth[e.RunID]; !known && json.Unmarshal(e.Data, &d) == nil && d.ParentID != "" {
			if pd, ok := t.depth[d.ParentID]; ok {
				t.depth[e.RunID] = pd + 1
			}
		}
	case engine.EventChildStarted:
		if pd, ok := t.depth[e.RunID]; ok && json.Unmarshal(e.Data, &d) == nil && d.ChildRunID != "" {
			if _, known := t.depth[d.ChildRunID]; !known {
				t.depth[d.ChildRunID] = pd + 1
			}
		}
	}
	depth, ok := t.depth[e.RunID]
	return depth, ok
}

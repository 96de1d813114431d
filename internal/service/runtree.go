package service

import (
	"context"
	"encoding/json"

	"stepwise.dev/stepwise/internal/engine"
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

// RunTree returns the RunTree of runID knowing the sub-workflow runs it
// has already, at any depth (a resumed run's children, or those a run
// started before its follower looked): their events show too.
func (s *Service) RunTree(ctx context.Context, runID string) *RunTree {
	t := NewRunTree(runID)
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		run, err := s.Store.GetRun(ctx, id)
		if err != nil {
			return
		}
		kids, _ := s.Engine.Children(ctx, run)
		for _, k := range kids {
			if _, known := t.depth[k.ID]; !known {
				t.depth[k.ID] = depth + 1
				walk(k.ID, depth+1)
			}
		}
	}
	walk(runID, 0)
	return t
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

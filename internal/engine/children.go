package engine

import (
	"context"

	"stepwise.dev/stepwise/internal/cache"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// MaxChildren is how many children of a run views and pauses look at.
const MaxChildren = 1000

// spawns remembers, by version, whether a definition has a sub-workflow
// step (definitions never change under a version): the maxSpawns most
// recently used versions (a version that falls out is looked at again).
var spawns = cache.New[string, bool](maxSpawns) // version → has a sub-workflow step

// maxSpawns bounds spawns (a few dozen bytes per version).
const maxSpawns = 4096

// mayHaveChildren reports whether runs of a version can have child runs.
// Children are started only by sub-workflow steps (at the top level or
// inside groups), and a fork of a child keeps that child's parent, so a
// definition without such a step never has any: the read path then skips
// looking for them. Unknown versions may.
func (e *Engine) mayHaveChildren(ctx context.Context, version string) bool {
	if has, ok := spawns.Get(version); ok {
		return has
	}
	wf, err := e.definition(ctx, version)
	if err != nil {
		return true
	}
	has := false
	for _, s := range workflow.Flatten(wf.Steps) {
		if s.Workflow != "" {
			has = true
			break
		}
	}
	spawns.Add(version, has)
	return has
}

// MayHaveChildren reports whether runs of a version can have child runs
// (sub-workflows). A run of a version that cannot has none, and inherits no
// pause from any: its own open pauses are all PausesWith would return.
func (e *Engine) MayHaveChildren(ctx context.Context, version string) bool {
	return e.mayHaveChildren(ctx, version)
}

// Children lists a run's child runs (sub-workflows), newest first. For a
// run whose definition has no sub-workflow step it reads nothing.
func (e *Engine) Children(ctx context.Context, run store.Run) ([]store.Run, error) {
	if !e.mayHaveChildren(ctx, run.Version) {
		return nil, nil
	}
	kids, _, err := e.store.ListRuns(ctx, store.RunFilter{ParentID: run.ID, Limit: MaxChildren})
	return kids, err
}

// PausesWith is Pauses for a run whose children the caller has read
// already (Children): the view of a run needs both, and this reads them
// once.
func (e *Engine) PausesWith(ctx context.Context, runID string, children []store.Run) ([]Pause, error) {
	var waiting []store.Run
	for _, k := range children {
		if k.Status == store.StatusWaiting {
			waiting = append(waiting, k)
		}
	}
	return e.openPauses(ctx, runID, waiting, 0)
}

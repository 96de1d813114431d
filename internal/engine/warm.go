package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"stepwise.dev/stepwise/internal/cache"
	"stepwise.dev/stepwise/internal/store"
)

// maxWarm bounds how many runs keep their loaded state between drives: a
// conversation answering one question after another needs one; thousands of
// waiting runs must not hold thousands.
const maxWarm = 128

// warmRuns keeps the in-memory state of runs that stopped at a pause, so
// that what drives them next (a Continue, then the driver it wakes) does
// not read and decode every recorded step again: a run that has answered a
// hundred questions would otherwise load a hundred-odd step rows twice per
// answer. A kept state is used only while the run's revision in the store
// is the one it was kept at: every change to a run (from this process or
// another) goes through a commit that moves the revision, so an equal
// revision means nothing was recorded since.
type warmRuns struct {
	mu sync.Mutex // makes a take one step: a kept state goes to one loader
	m  *cache.LRU[string, *runState]
}

// keep hands rs to the next load of its run: one that waits, or one that a
// Continue just set running again. Runs with groups keep progress outside
// the state and the step list (attempts, nested pauses): they always load
// afresh.
func (e *Engine) keep(rs *runState) {
	if rs == nil || hasGroups(rs.wf) || (rs.run.Status != store.StatusWaiting && rs.run.Status != store.StatusRunning) {
		return
	}
	rs.scope, rs.ahead, rs.leased = nil, nil, false
	w := &e.warm
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = cache.New[string, *runState](maxWarm)
	}
	w.m.Add(rs.run.ID, rs)
}

// takeWarm returns the kept state of a run when it is still current (its
// run row read afresh), or nil. The state is handed out once: two loaders
// never share it.
func (e *Engine) takeWarm(ctx context.Context, id string) (*runState, store.Run, error) {
	var rs *runState
	e.warm.mu.Lock()
	if e.warm.m != nil {
		rs, _ = e.warm.m.Peek(id)
		e.warm.m.Remove(id)
	}
	e.warm.mu.Unlock()
	run, err := e.store.GetRun(ctx, id)
	if err != nil || rs == nil || run.Rev != rs.run.Rev || run.Version != rs.run.Version {
		return nil, run, err
	}
	// The row and the state are taken as stored, exactly as a fresh load
	// takes them; the step results are what this process recorded.
	var st State
	if len(run.State) > 0 {
		if err := json.Unmarshal(run.State, &st); err != nil {
			return nil, run, fmt.Errorf("load run %s: state: %w", id, err)
		}
	}
	rs.run, rs.state = run, st
	return rs, run, nil
}

// asLoaded makes the result of a step just answered what a load would
// read back (the answer as decoded from what was stored: numbers as JSON
// numbers, secrets opened), so that the state kept for the driver is the
// one it would load. It reports whether it could.
func (e *Engine) asLoaded(rs *runState, stepID string, r *result, stored []byte, isSecret bool) bool {
	v, ok := e.loadedAnswer(r, stored, isSecret, rs.mask)
	if !ok || r.Answer == nil {
		return ok
	}
	r.Answer = v
	rs.record(stepID, r)
	return true
}

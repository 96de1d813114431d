package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"stepwise.dev/stepwise/code"

	"github.com/google/uuid"

	"stepwise.dev/stepwise/internal/store"
)

// Operator actions on whole runs: retry a failed run from its checkpoint,
// fork a run from any step, pause and resume a run.

// Events of operator actions.
const (
	EventRunRetried = code.EventRunRetried
	EventRunForked  = code.EventRunForked
	EventRunHeld    = code.EventRunHeld
	EventRunUnheld  = code.EventRunUnheld
)

// RetryRun re-runs a failed run from the step that failed, optionally with
// corrected inputs. Runs whose completed steps were compensated cannot be
// retried (their effects were undone): fork them instead.
func (e *Engine) RetryRun(ctx context.Context, runID string, inputs map[string]any) error {
	return retryConflicts(ctx, runID, "retry", func() error {
		rs, err := e.load(ctx, runID)
		if err != nil {
			return notFound(runID, err)
		}
		if rs.run.Status != store.StatusFailed {
			return &Error{Code: CodeRunNotFailed, Category: CategoryConflict, RunID: runID,
				Message:    fmt.Sprintf("only a failed run can be retried; this one is %s", rs.run.Status),
				Suggestion: "fork it from a step to run it again, or start a new run"}
		}
		for _, d := range rs.done {
			if strings.HasPrefix(d.stepID, "compensate:") {
				return &Error{Code: CodeRunCompensated, Category: CategoryConflict, RunID: runID,
					Message: "the run's completed steps were compensated, so it cannot continue where it failed", Suggestion: "fork it from its first step"}
			}
		}
		c := store.Commit{RunID: runID, Rev: rs.run.Rev}
		if len(inputs) > 0 {
			merged := map[string]any{}
			for k, v := range rs.inputs {
				merged[k] = v
			}
			for k, v := range inputs {
				merged[k] = v
			}
			resolved, fromEnv, vs := e.resolveInputs(rs.wf, merged)
			if len(vs) > 0 {
				return &Error{Code: CodeInputInvalid, Category: CategoryValidation, RunID: runID, Message: "invalid inputs for the retry", Violations: vs,
					Suggestion: "fix the listed inputs and retry again"}
			}
			if c.Run.Inputs, err = e.sealInputs(rs.wf, resolved, fromEnv, rs.state.Sealed); err != nil {
				return err
			}
		}
		st := rs.state
		st.Phase, st.Final, st.Wait = "", nil, nil
		state, _ := json.Marshal(st)
		now := e.now().UTC()
		c.Run.Status, c.Run.State, c.Run.Reopen = store.StatusRunning, state, true
		c.Events = []store.Event{e.event(rs, EventRunRetried, "", map[string]any{"from_cursor": st.Cursor, "inputs_changed": len(inputs) > 0}, now)}
		limited := rs.run.ConcurrencyLimit > 0
		if limited {
			// Back to its queue (its place: its creation), not past the limit.
			c.Run.Status = store.StatusQueued
			c.Events = append(c.Events, store.Event{Type: EventRunQueued, At: now})
		}
		res, err := e.store.Commit(ctx, c)
		if err != nil {
			return err
		}
		e.publish(runID, c.Run.Status, c.Events, res.EventSeqs)
		if limited {
			e.admit(ctx, store.AdmitRequest{Workflow: rs.run.Workflow, Key: rs.run.ConcurrencyKey})
			return nil
		}
		e.schedule(runID)
		return nil
	})
}

// ForkRun starts a new run of the same version from a top-level step, with
// the recorded results of the steps before it and the given input changes.
func (e *Engine) ForkRun(ctx context.Context, runID, fromStep string, inputs map[string]any) (string, error) {
	return e.fork(ctx, runID, fromStep, inputs, nil)
}

// fork is ForkRun; with rw, a rewind or restart (rewind.go).
func (e *Engine) fork(ctx context.Context, runID, fromStep string, inputs map[string]any, rw *rewinding) (string, error) {
	rs, err := e.load(ctx, runID)
	if err != nil {
		return "", notFound(runID, err)
	}
	from := -1
	var ids []string
	for i, s := range rs.wf.Steps {
		ids = append(ids, s.ID)
		if s.ID == fromStep {
			from = i
		}
	}
	if err := rw.check(rs, &fromStep, &from); err != nil {
		return "", err
	}
	if from < 0 {
		return "", &Error{Code: CodeStepNotFound, Category: CategoryNotFound, RunID: runID, StepID: fromStep, Argument: "from_step",
			Message:    fmt.Sprintf("workflow %s has no top-level step %q (it has %s)", rs.wf.Name, fromStep, strings.Join(ids, ", ")),
			Suggestion: "fork from one of the top-level steps the message lists"}
	}
	merged := map[string]any{}
	for k, v := range rs.inputs {
		if in := rs.wf.Inputs[k]; in != nil && v != nil {
			merged[k] = v
		}
	}
	for k, v := range inputs {
		merged[k] = v
	}
	resolved, fromEnv, vs := e.resolveInputs(rs.wf, merged)
	if len(vs) > 0 {
		return "", &Error{Code: CodeInputInvalid, Category: CategoryValidation, RunID: runID, Message: "invalid inputs for the fork", Violations: vs,
			Suggestion: "fix the listed inputs and fork again"}
	}
	stored, err := e.sealInputs(rs.wf, resolved, fromEnv, rs.state.Sealed)
	if err != nil {
		return "", err
	}
	// Keep the latest recorded execution of each step before the fork
	// point, with what is nested in it.
	before := map[string]bool{}
	for _, s := range rs.wf.Steps[:from] {
		before[s.ID] = true
		for _, n := range nested(s) {
			before[n.ID] = true
		}
	}
	rows, err := e.store.Steps(ctx, runID)
	if err != nil {
		return "", err
	}
	latest := map[string]store.Step{}
	var order []string
	for _, st := range rows {
		if !before[st.StepID] {
			continue
		}
		if _, seen := latest[st.Key]; !seen {
			order = append(order, st.Key)
		}
		if prev, ok := latest[st.Key]; !ok || prev.Visit <= st.Visit {
			latest[st.Key] = st
		}
	}
	var copied []store.Step
	for _, k := range order {
		copied = append(copied, latest[k])
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	now := e.now().UTC()
	st := State{Cursor: from, StartedAt: now, Depth: rs.state.Depth, Dir: rs.state.Dir, Sealed: rs.state.Sealed}
	rw.carry(rs, rows, before, &st)
	state, _ := json.Marshal(st)
	run := store.Run{ID: id.String(), Workflow: rs.run.Workflow, Version: rs.run.Version, Status: store.StatusRunning,
		Inputs: stored, State: state, ParentID: rs.run.ParentID, CreatedAt: now}
	events := []store.Event{e.event(rs, EventRunForked, fromStep, rw.data(map[string]any{"from_run": runID, "from_step": fromStep, "reused_steps": len(copied)}), now),
		{Type: EventRunStarted, At: now}}
	limited := rs.run.ConcurrencyLimit > 0
	if limited {
		// A fork waits in the queue of the run it forks.
		run.Status, run.ConcurrencyLimit, run.ConcurrencyKey = store.StatusQueued, rs.run.ConcurrencyLimit, rs.run.ConcurrencyKey
		events[1].Type = EventRunQueued
	} else {
		run.Lease = e.newLease(now)
	}
	res, err := e.store.CreateRun(ctx, run, events, copied...)
	if err != nil {
		return "", err
	}
	e.publish(run.ID, run.Status, events, res.EventSeqs)
	if limited {
		e.admit(ctx, store.AdmitRequest{Workflow: run.Workflow, Key: run.ConcurrencyKey})
	} else {
		e.install(res.Lease)
		e.schedule(run.ID)
	}
	rw.leave(ctx, e, runID, run.ID, fromStep)
	return run.ID, nil
}

// HoldRun pauses a run: it stops advancing (a step in flight finishes or is
// interrupted, and runs again on resume) until UnholdRun. Its wake-ups are
// suspended; an open question stays open but cannot be answered meanwhile.
func (e *Engine) HoldRun(ctx context.Context, runID string) error {
	return e.setHeld(ctx, runID, true)
}

// UnholdRun resumes a paused run.
func (e *Engine) UnholdRun(ctx context.Context, runID string) error {
	return e.setHeld(ctx, runID, false)
}

func (e *Engine) setHeld(ctx context.Context, runID string, hold bool) error {
	what := "resume"
	if hold {
		what = "pause"
	}
	return retryConflicts(ctx, runID, what, func() error {
		run, err := e.store.GetRun(ctx, runID)
		if err != nil {
			return notFound(runID, err)
		}
		var st State
		_ = json.Unmarshal(run.State, &st)
		c := store.Commit{RunID: runID, Rev: run.Rev}
		now := e.now().UTC()
		switch {
		case hold && store.Finished(run.Status):
			return runFinished(runID, run.Status)
		case hold && run.Status == store.StatusPaused, !hold && run.Status != store.StatusPaused:
			return nil // already so
		case hold && run.Status == store.StatusQueued:
			return &Error{Code: CodeRunBusy, Category: CategoryConflict, RunID: runID,
				Message:    "the run is queued behind its workflow's concurrency limit: it has not started, so it cannot be paused",
				Suggestion: "cancel it, or pause it once it runs"}
		case hold:
			c.Run.Status = store.StatusPaused
			if st.Wait != nil {
				c.ClearTimers = []string{st.Wait.StepKey}
			}
			c.Events = []store.Event{{Type: EventRunHeld, At: now}}
			e.interrupt(runID)
		default:
			c.Run.Status = store.StatusRunning
			if ps, _ := e.store.OpenPauses(ctx, runID); len(ps) > 0 {
				c.Run.Status = store.StatusWaiting
			}
			if st.Wait != nil {
				c.SetTimers = []store.Timer{{Key: st.Wait.StepKey, WakeAt: st.Wait.Until}}
			}
			c.Events = []store.Event{{Type: EventRunUnheld, At: now}}
		}
		res, err := e.store.Commit(ctx, c)
		if err != nil {
			return err
		}
		e.publish(runID, c.Run.Status, c.Events, res.EventSeqs)
		if c.Run.Status == store.StatusRunning {
			e.schedule(runID)
		}
		if !hold {
			// The run's wake-ups (its own sleep, and sleeps or retries
			// inside its groups) are due again.
			e.wakeTimers()
		}
		return nil
	})
}

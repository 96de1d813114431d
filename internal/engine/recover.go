package engine

import (
	"context"
	"fmt"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Recovery of a step whose process ended while it ran.
//
// A run still running when its process ends is driven again by the next
// process (Recover, Resume): the step at its cursor runs again
// (at-least-once). A step that itself ends the process (it exhausts the
// memory, it kills the server) would end every next process too. So a
// driver that picks up such a run counts: before a step that may end the
// process (mayEndTheProcess: not a pure one) runs again, one commit records
// the recovery in the run's state (State.Recovered) with a run.resumed
// event; once the same execution of the step was recovered MaxRecoveries
// times with nothing recorded in between, the next recovery fails the step
// with STEP_CRASHED instead of running it, along the usual failure path
// (continue_on_error, compensations, on_failure).
//
// Steps that run normally pay nothing for it: a run needs counting only
// when its driver took its lease over from a holder that never released it
// (lease.go; for a run's first lease: when no commit touched it since this
// engine started) and its cursor step is not parked on a wake-up to come.
// A run recorded to be driven elsewhere (`run --detach`) is counted from
// the second time a process picks it up. A shutdown that interrupts a run
// records so (Recovered.Interrupted), and the next recovery does not count
// it: the step did not end the process.

// defaultMaxRecoveries is Config.MaxRecoveries unless set.
const defaultMaxRecoveries = 3

// Recovered counts the recoveries of the execution of the step at the
// cursor (one visit, attempt and repeat of it), or of the hook or
// compensation that runs while the run finishes.
type Recovered struct {
	StepKey   string `json:"step_key"`
	Visit     int    `json:"visit"`
	Attempt   int    `json:"attempt"`
	Iteration int    `json:"iteration"`
	// Count is how often a process ended while this execution ran.
	Count int `json:"count"`
	// Seq is the run's last event once this was recorded: an event after
	// it (a group's branch recorded, an attempt failed) means the
	// execution got on, and counting starts again.
	Seq int64 `json:"seq"`
	// Interrupted: a shutdown stopped the driver; the next recovery does
	// not count it.
	Interrupted bool `json:"interrupted,omitempty"`
}

// same reports whether r counts the execution x.
func (r *Recovered) same(x Recovered) bool {
	return r != nil && r.StepKey == x.StepKey && r.Visit == x.Visit && r.Attempt == x.Attempt && r.Iteration == x.Iteration
}

// needsRecovery reports whether a run just loaded from the store was left
// running by a process that ended: it runs (a step, or a hook or
// compensation while it finishes), and its lease was taken over from a
// holder that never released it (tookOver) — or, for a run whose first
// lease this is (recorded before leases, or created to be driven
// elsewhere), nothing was committed for it since this engine started —
// and its step is not parked on a wake-up still to come.
func (e *Engine) needsRecovery(rs *runState, tookOver bool) bool {
	if rs.run.Status != store.StatusRunning && rs.run.Status != store.StatusPending {
		return false
	}
	if !tookOver {
		l, ok := e.leaseOf(rs.run.ID)
		if ok && l.Epoch > 1 || !rs.run.UpdatedAt.Before(e.startedWall) {
			return false // released by its last holder, or committed here
		}
	}
	switch rs.state.Phase {
	case phaseOnSuccess, phaseCompensate, phaseOnFailure:
		return true // a hook or compensation may have been running
	case "":
	default:
		return false
	}
	if rs.state.Cursor >= len(rs.wf.Steps) || rs.state.Cursor < 0 {
		return false
	}
	if w := rs.state.Wait; w != nil && w.StepKey == rs.wf.Steps[rs.state.Cursor].ID && w.Until.After(e.now()) {
		return false // parked on a wake-up to come: nobody ran it
	}
	return true
}

// mayEndTheProcess reports whether a step's execution is counted when its
// process ended: it has an effect, or steps inside that may have one.
// Pure steps (a switch, a fail step, a sleep that only sets its wake-up, a
// pure action such as noop or transform) run in bounded time and memory;
// a process that ended during one did not end because of it.
func (e *Engine) mayEndTheProcess(s *workflow.Step) bool {
	switch s.Kind() {
	case workflow.KindSwitch, workflow.KindFail, workflow.KindSleep:
		return false
	case workflow.KindUses:
		act, ok := e.actions.Get(s.Uses)
		return ok && !action.IsPure(act)
	}
	return true
}

// countRecovery records, in one commit, that the execution sx runs again
// after its process ended. When the process ended more often than the
// engine allows, it commits nothing and returns how often: the step then
// fails instead of running.
func (e *Engine) countRecovery(ctx context.Context, rs *runState, sx *stepExec) (crashed int, err error) {
	x := Recovered{StepKey: sx.key, Visit: sx.visit, Attempt: max(sx.attempt, 1), Iteration: max(sx.iteration, 1)}
	x.Count = 1
	// A marker whose Seq is still the run's last event was recorded when
	// nothing of the run was recorded since: what runs now ran then.
	switch prev := rs.state.Recovered; {
	case rs.state.Detached:
		x.Count = 0 // recorded to be driven here: nothing ran before
	case prev != nil && prev.Seq == rs.run.EventSeq && prev.Interrupted:
		x.Count = 0 // a shutdown stopped it, not a crash
		if prev.same(x) {
			x.Count = prev.Count
		}
	case prev.same(x) && prev.Seq == rs.run.EventSeq:
		x.Count = prev.Count + 1
	}
	if x.Count > e.maxRecoveries {
		return x.Count, nil
	}
	// The store numbers a run's events without gaps: the one event of
	// this commit is the next number.
	x.Seq = rs.run.EventSeq + 1
	next := rs.state
	next.Recovered, next.Detached = &x, false
	now := e.now().UTC()
	ev := e.event(rs, EventRunResumed, sx.s.ID, map[string]any{"visit": sx.visit, "attempt": x.Attempt, "recoveries": x.Count}, now)
	return 0, e.commit(ctx, rs, store.Commit{Events: []store.Event{ev}}, next)
}

// crashedMessage is the error of a step that failed with STEP_CRASHED.
func crashedMessage(n int) string {
	return fmt.Sprintf("the process ended %d times while this step ran; it is not run again", n)
}

// crashedError is the failure of a hook or compensation that was not run
// again: the process ended n times while it ran.
type crashedError struct{ n int }

func (e *crashedError) Error() string { return crashedMessage(e.n) }

// markInterrupted records that a shutdown stopped the driver of a run, so
// that the next recovery does not count what was running as a crash: the
// count so far is kept, when nothing was recorded since. It is best
// effort: a run that changed meanwhile is left alone.
func (e *Engine) markInterrupted(ctx context.Context, rs *runState) {
	if rs.run.Status != store.StatusRunning && rs.run.Status != store.StatusPending {
		return
	}
	x := Recovered{Seq: rs.run.EventSeq, Interrupted: true}
	if prev := rs.state.Recovered; prev != nil && prev.Seq == rs.run.EventSeq {
		x = *prev
		x.Interrupted = true
	}
	next := rs.state
	next.Recovered = &x
	if err := e.commit(context.WithoutCancel(ctx), rs, store.Commit{}, next); err != nil {
		e.log.Debug("record the interruption", "run_id", rs.run.ID, "err", err)
	}
}

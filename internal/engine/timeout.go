package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Step timeouts of steps that wait (questions, agent steps, sub-workflows,
// groups) are durable: the step's wait in the run's state carries the
// time its timeout ends (Wait.TimeoutAt) and the wait's timer row wakes
// the run then, also after a restart. A waiting run whose step timed out
// is first made running again (expireStep: the step's pause closes as
// timed out); its next advance then fails the step, which follows the
// usual failure path (continue_on_error, retry of a sub-workflow,
// compensation, on_failure). An action's timeout is a context deadline
// of the call instead (runAction).

// EventStepTimedOut: the timeout of a waiting step passed.
const EventStepTimedOut = code.EventStepTimedOut

// stepTimeout is when the timeout of a step starting now ends; zero when
// the step has none.
func stepTimeout(s *workflow.Step, env map[string]any, now time.Time) (time.Time, error) {
	if s.Timeout == "" {
		return time.Time{}, nil
	}
	d, err := renderDuration(s.Timeout, env)
	if err != nil {
		return time.Time{}, fmt.Errorf("timeout: %w", err)
	}
	return now.Add(d), nil
}

// timeoutText is a step's timeout as its failure message names it.
func timeoutText(s *workflow.Step, env map[string]any) string {
	if d, err := renderDuration(s.Timeout, env); err == nil {
		return d.String()
	}
	return s.Timeout
}

// dueTimeout reports whether w carries a step timeout that has passed.
func (e *Engine) dueTimeout(w *Wait) bool {
	return w != nil && !w.TimeoutAt.IsZero() && !e.now().Before(w.TimeoutAt)
}

// timedOut reports whether an execution continues a wait whose step
// timeout has passed.
func (e *Engine) timedOut(sx *stepExec) bool { return e.dueTimeout(sx.wait) }

// expireStep ends the wait of a waiting run whose step's timeout has
// passed: a question's or agent step's pause closes as timed out (so its
// token says so), and the run runs again, keeping its wait: its next
// advance fails the step (a group closes its branches' pauses then,
// failTimedOutGroup).
func (e *Engine) expireStep(ctx context.Context, rs *runState) error {
	w := rs.state.Wait
	now := e.now().UTC()
	c := store.Commit{Run: store.RunUpdate{Status: store.StatusRunning},
		Events: []store.Event{e.event(rs, EventStepTimedOut, w.StepKey, map[string]any{"visit": w.Visit, "timeout_at": w.TimeoutAt}, now)}}
	if w.Reason == "answer" {
		ps, err := e.store.OpenPauses(ctx, rs.run.ID)
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.StepKey == w.StepKey && p.Visit == w.Visit {
				c.ClosePause = &store.PauseClose{Seq: p.Seq, Status: store.PauseTimedOut, At: now}
				break
			}
		}
	}
	return e.commit(ctx, rs, c, rs.state)
}

// pauseTimedOut is the error of a Continue whose pause ended with its
// step's timeout.
func pauseTimedOut(runID, stepKey string) error {
	return &Error{Code: CodePauseTimedOut, Category: CategoryConflict, RunID: runID, StepID: stepKey,
		Message:    "the pause timed out: no answer came before the timeout of its step (or of the group around it), which failed",
		Suggestion: "read the run's current state: its step failed with the timeout"}
}

// failTimedOutGroup ends a group whose timeout passed: its open pauses
// close as timed out, its unfinished sub-workflow runs are canceled, and
// the wake-ups of its nested sleeps and retries dropped; then the group's
// step fails.
func (e *Engine) failTimedOutGroup(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	kids, _, err := e.store.ListRuns(ctx, store.RunFilter{ParentID: rs.run.ID, Limit: MaxChildren})
	if err != nil {
		return err
	}
	for _, k := range kids {
		if store.Finished(k.Status) {
			continue
		}
		if err := e.Cancel(ctx, k.ID, "its group step timed out", false); err != nil && CodeOf(err) != CodeRunFinished {
			return err
		}
	}
	ps, err := e.store.OpenPauses(ctx, rs.run.ID)
	if err != nil {
		return err
	}
	now := e.now().UTC()
	for _, p := range ps {
		// One commit per pause: a commit closes one (the store checks that
		// it is still open); one answered meanwhile stays answered.
		c := store.Commit{ClosePause: &store.PauseClose{Seq: p.Seq, Status: store.PauseTimedOut, At: now}}
		if err := e.commit(ctx, rs, c, rs.state); err != nil && !errors.Is(err, store.ErrPauseClosed) {
			return err
		}
	}
	c := store.Commit{}
	if timers, err := e.store.Timers(ctx, rs.run.ID); err == nil {
		for _, t := range timers {
			if t.Key != deadlineKey && (rs.state.Wait == nil || t.Key != rs.state.Wait.StepKey) {
				c.ClearTimers = append(c.ClearTimers, t.Key)
			}
		}
	}
	if len(c.ClearTimers) > 0 {
		if err := e.commit(ctx, rs, c, rs.state); err != nil {
			return err
		}
	}
	return e.stepFailed(ctx, rs, sx, "timed out after "+timeoutText(sx.s, env)+" (its unfinished branches were canceled)", false)
}

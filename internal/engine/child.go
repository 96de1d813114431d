package engine

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"stepwise.dev/stepwise/code"

	"github.com/google/uuid"

	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
)

// maxDepth bounds sub-workflow nesting (and so recursion).
const maxDepth = 8

// EventChildStarted: a workflow step started its child run.
const EventChildStarted = code.EventChildStarted

// childPoll is how often a parent looks at a child that runs in another
// process; in this process the child's end wakes the parent at once.
const childPoll = 2 * time.Second

// Sub-workflows run as child runs linked to their parent. The parent's
// workflow step starts the child (its id derived from the parent's run,
// step and visit, so a start repeated after a crash finds the same child)
// and parks until the child ends; the child's outputs become the step's
// output. When the child pauses, the parent shows as waiting and its pause
// is the child's: continuing it continues the child.

func childID(parent, key string, visit int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s#%d", parent, key, visit)))
	return uuid.NewSHA1(uuid.NameSpaceURL, sum[:]).String()
}

// attemptChildID is the child run of one attempt of a workflow step: the
// first attempt's is childID's, each retry starts a child of its own.
func attemptChildID(parent, key string, visit, attempt int) string {
	if attempt <= 1 {
		return childID(parent, key, visit)
	}
	return childID(parent, fmt.Sprintf("%s/attempt-%d", key, attempt), visit)
}

// subWorkflow executes a workflow step at the cursor.
func (e *Engine) subWorkflow(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	if w := sx.wait; w != nil && w.Child != "" {
		return e.awaitChild(ctx, rs, sx, w.Child, env)
	}
	now := e.now().UTC()
	timeoutAt, err := stepTimeout(sx.s, env, now)
	if err != nil {
		return e.stepFailed(ctx, rs, sx, err.Error(), false)
	}
	id, problem, fatal, err := e.startChild(ctx, rs, sx, env)
	if err != nil {
		return err
	}
	if problem != "" {
		return e.stepFailed(ctx, rs, sx, problem, fatal)
	}
	w := &Wait{Reason: "child", Child: id, Until: wakeBy(now.Add(childPoll), timeoutAt), Attempt: sx.attempt, TimeoutAt: timeoutAt}
	return e.park(ctx, rs, sx, w, EventChildStarted, map[string]any{"child_run_id": id, "workflow": sx.s.Workflow, "attempt": sx.attempt})
}

// wakeBy is t, or the timeout when that comes first.
func wakeBy(t, timeoutAt time.Time) time.Time {
	if !timeoutAt.IsZero() && timeoutAt.Before(t) {
		return timeoutAt
	}
	return t
}

// childFailed fails a workflow step's attempt whose child failed, was
// canceled or timed out: another attempt (a new child run) after the
// backoff when the step's retry allows, else the step fails.
func (e *Engine) childFailed(ctx context.Context, rs *runState, sx *stepExec, env map[string]any, problem string) error {
	if cause := errors.New(problem); e.shouldRetry(sx.s, sx, cause) {
		return e.retryLater(ctx, rs, sx, env, cause)
	}
	return e.stepFailed(ctx, rs, sx, problem, false)
}

// startChild starts the child run of a workflow step (a start repeated
// after a crash finds the child it started). A problem is a reason for the
// step to fail; fatal ones (nesting too deep, no library) fail the run even
// with continue_on_error.
func (e *Engine) startChild(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) (id, problem string, fatal bool, err error) {
	if rs.state.Depth+1 > maxDepth {
		return "", fmt.Sprintf("sub-workflows nest deeper than %d levels (recursion?)", maxDepth), true, nil
	}
	if e.workflows == nil {
		return "", "this engine has no workflow library to find sub-workflows in", true, nil
	}
	def, err := e.workflows(ctx, sx.s.Workflow, rs.state.Dir)
	if err != nil {
		return "", rs.mask.Mask(fmt.Sprintf("workflow %s: %v", sx.s.Workflow, err)), false, nil
	}
	inputs := map[string]any{}
	if sx.s.With != nil {
		v, err := expr.RenderValueObserved(sx.s.With, env, rs.learner())
		if err != nil {
			return "", rs.mask.Mask("with: " + err.Error()), false, nil
		}
		inputs, _ = v.(map[string]any)
	}
	// What the step computes from secrets stays secret in the child.
	var sealed []string
	for name, v := range sx.s.With {
		if rs.secrets().Value(v) {
			sealed = append(sealed, name)
		}
	}
	id = attemptChildID(rs.run.ID, sx.key, sx.visit, sx.attempt)
	_, err = e.Start(ctx, StartRequest{Workflow: def.Workflow, Version: def.Version, Definition: def.Definition,
		Inputs: inputs, ParentID: rs.run.ID, RunID: id, Depth: rs.state.Depth + 1, Dir: def.Dir, Sealed: sealed})
	if err != nil && !errors.Is(err, store.ErrExists) {
		var ee *Error
		if errors.As(err, &ee) {
			return "", rs.mask.Mask(fmt.Sprintf("workflow %s: %s", sx.s.Workflow, ee.Error())), false, nil
		}
		return "", "", false, err
	}
	return id, "", false, nil
}

// childOutcome reads a finished child: its outputs, or the reason the step
// fails. done is false while the child has not finished.
func childOutcome(child store.Run, workflowName string) (out any, problem string, done bool) {
	switch child.Status {
	case store.StatusSucceeded:
		_ = json.Unmarshal(child.Outputs, &out)
		return out, "", true
	case store.StatusFailed, store.StatusCanceled:
		return nil, fmt.Sprintf("sub-workflow %s %s: %s", workflowName, child.Status, errorText(child.Error)), true
	}
	return nil, "", false
}

// childSecrets opens a finished child's secret outputs (their secret
// parts sealed in its row) for a step whose output is secret as a whole;
// any other step sees those parts as ***.
func (e *Engine) childSecrets(ctx context.Context, rs *runState, stepID string, child store.Run, out any) (any, error) {
	m, ok := out.(map[string]any)
	if !ok || len(m) == 0 {
		return out, nil
	}
	_, sec, err := e.RunSecrets(ctx, child)
	if err != nil {
		return nil, err
	}
	if !sec.HasRunOutputs() {
		return out, nil
	}
	open := rs.secrets().OutputShape(stepID)
	var openErr error
	part := func(v any) any {
		s, isStr := v.(string)
		if !isStr || !secret.IsSealed(s) {
			return v
		}
		if open == nil || !open.All {
			return secret.Redacted
		}
		clear, err := e.open(s)
		if err != nil && openErr == nil {
			openErr = fmt.Errorf("an output of sub-workflow run %s: %w", child.ID, err)
		}
		if text, ok := clear.(string); ok {
			rs.mask.Add(text) // wholly secret
		}
		return clear
	}
	for name, v := range m {
		m[name] = sec.RunOutputShape(name).Apply(v, part, nil)
	}
	return m, openErr
}

// awaitChild looks at the child a parent waits for.
func (e *Engine) awaitChild(ctx context.Context, rs *runState, sx *stepExec, childID string, env map[string]any) error {
	child, err := e.store.GetRun(ctx, childID)
	if err != nil {
		return err
	}
	if out, problem, done := childOutcome(child, sx.s.Workflow); done {
		if problem != "" {
			return e.childFailed(ctx, rs, sx, env, problem)
		}
		if out, err = e.childSecrets(ctx, rs, sx.s.ID, child, out); err != nil {
			return err
		}
		return e.succeedStep(ctx, rs, sx, &result{Output: out}, store.Commit{}, rs.state.Cursor+1, succeedOpts{})
	}
	if e.timedOut(sx) {
		// The attempt ran out of time: its child is canceled and the
		// attempt fails.
		if err := e.Cancel(ctx, childID, "its workflow step timed out", false); err != nil && CodeOf(err) != CodeRunFinished {
			return err
		}
		return e.childFailed(ctx, rs, sx, env, fmt.Sprintf("sub-workflow %s timed out after %s (its run was canceled)", sx.s.Workflow, timeoutText(sx.s, env)))
	}
	switch child.Status {
	case store.StatusWaiting:
		// Surface the child's pause as the parent's.
		if rs.run.Status != store.StatusWaiting {
			next := rs.state
			next.Wait = nil // no timer: continuing the child wakes the parent
			w := *sx.wait
			next.Wait = &w
			// (unless the step has a timeout: the parent wakes then)
			next.Wait.Until = wakeBy(e.now().UTC().Add(24*time.Hour), w.TimeoutAt)
			return e.commit(ctx, rs, store.Commit{Run: store.RunUpdate{Status: store.StatusWaiting},
				Events: []store.Event{e.event(rs, EventRunPaused, sx.s.ID, map[string]any{"child_run_id": childID}, e.now().UTC())}}, next)
		}
		return errParked
	default:
		next := rs.state
		w := *sx.wait
		w.Until = wakeBy(e.now().UTC().Add(childPoll), w.TimeoutAt)
		next.Wait = &w
		if err := e.commit(ctx, rs, store.Commit{}, next); err != nil {
			return err
		}
		return errParked
	}
}

// wakeParent makes the parent of a run look at it again: the child ended,
// paused or continued. When the child moves again after a pause, every
// ancestor that showed its pause is set running again, up the whole chain,
// before wakeParent returns (so that reading any of them right after a
// continue shows it running). It is idempotent: concurrent calls for the
// same chain all walk it to the top.
func (e *Engine) wakeParent(ctx context.Context, rs *runState) {
	childStatus, parent := rs.run.Status, rs.run.ParentID
	for level := 0; parent != "" && level <= maxDepth; level++ {
		var p store.Run
		err := retryConflicts(ctx, parent, "wake the parent run", func() error {
			var err error
			if p, err = e.store.GetRun(ctx, parent); err != nil {
				return err
			}
			if p.Status != store.StatusWaiting || childStatus == store.StatusWaiting {
				return nil
			}
			// The parent waited for this child (its own step, or a step in
			// one of its groups) unless it has open pauses of its own.
			if own, err := e.store.OpenPauses(ctx, parent); err != nil || len(own) > 0 {
				return nil
			}
			var st State
			_ = json.Unmarshal(p.State, &st)
			c := store.Commit{RunID: parent, Rev: p.Rev, Run: store.RunUpdate{Status: store.StatusRunning},
				Events: []store.Event{{Type: EventRunContinued, At: e.now().UTC()}}}
			if st.Wait != nil {
				st.Wait.Until = e.now().UTC()
				c.SetTimers = []store.Timer{{Key: st.Wait.StepKey, WakeAt: st.Wait.Until}}
			}
			state, _ := json.Marshal(st)
			c.Run.State = state
			res, err := e.store.Commit(ctx, c)
			if err != nil {
				return err
			}
			p.Status = store.StatusRunning
			e.publish(parent, store.StatusRunning, c.Events, res.EventSeqs)
			return nil
		})
		if err != nil && CodeOf(err) != CodeRunBusy {
			return // not readable or writable now: a recovery drives it again
		}
		// A parent that kept changing (RUN_BUSY) is moving: scheduled, its
		// driver looks at it again.
		e.schedule(parent)
		if childStatus == store.StatusWaiting {
			return // a pause climbs one level at a time, through each parent's driver
		}
		childStatus, parent = p.Status, p.ParentID
	}
}

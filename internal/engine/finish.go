package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Phases of a finishing run.
const (
	phaseOnSuccess  = "on_success"
	phaseCompensate = "compensate"
	phaseOnFailure  = "on_failure"
)

// A compensation or hook is recorded as a step row whose step id carries
// its role ("compensate:create", "on_success:0"), so that after a crash
// the finishing phases resume where they were, like steps do.
func compensationID(stepID string) string { return "compensate:" + stepID }
func hookID(phase string, i int) string   { return phase + ":" + strconv.Itoa(i) }

// needsFinishing reports whether a failing run has compensations or
// on_failure hooks to run.
func (e *Engine) needsFinishing(rs *runState) bool {
	if len(rs.wf.OnFailure) > 0 {
		return true
	}
	for _, d := range rs.done {
		if d.status == "succeeded" && e.compensationOf(rs, d.stepID) != nil {
			return true
		}
	}
	return false
}

// compensationOf returns the compensate action of a step or on_success
// hook id, if it has one.
func (e *Engine) compensationOf(rs *runState, id string) *workflow.Action {
	if n, ok := strings.CutPrefix(id, phaseOnSuccess+":"); ok {
		i, err := strconv.Atoi(n)
		if err == nil && i < len(rs.wf.OnSuccess) {
			return rs.wf.OnSuccess[i].Compensate
		}
		return nil
	}
	if s := rs.wf.Step(id); s != nil {
		return s.Compensate
	}
	return nil
}

// finishing advances the finishing phases by one operation.
func (e *Engine) finishing(ctx context.Context, rs *runState) error {
	recorded := map[string]bool{}
	for _, d := range rs.done {
		recorded[d.key+"#"+strconv.Itoa(d.visit)] = true
	}
	switch rs.state.Phase {
	case phaseOnSuccess:
		for i, h := range rs.wf.OnSuccess {
			id := hookID(phaseOnSuccess, i)
			if recorded[id+"#1"] {
				continue
			}
			return e.runHook(ctx, rs, h, id, true)
		}
		return e.succeed(ctx, rs)
	case phaseCompensate:
		// Compensate completed steps (and on_success hooks) in the reverse
		// order of their completion.
		for i := len(rs.done) - 1; i >= 0; i-- {
			d := rs.done[i]
			comp := e.compensationOf(rs, d.stepID)
			if d.status != "succeeded" || comp == nil {
				continue
			}
			key := "compensate:" + d.key
			if recorded[key+"#"+strconv.Itoa(d.visit)] {
				continue
			}
			return e.runCompensation(ctx, rs, d, comp, key)
		}
		next := rs.state
		next.Phase = phaseOnFailure
		return e.commit(ctx, rs, store.Commit{}, next)
	default: // phaseOnFailure
		for i, h := range rs.wf.OnFailure {
			id := hookID(phaseOnFailure, i)
			if recorded[id+"#1"] {
				continue
			}
			return e.runHook(ctx, rs, h, id, false)
		}
		return e.finish(ctx, rs)
	}
}

// finish records the outcome decided when the run started finishing.
func (e *Engine) finish(ctx context.Context, rs *runState) error {
	now := e.now().UTC()
	f := rs.state.Final
	if f == nil {
		f = &Final{Status: store.StatusFailed}
	}
	next := rs.state
	next.Phase = ""
	typ := EventRunFailed
	if f.Status == store.StatusCanceled {
		typ = EventRunCanceled
	}
	var data any
	if len(f.Error) > 0 {
		data = json.RawMessage(f.Error)
	}
	return e.commit(ctx, rs, store.Commit{
		Run:    store.RunUpdate{Status: f.Status, Error: f.Error, FinishedAt: now},
		Events: []store.Event{e.event(rs, typ, "", data, now)},
	}, next)
}

// invoke runs a bare action (compensation, hook, nested step) with its
// retries, which are not durable: the operation is recorded only when it
// ends, so after a crash it simply runs again. sx names the execution — its
// key and visit make the idempotency key, the same for every attempt — and
// sx.attempt is the number of the first attempt.
func (e *Engine) invoke(ctx context.Context, rs *runState, sx *stepExec, op workflow.Action, env map[string]any) (any, int, error) {
	uses, with, timeout, retry, first := op.Uses, op.With, op.Timeout, op.Retry, max(sx.attempt, 1)
	if env == nil {
		env = rs.env(e.lookupEnv)
	}
	act, ok := e.actions.Get(uses)
	if !ok {
		return nil, 1, fmt.Errorf("no action named %q", uses)
	}
	if err := e.settleFor(ctx, rs, act); err != nil {
		return nil, 1, err
	}
	input := map[string]any{}
	if with != nil {
		rendered, err := expr.RenderValueObserved(with, env, rs.learner())
		if err != nil {
			return nil, 1, fmt.Errorf("with: %w", err)
		}
		input, _ = rendered.(map[string]any)
	}
	if input == nil {
		input = map[string]any{}
	}
	if vs := e.actions.CheckInput(act, input); len(vs) > 0 {
		return nil, 1, errors.New(rs.mask.Mask(inputProblem(uses, vs)))
	}
	attempts := first
	if retry != nil {
		attempts = retry.Attempts
	}
	var lastErr error
	for a := first; a <= attempts; a++ {
		sx.attempt = a
		callCtx, cancel := ctx, context.CancelFunc(func() {})
		if timeout != "" {
			if d, err := renderDuration(timeout, env); err == nil {
				callCtx, cancel = context.WithTimeout(ctx, d)
			}
		}
		call, flushOut := actionCall(e, rs, sx, input)
		out, err := act.Run(callCtx, call)
		flushOut()
		cancel()
		if err == nil {
			return toData(out), a, nil
		}
		if ctx.Err() != nil {
			return nil, a, errInterrupted
		}
		lastErr = err
		if permanent(err) {
			return nil, a, err // bad input, a 4xx: trying again cannot help
		}
		if a < attempts {
			wait := retryDelay(retry, a, env, err)
			select {
			case <-ctx.Done():
				return nil, a, errInterrupted
			case <-time.After(wait):
			}
		}
	}
	return nil, attempts, lastErr
}

// invokeOp invokes a compensation or hook, unless it is the one a
// recovery found in flight and the process ended while it ran more often
// than the engine allows: then it fails without running (recover.go). An
// error other than errInterrupted is the operation's failure; abort is an
// error that stops the driver instead (counting failed to commit).
func (e *Engine) invokeOp(ctx context.Context, rs *runState, sx *stepExec, op workflow.Action) (out any, attempts int, err, abort error) {
	if rs.recoveringOp {
		rs.recoveringOp = false
		if act, ok := e.actions.Get(op.Uses); ok && !action.IsPure(act) {
			n, err := e.countRecovery(ctx, rs, sx)
			if err != nil {
				return nil, 1, nil, err
			}
			if n > 0 {
				e.log.Warn("a hook or compensation the process ended in too often fails", "run_id", rs.run.ID, "step_id", sx.s.ID, "process_ends", n)
				return nil, 1, &crashedError{n: n}, nil
			}
		}
	}
	out, attempts, err = e.invoke(ctx, rs, sx, op, nil)
	return out, attempts, err, nil
}

// runCompensation runs one compensation; a failing compensation is
// recorded and the others still run.
func (e *Engine) runCompensation(ctx context.Context, rs *runState, d doneStep, comp *workflow.Action, key string) error {
	started := e.now().UTC()
	id := compensationID(d.stepID)
	sx := &stepExec{s: &workflow.Step{ID: id}, key: key, visit: d.visit, started: started, attempt: 1}
	out, attempts, err, abort := e.invokeOp(ctx, rs, sx, *comp)
	if abort != nil {
		return abort
	}
	if err == errInterrupted {
		return errInterrupted
	}
	now := e.now().UTC()
	row := store.Step{Key: key, Visit: d.visit, StepID: id, Status: "succeeded", Attempts: attempts, StartedAt: started, FinishedAt: now}
	ev := e.event(rs, EventCompensated, d.stepID, map[string]any{"visit": d.visit}, now)
	if err != nil {
		row.Status, row.Error = "failed", rs.mask.Mask(err.Error())
		ev = e.event(rs, EventCompensationFail, d.stepID, withCode(failureCode(err), map[string]any{"visit": d.visit, "error": row.Error}), now)
	} else if out != nil {
		row.Output = bareOutput(rs, *comp, out)
	}
	return e.commit(ctx, rs, store.Commit{Steps: []store.Step{row}, Events: []store.Event{ev}}, rs.state)
}

// runHook runs one on_success or on_failure hook. A failing on_success
// hook (without continue_on_error) turns the run into a failing one: what
// completed is compensated, on_failure hooks run.
func (e *Engine) runHook(ctx context.Context, rs *runState, h *workflow.Hook, id string, onSuccess bool) error {
	started := e.now().UTC()
	if h.If != "" {
		ok, err := condition(string(h.If), rs.env(e.lookupEnv))
		if err == nil && !ok {
			now := e.now().UTC()
			row := store.Step{Key: id, Visit: 1, StepID: id, Status: "skipped", StartedAt: started, FinishedAt: now}
			return e.commit(ctx, rs, store.Commit{Steps: []store.Step{row}}, rs.state)
		}
	}
	sx := &stepExec{s: &workflow.Step{ID: id}, key: id, visit: 1, started: started, attempt: 1}
	op := workflow.Action{Uses: h.Uses, With: h.With, Timeout: h.Timeout, Retry: h.Retry}
	out, attempts, err, abort := e.invokeOp(ctx, rs, sx, op)
	if abort != nil {
		return abort
	}
	if err == errInterrupted {
		return errInterrupted
	}
	now := e.now().UTC()
	row := store.Step{Key: id, Visit: 1, StepID: id, Status: "succeeded", Attempts: attempts, StartedAt: started, FinishedAt: now}
	if err == nil {
		if out != nil {
			row.Output = bareOutput(rs, op, out)
		}
		return e.commit(ctx, rs, store.Commit{Steps: []store.Step{row},
			Events: []store.Event{e.event(rs, EventHookSucceeded, id, nil, now)}}, rs.state)
	}
	msg := rs.mask.Mask(err.Error())
	row.Status, row.Error = "failed", msg
	c := store.Commit{Steps: []store.Step{row}, Events: []store.Event{e.event(rs, EventHookFailed, id, withCode(failureCode(err), map[string]any{"error": msg}), now)}}
	next := rs.state
	if onSuccess && !h.ContinueOnError {
		runErr, _ := json.Marshal(withCode(failureCode(err), map[string]any{"message": fmt.Sprintf("on_success hook %s failed: %s", id, msg)}))
		next.Phase, next.Final = phaseCompensate, &Final{Status: store.StatusFailed, Error: runErr}
		c.Events = append(c.Events, e.event(rs, EventRunCompensating, "", map[string]any{"error": msg}, now))
	}
	return e.commit(ctx, rs, c, next)
}

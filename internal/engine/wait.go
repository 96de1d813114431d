package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Event types of durable waits.
const (
	EventStepSleeping  = code.EventStepSleeping
	EventStepRetrying  = code.EventStepRetrying
	EventStepRepeating = code.EventStepRepeating
)

// Defaults of retries and repeats.
const (
	defaultBackoff     = time.Second
	defaultMaxBackoff  = 5 * time.Minute
	defaultRepeatEvery = 10 * time.Second
)

// sleep executes a sleep step: it parks the run on a durable wake-up and
// completes when the wake-up is due.
func (e *Engine) sleep(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	if w := sx.wait; w != nil {
		return e.succeedStep(ctx, rs, sx, &result{Output: map[string]any{"until": w.Until.Format(time.RFC3339Nano)}}, store.Commit{}, rs.state.Cursor+1, succeedOpts{})
	}
	now := e.now().UTC()
	until, err := sleepUntil(sx.s.Sleep, env, now)
	if err != nil {
		return e.stepFailedErr(ctx, rs, sx, "", err, false)
	}
	if !until.After(now) {
		return e.succeedStep(ctx, rs, sx, &result{Output: map[string]any{"until": until.Format(time.RFC3339Nano)}}, store.Commit{}, rs.state.Cursor+1, succeedOpts{})
	}
	return e.park(ctx, rs, sx, &Wait{Reason: "sleep", Until: until}, EventStepSleeping, map[string]any{"until": until})
}

// sleepUntil is when a sleep ends: its `until`, or now plus its duration.
func sleepUntil(s *workflow.Sleep, env map[string]any, now time.Time) (time.Time, error) {
	if s.Until != "" {
		v, err := expr.Render(s.Until, env)
		if err != nil {
			return time.Time{}, fmt.Errorf("sleep until: %w", err)
		}
		t, err := time.Parse(time.RFC3339, expr.Text(v))
		if err != nil {
			return time.Time{}, fmt.Errorf("sleep until: %q is not an RFC 3339 time", expr.Text(v))
		}
		return t.UTC(), nil
	}
	d, err := renderDuration(s.Duration, env)
	if err != nil {
		return time.Time{}, fmt.Errorf("sleep: %w", err)
	}
	return now.Add(d), nil
}

// park commits a durable wait for the step at the cursor.
func (e *Engine) park(ctx context.Context, rs *runState, sx *stepExec, w *Wait, event string, data map[string]any, extra ...store.Attempt) error {
	w.StepKey, w.Visit, w.Started = sx.key, sx.visit, sx.started
	next := rs.state
	next.Wait = w
	data["visit"] = sx.visit
	events := []store.Event{e.event(rs, event, sx.s.ID, data, e.now().UTC())}
	if sx.wait == nil {
		events = append([]store.Event{e.startEvent(rs, sx)}, events...)
	}
	if err := e.commit(ctx, rs, store.Commit{Attempts: extra, Events: events}, next); err != nil {
		return err
	}
	return errParked
}

// shouldRetry reports whether a failed attempt gets another one: the step
// has attempts left and the error is not marked permanent.
func (e *Engine) shouldRetry(s *workflow.Step, sx *stepExec, err error) bool {
	if s.Retry == nil || sx.attempt >= s.Retry.Attempts {
		return false
	}
	return !permanent(err)
}

// permanent reports whether an action marked its error as one that
// trying again cannot fix (bad input, a 4xx answer).
func permanent(err error) bool {
	var ae *action.Error
	return errors.As(err, &ae) && !ae.Retryable
}

// retryLater records the failed attempt and parks the step until its
// backoff is over.
func (e *Engine) retryLater(ctx context.Context, rs *runState, sx *stepExec, env map[string]any, cause error) error {
	r := sx.s.Retry
	delay := retryDelay(r, sx.attempt, env, cause)
	now := e.now().UTC()
	msg := rs.mask.Mask(cause.Error())
	failed := store.Attempt{Key: sx.key, Visit: sx.visit, Attempt: sx.attempt, Status: "failed", Error: msg, StartedAt: sx.started, FinishedAt: now}
	w := &Wait{Reason: "retry", Until: now.Add(delay), Attempt: sx.attempt + 1, Iteration: sx.iteration}
	return e.park(ctx, rs, sx, w, EventStepRetrying, map[string]any{"attempt": sx.attempt, "max_attempts": r.Attempts, "error": msg, "delay_ms": delay.Milliseconds()}, failed)
}

// backoff is the wait before attempt n+1: backoff·2^(n-1), capped at
// max_backoff, with full jitter over its upper half (so that many failing
// runs do not retry in lockstep).
func backoff(r *workflow.Retry, attempt int, env map[string]any) time.Duration {
	base, maxB := backoffBounds(r, env)
	d := base
	for i := 1; i < attempt && d < maxB; i++ {
		d *= 2
	}
	d = min(d, maxB)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// retryDelay is the wait before attempt n+1 after cause: the backoff, or
// longer when the action learned that the callee wants a longer pause (an
// HTTP Retry-After) — but never beyond max_backoff, which is the longest
// wait the workflow accepts.
func retryDelay(r *workflow.Retry, attempt int, env map[string]any, cause error) time.Duration {
	d := backoff(r, attempt, env)
	var ae *action.Error
	if errors.As(cause, &ae) && ae.RetryAfter > d {
		_, maxB := backoffBounds(r, env)
		d = min(ae.RetryAfter, maxB)
	}
	return d
}

// backoffBounds are a retry's first wait and its longest one.
func backoffBounds(r *workflow.Retry, env map[string]any) (base, maxB time.Duration) {
	base, maxB = defaultBackoff, defaultMaxBackoff
	if r.Backoff != "" {
		if d, err := renderDuration(r.Backoff, env); err == nil {
			base = d
		}
	}
	if r.MaxBackoff != "" {
		if d, err := renderDuration(r.MaxBackoff, env); err == nil {
			maxB = d
		}
	}
	return base, maxB
}

// repeatOrFinish evaluates a repeat's `until` with the step's latest
// output: done, another round after `every`, or a failure when the
// attempts or the time are used up.
func (e *Engine) repeatOrFinish(ctx context.Context, rs *runState, sx *stepExec, env map[string]any, output any) error {
	rp := sx.s.Repeat
	self := map[string]any{"output": output, "status": "succeeded", "attempts": sx.iteration, "answer": nil, "error": nil}
	steps := make(map[string]any, len(rs.steps))
	for k, v := range rs.steps {
		steps[k] = v
	}
	steps[sx.s.ID] = self
	env2 := make(map[string]any, len(env))
	for k, v := range env {
		env2[k] = v
	}
	env2["steps"] = steps
	done, err := condition(string(rp.Until), env2)
	if err != nil {
		return e.stepFailedErr(ctx, rs, sx, "repeat until: ", err, false)
	}
	if done {
		return e.succeedStep(ctx, rs, sx, &result{Output: output, Attempts: sx.iteration}, store.Commit{}, rs.state.Cursor+1, succeedOpts{})
	}
	if rp.MaxAttempts > 0 && sx.iteration >= rp.MaxAttempts {
		return e.stepFailed(ctx, rs, sx, fmt.Sprintf("repeat: the condition did not hold after %d attempts", sx.iteration), false)
	}
	every := defaultRepeatEvery
	if rp.Every != "" {
		d, err := renderDuration(rp.Every, env)
		if err != nil {
			return e.stepFailed(ctx, rs, sx, "repeat every: "+err.Error(), false)
		}
		every = d
	}
	now := e.now().UTC()
	if rp.Timeout != "" {
		limit, err := renderDuration(rp.Timeout, env)
		if err != nil {
			return e.stepFailed(ctx, rs, sx, "repeat timeout: "+err.Error(), false)
		}
		if now.Add(every).After(sx.started.Add(limit)) {
			return e.stepFailed(ctx, rs, sx, fmt.Sprintf("repeat: the condition did not hold within %s", rp.Timeout), false)
		}
	}
	w := &Wait{Reason: "repeat", Until: now.Add(every), Attempt: 1, Iteration: sx.iteration + 1}
	return e.park(ctx, rs, sx, w, EventStepRepeating, map[string]any{"iteration": sx.iteration, "next_at": w.Until})
}

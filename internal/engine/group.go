package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Parallel groups and foreach loops run their branches and items
// concurrently. Every branch and every body step of every item is recorded
// on its own as it completes (key: the branch's id, or
// "loop[3].step" for item 3 of foreach loop), so a group re-entered after
// a crash runs only what is missing. The group's own step is recorded when
// all of them ended: its output is the list of item results (foreach) or
// the branches' outputs by id (parallel).

// errBlocked: a branch or item waits for an answer (a question or agent
// step inside the group); the group resumes when it comes.
var errBlocked = errors.New("blocked on a pause")

// group executes a parallel or foreach step at the cursor.
//
// A group's timeout bounds the whole group, waits included: its end is
// kept in the group's wait (TimeoutAt) while the group waits, running
// branches are interrupted when it passes, and the group's step fails
// (failTimedOutGroup).
func (e *Engine) group(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	var timeoutAt time.Time
	if sx.wait != nil {
		timeoutAt = sx.wait.TimeoutAt
	} else {
		var err error
		if timeoutAt, err = stepTimeout(sx.s, env, sx.started); err != nil {
			return e.stepFailed(ctx, rs, sx, err.Error(), false)
		}
	}
	if e.dueTimeout(&Wait{TimeoutAt: timeoutAt}) {
		return e.failTimedOutGroup(ctx, rs, sx, env)
	}
	gctx := ctx
	if !timeoutAt.IsZero() {
		var cancel context.CancelFunc
		gctx, cancel = context.WithDeadline(ctx, timeoutAt)
		defer cancel()
	}
	out, failure, err := e.runGroup(gctx, rs, sx.s, "", sx.visit, env)
	if ctx.Err() == nil && !timeoutAt.IsZero() && (gctx.Err() != nil || e.dueTimeout(&Wait{TimeoutAt: timeoutAt})) {
		return e.failTimedOutGroup(ctx, rs, sx, env)
	}
	if errors.Is(err, errBlocked) && failure == "" {
		// Everything that could run has run; the rest waits for answers or
		// for sub-workflow runs.
		if e.awaitsAnswer(ctx, rs) {
			if rs.run.Status != store.StatusWaiting {
				// The branches' pauses were published while the run was
				// running: this event tells watchers that the run as a
				// whole now waits (without it they noticed on their next
				// poll, half a second later).
				c := store.Commit{Run: store.RunUpdate{Status: store.StatusWaiting},
					Events: []store.Event{e.event(rs, EventRunPaused, sx.s.ID, map[string]any{"kind": "group", "visit": sx.visit}, e.now().UTC())}}
				next := rs.state
				if !timeoutAt.IsZero() {
					// The run is driven again when the timeout passes.
					next.Wait = &Wait{StepKey: sx.key, Visit: sx.visit, Reason: "group", Until: timeoutAt, Started: sx.started, TimeoutAt: timeoutAt}
				}
				if err := e.commit(ctx, rs, c, next); err != nil {
					return err
				}
			}
			return errParked
		}
		// Children are running: look again when one ends (they wake this
		// run) or after a while (they may run in another process).
		next := rs.state
		next.Wait = &Wait{StepKey: sx.key, Visit: sx.visit, Reason: "children", Until: wakeBy(e.now().UTC().Add(childPoll), timeoutAt), Started: sx.started, TimeoutAt: timeoutAt}
		if err := e.commit(ctx, rs, store.Commit{}, next); err != nil {
			return err
		}
		return errParked
	}
	if err != nil {
		return err
	}
	if failure != "" {
		return e.stepFailed(ctx, rs, sx, failure, false)
	}
	return e.succeedStep(ctx, rs, sx, &result{Output: out}, store.Commit{}, rs.state.Cursor+1, succeedOpts{})
}

// runGroup runs a group whose instances' keys start with prefix. It
// returns the group's output, or a failure message when a branch or item
// failed without continue_on_error; err is for interruptions and store
// errors only.
func (e *Engine) runGroup(ctx context.Context, rs *runState, s *workflow.Step, prefix string, visit int, env map[string]any) (any, string, error) {
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		failure string
		firstEr error
		blocked bool
	)
	block := func() {
		mu.Lock()
		blocked = true
		mu.Unlock()
	}
	fail := func(msg string, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstEr == nil {
			firstEr = err
		}
		if msg != "" && failure == "" {
			failure = msg
		}
		cancel() // siblings stop: the group has failed
	}
	var wg sync.WaitGroup
	if s.Parallel != nil {
		limit := s.Concurrency
		if limit <= 0 {
			limit = len(s.Parallel)
		}
		sem := make(chan struct{}, limit)
		outs := make(map[string]any, len(s.Parallel))
		for _, b := range s.Parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if gctx.Err() != nil {
					return
				}
				r, err := e.instance(gctx, rs, b, prefix+b.ID, visit, rs.snapshot(env, nil))
				switch {
				case err != nil:
					fail("", err)
				case r.Status == statusBlocked:
					block()
				case r.Status == "failed" && !b.ContinueOnError:
					fail(fmt.Sprintf("branch %s failed: %s", b.ID, r.Error), nil)
				default:
					mu.Lock()
					outs[b.ID] = r.Output
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if blocked && failure == "" && firstEr == nil {
			return nil, "", errBlocked
		}
		return outs, failure, groupErr(ctx, firstEr, failure)
	}
	items, err := foreachItems(s, env)
	if err != nil {
		return nil, err.Error(), nil
	}
	limit := max(s.Concurrency, 1)
	sem := make(chan struct{}, limit)
	outs := make([]any, len(items))
	for i, item := range items {
		if gctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			itemPrefix := prefix + s.ID + "[" + strconv.Itoa(i) + "]."
			if visit > 1 {
				itemPrefix = prefix + s.ID + "#" + strconv.Itoa(visit) + "[" + strconv.Itoa(i) + "]."
			}
			last, msg, err := e.runBody(gctx, rs, s.Steps, itemPrefix, env, item, i)
			switch {
			case errors.Is(err, errBlocked):
				block() // the rest of this item waits
				return
			case err != nil:
				fail("", err)
				return
			case msg != "":
				fail(fmt.Sprintf("item %d: %s", i, msg), nil)
				return
			}
			mu.Lock()
			outs[i] = last
			mu.Unlock()
		}()
	}
	wg.Wait()
	if blocked && failure == "" && firstEr == nil {
		return nil, "", errBlocked
	}
	return outs, failure, groupErr(ctx, firstEr, failure)
}

// statusBlocked marks an instance that waits for an answer (not recorded).
const statusBlocked = "blocked"

// groupErr: a store error or an interruption of the run (not the group's
// own cancellation of siblings) stops the run's driver.
func groupErr(ctx context.Context, first error, failure string) error {
	if ctx.Err() != nil {
		return errInterrupted
	}
	if first != nil && !(failure != "" && (errors.Is(first, errInterrupted) || errors.Is(first, context.Canceled))) {
		return first
	}
	return nil
}

func foreachItems(s *workflow.Step, env map[string]any) ([]any, error) {
	switch x := s.Foreach.(type) {
	case []any:
		v, err := expr.RenderValue(x, env)
		if err != nil {
			return nil, fmt.Errorf("foreach: %w", err)
		}
		return v.([]any), nil
	case string:
		v, err := expr.Render(x, env)
		if err != nil {
			return nil, fmt.Errorf("foreach: %w", err)
		}
		list, ok := v.([]any)
		if !ok {
			if v == nil {
				return nil, nil
			}
			return nil, fmt.Errorf("foreach: the expression gave %s, not a list", expr.Text(v))
		}
		return list, nil
	}
	return nil, fmt.Errorf("foreach: not a list")
}

// snapshot copies the expression context for a branch or item, with local
// results (earlier body steps of the same item) over the run's.
func (rs *runState) snapshot(env map[string]any, local map[string]any) map[string]any {
	rs.mu.Lock()
	steps := maps.Clone(rs.steps)
	rs.mu.Unlock()
	for k, v := range local {
		steps[k] = v
	}
	out := maps.Clone(env)
	out["steps"] = steps
	return out
}

// instance runs one nested step (a branch, or a body step of an item), or
// returns its recorded result.
func (e *Engine) instance(ctx context.Context, rs *runState, s *workflow.Step, key string, visit int, env map[string]any) (*result, error) {
	rs.mu.Lock()
	done, ok := rs.byKey[instanceKey(key, visit)]
	if !ok && key == s.ID {
		if r, top := rs.results[s.ID]; top && r.Visit == visit {
			done, ok = r, true
		}
	}
	rs.mu.Unlock()
	if ok {
		return done, nil
	}
	started := e.now().UTC()
	sx := &stepExec{s: s, key: key, visit: visit, started: started, attempt: 1, iteration: 1}
	r := &result{Visit: visit, Attempts: 1}
	if s.If != "" {
		ok, err := condition(string(s.If), env)
		switch {
		case err != nil:
			r.Status, r.Error = "failed", "if: "+err.Error()
		case !ok:
			r.Status = "skipped"
		}
	}
	if r.Status == "" {
		switch s.Kind() {
		case workflow.KindUses:
			r2, err := e.nestedAction(ctx, rs, sx, env)
			if err != nil || r2.Status == statusBlocked {
				return r2, err
			}
			r = r2
		case workflow.KindFail:
			msg, _ := expr.RenderObserved(*s.Fail, env, rs.learner())
			r.Status, r.Error = "failed", rs.mask.Mask(expr.Text(msg))
		case workflow.KindAsk, workflow.KindAgent:
			return e.nestedPause(ctx, rs, sx, env)
		case workflow.KindSleep:
			r2, err := e.nestedSleep(ctx, rs, sx, env)
			if err != nil || r2.Status == statusBlocked {
				return r2, err
			}
			r = r2
		case workflow.KindWorkflow:
			r2, err := e.nestedChild(ctx, rs, sx, env)
			if err != nil || r2.Status == statusBlocked {
				return r2, err
			}
			r = r2
		case workflow.KindParallel, workflow.KindForeach:
			out, failure, err := e.runGroup(ctx, rs, s, key+".", visit, env)
			if errors.Is(err, errBlocked) {
				return &result{Status: statusBlocked}, nil
			}
			if err != nil {
				return nil, err
			}
			if failure != "" {
				r.Status, r.Error = "failed", failure
			} else {
				r.Status, r.Output = "succeeded", out
			}
		default:
			r.Status, r.Error = "failed", fmt.Sprintf("%s steps cannot run inside a parallel group or foreach body yet", s.Kind())
		}
	}
	if ctx.Err() != nil {
		// The group failed elsewhere (or the run stops): a sibling's late
		// result is not recorded; it runs again if the run is retried.
		return nil, errInterrupted
	}
	if err := e.recordInstance(ctx, rs, sx, r); err != nil {
		return nil, err
	}
	return r, nil
}

// nestedAction runs one attempt of a uses step inside a group. A failed
// attempt with retries left is recorded and waits for its backoff on a
// durable wake-up of its own, as at the top level: the instance is blocked
// until the timer loop drives the run again.
func (e *Engine) nestedAction(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) (*result, error) {
	s := sx.s
	k := instanceKey(sx.key, sx.visit)
	timerKey := "retry:" + k
	rs.mu.Lock()
	sx.attempt = rs.failed[k] + 1
	rs.mu.Unlock()
	if sx.attempt > 1 {
		timers, err := e.store.Timers(ctx, rs.run.ID)
		if err != nil {
			return nil, err
		}
		for _, t := range timers {
			if t.Key == timerKey && e.now().Before(t.WakeAt) {
				return &result{Status: statusBlocked}, nil
			}
		}
	}
	e.bus.publish(Event{RunID: rs.run.ID, Type: EventStepStarted, StepID: s.ID, At: sx.started, Status: store.StatusRunning})
	// No retry here: a nested retry waits on a durable wake-up (below).
	out, _, err := e.invoke(ctx, rs, sx, workflow.Action{Uses: s.Uses, With: s.With, Timeout: s.Timeout}, env)
	if errors.Is(err, errInterrupted) {
		return nil, err
	}
	r := &result{Visit: sx.visit, Attempts: sx.attempt, clearTimer: timerKey}
	if err == nil {
		r.Status, r.Output = "succeeded", out
		return r, nil
	}
	if !e.shouldRetry(s, sx, err) {
		r.Status, r.Error = "failed", rs.mask.Mask(err.Error())
		return r, nil
	}
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	now := e.now().UTC()
	delay := retryDelay(s.Retry, sx.attempt, env, err)
	msg := rs.mask.Mask(err.Error())
	c := store.Commit{
		Attempts:  []store.Attempt{{Key: sx.key, Visit: sx.visit, Attempt: sx.attempt, Status: "failed", Error: msg, StartedAt: sx.started, FinishedAt: now}},
		SetTimers: []store.Timer{{Key: timerKey, WakeAt: now.Add(delay)}},
		Events:    []store.Event{e.event(rs, EventStepRetrying, s.ID, map[string]any{"key": sx.key, "attempt": sx.attempt, "max_attempts": s.Retry.Attempts, "error": msg, "delay_ms": delay.Milliseconds()}, now)},
	}
	if err := e.commit(ctx, rs, c, e.currentState(rs)); err != nil {
		return nil, err
	}
	rs.mu.Lock()
	rs.failed[k] = sx.attempt
	rs.mu.Unlock()
	return &result{Status: statusBlocked}, nil
}

// recordInstance commits a nested step's result without moving the cursor.
func (e *Engine) recordInstance(ctx context.Context, rs *runState, sx *stepExec, r *result) error {
	now := e.now().UTC()
	row := store.Step{Key: sx.key, Visit: sx.visit, StepID: sx.s.ID, Status: r.Status, Error: r.Error, Attempts: r.Attempts, StartedAt: sx.started, FinishedAt: now}
	if r.Output != nil {
		out, _, err := e.storedOutput(rs, sx.s.ID, r.Output)
		if err != nil {
			return err
		}
		row.Output = out
	}
	typ := EventStepSucceeded
	switch r.Status {
	case "failed":
		typ = EventStepFailed
	case "skipped":
		typ = EventStepSkipped
	}
	data := map[string]any{"key": sx.key, "visit": sx.visit}
	if r.Error != "" {
		data["error"] = r.Error
	}
	c := store.Commit{Steps: []store.Step{row}, Events: []store.Event{e.event(rs, typ, sx.s.ID, data, now)}}
	if r.clearTimer != "" {
		c.ClearTimers = []string{r.clearTimer}
	}
	if err := e.commit(ctx, rs, c, e.currentState(rs)); err != nil {
		return err
	}
	rs.mu.Lock()
	rs.byKey[instanceKey(sx.key, sx.visit)] = r
	rs.mu.Unlock()
	if sx.key == sx.s.ID {
		rs.record(sx.s.ID, r) // a top-level parallel branch: referenceable after the group
	}
	return nil
}

func (e *Engine) currentState(rs *runState) State {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.state
}

// nestedPause runs a question or agent step inside a group: answered
// automatically when it can be, otherwise it opens a pause (once) and the
// instance is blocked until Continue records its answer.
func (e *Engine) nestedPause(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) (*result, error) {
	k := instanceKey(sx.key, sx.visit)
	rs.mu.Lock()
	waiting := rs.open[k]
	rs.mu.Unlock()
	if waiting {
		return &result{Status: statusBlocked}, nil
	}
	var req Request
	if sx.s.Ask != nil {
		q, err := e.questionRequest(ctx, rs, sx, env)
		if errors.Is(err, errInterrupted) {
			return nil, err
		}
		if err != nil {
			r := &result{Status: "failed", Error: rs.mask.Mask(err.Error()), Visit: sx.visit}
			return r, e.recordInstance(ctx, rs, sx, r)
		}
		if answer, source, envRef, ok := e.autoAnswer(rs, sx, q, env); ok {
			isSecret := rs.secrets().Answer(sx.s.ID)
			if isSecret {
				learn(rs.mask, answer)
			}
			stored, err := e.storedValue(answer, isSecret, envRef)
			if err != nil {
				return nil, err
			}
			r := &result{Status: "succeeded", Answer: answer, Visit: sx.visit, Attempts: 1}
			_ = source
			return r, e.recordAnswered(ctx, rs, sx, r, stored)
		}
		req = q
	} else {
		var err error
		if req, err = agentRequest(sx.s, env, rs.learner()); err != nil {
			r := &result{Status: "failed", Error: rs.mask.Mask(err.Error()), Visit: sx.visit}
			return r, e.recordInstance(ctx, rs, sx, r)
		}
	}
	body, err := maskedJSON(rs.mask, req)
	if err != nil {
		return nil, err
	}
	now := e.now().UTC()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	next := rs.state
	next.PauseSeq++
	p := &store.Pause{Seq: next.PauseSeq, StepKey: sx.key, Visit: sx.visit, Kind: req.Kind, Request: body, ExpiresAt: now.Add(e.tokenTTL), CreatedAt: now}
	c := store.Commit{OpenPause: p, Events: []store.Event{e.event(rs, EventRunPaused, sx.s.ID, map[string]any{"kind": req.Kind, "seq": p.Seq, "key": sx.key, "visit": sx.visit}, now)}}
	if err := e.commitLocked(ctx, rs, c, next); err != nil {
		return nil, err
	}
	rs.open[k] = true
	return &result{Status: statusBlocked}, nil
}

// recordAnswered records a nested question answered automatically.
func (e *Engine) recordAnswered(ctx context.Context, rs *runState, sx *stepExec, r *result, stored []byte) error {
	now := e.now().UTC()
	row := store.Step{Key: sx.key, Visit: sx.visit, StepID: sx.s.ID, Status: "succeeded", Answer: stored, Attempts: 1, StartedAt: sx.started, FinishedAt: now}
	c := store.Commit{Steps: []store.Step{row}, Events: []store.Event{e.event(rs, EventStepAnswered, sx.s.ID, map[string]any{"key": sx.key, "visit": sx.visit, "source": "auto"}, now)}}
	if err := e.commit(ctx, rs, c, e.currentState(rs)); err != nil {
		return err
	}
	rs.mu.Lock()
	rs.byKey[instanceKey(sx.key, sx.visit)] = r
	rs.mu.Unlock()
	if sx.key == sx.s.ID {
		rs.record(sx.s.ID, r)
	}
	return nil
}

// awaitsAnswer reports whether the run, or one of its sub-workflow runs,
// has an open pause.
func (e *Engine) awaitsAnswer(ctx context.Context, rs *runState) bool {
	ps, err := e.Pauses(ctx, rs.run.ID)
	return err == nil && len(ps) > 0
}

// nestedChild runs a sub-workflow step inside a group: it starts the child
// once (its id derived from the instance key) and is blocked until the
// child ends.
func (e *Engine) nestedChild(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) (*result, error) {
	child, err := e.store.GetRun(ctx, childID(rs.run.ID, sx.key, sx.visit))
	if errors.Is(err, store.ErrNotFound) {
		_, problem, _, err := e.startChild(ctx, rs, sx, env)
		if err != nil {
			return nil, err
		}
		if problem != "" {
			return &result{Status: "failed", Error: problem, Visit: sx.visit}, nil
		}
		return &result{Status: statusBlocked}, nil
	}
	if err != nil {
		return nil, err
	}
	out, problem, done := childOutcome(child, sx.s.Workflow)
	switch {
	case !done:
		return &result{Status: statusBlocked}, nil
	case problem != "":
		return &result{Status: "failed", Error: problem, Visit: sx.visit}, nil
	}
	if out, err = e.childSecrets(ctx, rs, sx.s.ID, child, out); err != nil {
		return nil, err
	}
	return &result{Status: "succeeded", Output: out, Visit: sx.visit, Attempts: 1}, nil
}

func errorText(raw json.RawMessage) string {
	if m, ok := errorMessage(raw).(string); ok {
		return m
	}
	return "no message"
}

// nestedSleep is a durable sleep inside a group: its wake-up is a timer
// keyed by the instance; until it is due the instance is blocked (and the
// timer loop drives the run when it is).
func (e *Engine) nestedSleep(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) (*result, error) {
	key := instanceKey(sx.key, sx.visit)
	timers, err := e.store.Timers(ctx, rs.run.ID)
	if err != nil {
		return nil, err
	}
	now := e.now().UTC()
	for _, t := range timers {
		if t.Key != key {
			continue
		}
		if now.Before(t.WakeAt) {
			return &result{Status: statusBlocked}, nil
		}
		return &result{Status: "succeeded", Output: map[string]any{"until": t.WakeAt.Format(time.RFC3339Nano)}, Visit: sx.visit, Attempts: 1, clearTimer: key}, nil
	}
	until, err := sleepUntil(sx.s.Sleep, env, now)
	if err != nil {
		return &result{Status: "failed", Error: rs.mask.Mask(err.Error()), Visit: sx.visit}, nil
	}
	if !until.After(now) {
		return &result{Status: "succeeded", Output: map[string]any{"until": until.Format(time.RFC3339Nano)}, Visit: sx.visit, Attempts: 1}, nil
	}
	c := store.Commit{SetTimers: []store.Timer{{Key: key, WakeAt: until}},
		Events: []store.Event{e.event(rs, EventStepSleeping, sx.s.ID, map[string]any{"key": sx.key, "until": until}, now)}}
	if err := e.commit(ctx, rs, c, e.currentState(rs)); err != nil {
		return nil, err
	}
	e.wakeTimers()
	return &result{Status: statusBlocked}, nil
}

// runBody runs one item of a foreach: its steps in order, following the
// gotos of switch steps (each step's executions numbered by visit, so a
// loop inside an item is checkpointed like one at the top level). It
// returns the output of the last step that succeeded, or a failure.
func (e *Engine) runBody(ctx context.Context, rs *runState, body []*workflow.Step, prefix string, env map[string]any, item any, index int) (any, string, error) {
	local := map[string]any{}
	visits := map[string]int{}
	skips := map[string]int{} // visits that skipped the step: max_visits does not count them
	var last any
	for bi := 0; bi < len(body); {
		b := body[bi]
		visits[b.ID]++
		v := visits[b.ID]
		limit, n := b.MaxVisits, v-skips[b.ID]
		if limit == 0 {
			limit, n = maxVisits, v
		}
		if n > limit {
			return nil, fmt.Sprintf("step %s would run for the %d. time; its limit is %d (max_visits)", b.ID, n, limit), nil
		}
		ienv := rs.snapshot(env, local)
		ienv["item"], ienv["index"] = item, index
		var r *result
		var err error
		if b.Kind() == workflow.KindSwitch {
			r, err = e.bodySwitch(ctx, rs, b, prefix+b.ID, v, ienv)
		} else {
			r, err = e.instance(ctx, rs, b, prefix+b.ID, v, ienv)
		}
		if err != nil {
			return nil, "", err
		}
		if r.Status == statusBlocked {
			return nil, "", errBlocked
		}
		local[b.ID] = r.env()
		if r.Status == "skipped" {
			skips[b.ID]++
		}
		if r.Status == "failed" && !b.ContinueOnError {
			return nil, fmt.Sprintf("step %s failed: %s", b.ID, r.Error), nil
		}
		next := bi + 1
		if b.Kind() == workflow.KindSwitch {
			if target, _ := r.Output.(map[string]any)["goto"].(string); target != "" {
				for j, t := range body {
					if t.ID == target {
						next = j
					}
				}
			}
			// A forward jump skips the steps in between: recorded as skipped.
			for _, sk := range body[bi+1 : max(bi+1, next)] {
				visits[sk.ID]++
				skips[sk.ID]++
				r, err := e.skipInstance(ctx, rs, sk, prefix+sk.ID, visits[sk.ID])
				if err != nil {
					return nil, "", err
				}
				local[sk.ID] = r.env()
			}
		} else if r.Status == "succeeded" {
			last = r.Output
		}
		bi = next
	}
	return last, "", nil
}

// skipInstance records a body step that a forward goto jumped over as
// skipped (or returns its record, when the item is replayed).
func (e *Engine) skipInstance(ctx context.Context, rs *runState, s *workflow.Step, key string, visit int) (*result, error) {
	rs.mu.Lock()
	done, ok := rs.byKey[instanceKey(key, visit)]
	rs.mu.Unlock()
	if ok {
		return done, nil
	}
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	sx := &stepExec{s: s, key: key, visit: visit, started: e.now().UTC(), attempt: 1, iteration: 1}
	r := &result{Status: "skipped", Visit: visit}
	return r, e.recordInstance(ctx, rs, sx, r)
}

// bodySwitch evaluates (or replays) a switch inside a foreach body; its
// output names the goto taken.
func (e *Engine) bodySwitch(ctx context.Context, rs *runState, s *workflow.Step, key string, visit int, env map[string]any) (*result, error) {
	rs.mu.Lock()
	done, ok := rs.byKey[instanceKey(key, visit)]
	rs.mu.Unlock()
	if ok {
		return done, nil
	}
	sx := &stepExec{s: s, key: key, visit: visit, started: e.now().UTC(), attempt: 1, iteration: 1}
	r := &result{Status: "succeeded", Visit: visit, Attempts: 1, Output: map[string]any{"goto": nil}}
	for i, c := range s.Switch {
		if c.If != "" {
			ok, err := condition(string(c.If), env)
			if err != nil {
				r = &result{Status: "failed", Error: rs.mask.Mask(fmt.Sprintf("case %d: %v", i+1, err)), Visit: visit}
				break
			}
			if !ok {
				continue
			}
		}
		r.Output = map[string]any{"goto": c.Goto, "case": i}
		break
	}
	if ctx.Err() != nil {
		return nil, errInterrupted
	}
	return r, e.recordInstance(ctx, rs, sx, r)
}

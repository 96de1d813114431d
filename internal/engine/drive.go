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

// errInterrupted: the step was interrupted (shutdown or cancel) and nothing
// was recorded; the run resumes from the same step.
var errInterrupted = errors.New("interrupted")

// errParked: the step at the cursor waits for a durable wake-up; the timer
// loop schedules the run again when it is due.
var errParked = errors.New("parked")

// maxVisits bounds how often any step may run in one run, whatever the
// workflow says, so that no loop runs forever.
const maxVisits = 10_000

// drive advances a run until it waits, finishes, or the engine stops.
// scope is handed to every action the run calls (see action.Scope). from,
// when not nil, is the run's state handed over by a Continue (its answer
// queued in its pipeline): the first attempt starts there instead of
// loading the run.
func (e *Engine) drive(ctx context.Context, runID string, scope *action.Scope, from *runState) {
	outages := 0
	for attempt := 0; ; attempt++ {
		rs := from
		from = nil
		if rs == nil {
			var err error
			if rs, err = e.load(ctx, runID); err != nil {
				if errors.Is(err, store.ErrUnavailable) && e.waitForStore(ctx, runID, &outages, err) {
					continue
				}
				if ctx.Err() == nil {
					e.log.Error("load run", "run_id", runID, "err", err)
				}
				return
			}
			// Loaded afresh, the run may execute anything before its
			// first commit: its lease is held now, not left to that commit.
			if _, err := e.hold(ctx, runID, false); err != nil {
				e.notHeld(runID, err)
				return
			}
			rs.ahead = newAhead(rs.run)
			rs.recovering = e.needsRecovery(rs, e.tookOver(runID))
		}
		rs.scope = scope
		rs.leased = true
		if rs.run.Status == store.StatusWaiting && !rs.state.Deadline.IsZero() && !e.now().Before(rs.state.Deadline) {
			if err := e.expireWaiting(ctx, rs); err != nil && ctx.Err() == nil {
				e.log.Error("expire run", "run_id", runID, "err", err)
			}
			continue // drive the failing run (compensation, hooks)
		}
		if rs.run.Status == store.StatusWaiting && e.dueTimeout(rs.state.Wait) {
			err := e.expireStep(ctx, rs)
			switch {
			case err == nil:
			case (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrPauseClosed)) && attempt < 5:
				// answered (or changed) meanwhile: look again
			default:
				if ctx.Err() == nil {
					e.log.Error("time out step", "run_id", runID, "err", err)
				}
				return
			}
			continue // drive the run: its step fails
		}
		if rs.run.Status != store.StatusRunning && rs.run.Status != store.StatusPending {
			e.dropStaleTimers(ctx, rs)
			return
		}
		err := e.advanceAll(ctx, rs)
		switch {
		case err == nil:
			e.keep(rs) // for the Continue that answers its pause
			return
		case errors.Is(err, errInterrupted), ctx.Err() != nil:
			if e.isStopping() {
				e.markInterrupted(ctx, rs)
			}
			return
		case (errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrPauseClosed)) && attempt < 5:
			continue // the run changed under us (cancel, continue; another continue won the pause): reload
		case errors.Is(err, store.ErrUnavailable) && e.waitForStore(ctx, runID, &outages, err):
			// The database went away under a commit, which may or may not
			// have been written: read the run again once it is back, and
			// go on from what it recorded.
			continue
		case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrLeaseHeld):
			// Another process took the run over: it drives it now, and
			// nothing of this driver was or will be recorded.
			e.log.Warn("the run was taken over by another process; this one stops driving it", "run_id", runID, "owner", e.owner)
			if l, ok := e.leaseOf(runID); ok {
				e.dropLease(l)
			}
			return
		default:
			e.log.Error("advance run", "run_id", runID, "err", rs.mask.MaskError(err))
			return
		}
	}
}

// maxOutageWaits bounds how often a driver waits for the database to come
// back (waitForStore) before it lets the run go: about a minute in all;
// the run's lease then expires and a claim picks it up again.
const maxOutageWaits = 30

// waitForStore waits before a driver tries again after the database was
// unavailable: 50 ms, doubling to 2 s. It reports false when the driver
// should stop instead (interrupted, or it waited maxOutageWaits times).
func (e *Engine) waitForStore(ctx context.Context, runID string, outages *int, err error) bool {
	if *outages >= maxOutageWaits || ctx.Err() != nil {
		return false
	}
	wait := min(50*time.Millisecond<<min(*outages, 6), 2*time.Second)
	*outages++
	e.log.Warn("the database is unavailable; the run's driver tries again", "run_id", runID, "in", wait, "err", err)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *Engine) advanceAll(ctx context.Context, rs *runState) (err error) {
	defer func() {
		// Whatever stopped the driver, what it computed is written before
		// it lets go of the run (its kept state must be what is stored).
		if serr := e.settle(context.WithoutCancel(ctx), rs); err == nil || errors.Is(err, errParked) {
			if serr != nil {
				err = serr
			}
		}
	}()
	for rs.run.Status == store.StatusRunning || rs.run.Status == store.StatusPending {
		if e.isStopping() || ctx.Err() != nil {
			return errInterrupted
		}
		if err := e.advance(ctx, rs); err != nil {
			if errors.Is(err, errParked) {
				return nil
			}
			return err
		}
	}
	return nil
}

// advance executes the step at the cursor (or finishes the run) and
// commits the outcome.
func (e *Engine) advance(ctx context.Context, rs *runState) error {
	// Whatever runs first after a recovery is what was in flight.
	recovering := rs.recovering
	rs.recovering = false
	switch rs.state.Phase {
	case phaseOnSuccess, phaseCompensate, phaseOnFailure:
		if err := e.settle(ctx, rs); err != nil {
			return err
		}
		rs.recoveringOp = recovering
		defer func() { rs.recoveringOp = false }()
		return e.finishing(ctx, rs)
	}
	if rs.state.Cursor >= len(rs.wf.Steps) {
		if len(rs.wf.OnSuccess) > 0 {
			next := rs.state
			next.Phase = phaseOnSuccess
			return e.commit(ctx, rs, store.Commit{}, next)
		}
		return e.succeed(ctx, rs)
	}
	s := rs.wf.Steps[rs.state.Cursor]
	sx := &stepExec{s: s, key: s.ID, visit: rs.visit(s.ID) + 1, started: e.now().UTC(), attempt: 1, iteration: 1}
	if dl := rs.state.Deadline; !dl.IsZero() && !e.now().Before(dl) {
		if w := rs.state.Wait; w != nil && w.StepKey == sx.key {
			sx.visit, sx.started = w.Visit, w.Started
		}
		return e.stepFailed(ctx, rs, sx, fmt.Sprintf("the run passed its deadline (timeout %s)", rs.wf.Timeout), true)
	}
	if w := rs.state.Wait; w != nil && w.StepKey == sx.key {
		if e.now().Before(w.Until) && w.Child == "" && w.Reason != "children" && w.Reason != "group" {
			return errParked // woken too early (another process, a restart): the timer stays
		}
		sx.visit, sx.started, sx.attempt, sx.iteration, sx.wait = w.Visit, w.Started, max(w.Attempt, 1), max(w.Iteration, 1), w
	}
	env := rs.env(e.lookupEnv)
	if limit := s.MaxVisits; (limit > 0 && sx.visit > limit && rs.runs(sx.key)+1 > limit) || sx.visit > maxVisits {
		n := sx.visit
		if limit == 0 {
			limit = maxVisits
		} else {
			n = rs.runs(sx.key) + 1
		}
		return e.stepFailed(ctx, rs, sx, fmt.Sprintf("step %q would run for the %d. time; its limit is %d (max_visits)", s.ID, n, limit), true)
	}
	if s.If != "" && sx.wait == nil {
		ok, err := condition(string(s.If), env)
		if err != nil {
			return e.stepFailedErr(ctx, rs, sx, "if: ", err, false)
		}
		if !ok {
			return e.skip(ctx, rs, sx)
		}
	}
	if recovering && e.mayEndTheProcess(s) {
		// Counted before the step runs again, in a commit of its own.
		n, err := e.countRecovery(ctx, rs, sx)
		if err != nil {
			return err
		}
		if n > 0 {
			e.log.Warn("a step the process ended in too often fails", "run_id", rs.run.ID, "step_id", s.ID, "process_ends", n)
			return e.stepFailedWith(ctx, rs, sx, crashedMessage(n), false, failure{code: CodeStepCrashed})
		}
	}
	if !runsAhead(s) {
		if err := e.settle(ctx, rs); err != nil {
			return err
		}
	}
	switch s.Kind() {
	case workflow.KindUses:
		return e.runAction(ctx, rs, sx, env)
	case workflow.KindAsk:
		return e.ask(ctx, rs, sx, env)
	case workflow.KindAgent:
		return e.agent(ctx, rs, sx, env)
	case workflow.KindFail:
		msg, err := expr.RenderObserved(*s.Fail, env, rs.learner())
		if err != nil {
			msg = *s.Fail
		}
		return e.stepFailed(ctx, rs, sx, expr.Text(msg), true)
	case workflow.KindSwitch:
		return e.branch(ctx, rs, sx, env)
	case workflow.KindSleep:
		return e.sleep(ctx, rs, sx, env)
	case workflow.KindParallel, workflow.KindForeach:
		return e.group(ctx, rs, sx, env)
	case workflow.KindWorkflow:
		return e.subWorkflow(ctx, rs, sx, env)
	default:
		return e.stepFailed(ctx, rs, sx, fmt.Sprintf("%s steps are not supported by this version of the engine", s.Kind()), true)
	}
}

// stepExec is one execution of a step.
type stepExec struct {
	s       *workflow.Step
	key     string
	visit   int
	started time.Time
	// attempt counts tries (retries); iteration counts repeats.
	attempt, iteration int
	// wait is the wake-up this execution continues, if any.
	wait *Wait
	// code classifies the failure being recorded (exprerr.go), if any.
	code string
}

// idempotencyKey names one execution of a step for the callee: run/key,
// with #visit when the step runs again (a goto loop) and /repeat-N for the
// N-th poll of a repeat. It deliberately leaves out the attempt: the
// retries of one execution resend the same request, and a server that
// de-duplicates by Idempotency-Key can only do so when every retry (and a
// re-execution after a crash) carries the same key. A new visit or a new
// poll is a new request and gets a new key. The attempt number travels
// separately (action.Call.Attempt).
func (sx *stepExec) idempotencyKey(runID string) string {
	k := runID + "/" + sx.key
	if sx.visit > 1 {
		k += "#" + strconv.Itoa(sx.visit)
	}
	if sx.iteration > 1 {
		k += "/repeat-" + strconv.Itoa(sx.iteration)
	}
	return k
}

// next returns a copy of the state with the cursor moved to cursor and no
// wait: the step is done.
func (rs *runState) next(_ *stepExec, cursor int) State {
	st := rs.state
	st.Cursor = cursor
	st.Wait, st.Recovered, st.Detached = nil, nil, false
	return st
}

// visit is how often a step has been recorded: visits are not stored in
// the state but derived from the recorded steps, so a commit does not grow
// with the number of steps.
func (rs *runState) visit(stepID string) int {
	if r, ok := rs.results[stepID]; ok {
		return r.Visit
	}
	return 0
}

// runs is how often the step recorded under key ran: its recorded
// visits, less those that skipped it (a false `if`, a forward goto), which
// max_visits does not count. (Only steps with max_visits ask, so walking
// the recorded steps costs nothing elsewhere.)
func (rs *runState) runs(key string) int {
	n := 0
	for _, d := range rs.done {
		if d.key == key && d.status != "skipped" {
			n++
		}
	}
	return n
}

// commit writes c with the given next state; on success the in-memory run
// follows and the events are published.
func (e *Engine) commit(ctx context.Context, rs *runState, c store.Commit, next State) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return e.commitLocked(ctx, rs, c, next)
}

// commitLocked is commit for a caller that holds rs.mu. What the run's
// pipeline still holds is written in the same transaction, before c.
func (e *Engine) commitLocked(ctx context.Context, rs *runState, c store.Commit, next State) error {
	var queue []queued
	if rs.ahead != nil {
		var err error
		if queue, err = rs.ahead.take(&rs.run); err != nil {
			return err
		}
	}
	return e.writeLocked(ctx, rs, queue, c, next)
}

// writeLocked commits the queued commits and c as one, with next as the
// run's state; on success the in-memory run follows and the events are
// published.
func (e *Engine) writeLocked(ctx context.Context, rs *runState, queue []queued, c store.Commit, next State) error {
	if !carries(c, queue) {
		// Both close a pause: the queue goes first, on its own.
		if err := e.writeLocked(ctx, rs, queue, store.Commit{}, rs.state); err != nil {
			return err
		}
		queue = nil
	}
	if w := rs.state.Wait; w != nil && (next.Wait == nil || next.Wait.StepKey != w.StepKey) {
		c.ClearTimers = append(c.ClearTimers, w.StepKey)
	}
	if next.Wait != nil {
		if dl := next.Deadline; !dl.IsZero() && next.Wait.Until.After(dl) {
			next.Wait.Until = dl // wake at the deadline to fail on time
		}
		c.SetTimers = append(c.SetTimers, store.Timer{Key: next.Wait.StepKey, WakeAt: next.Wait.Until})
	}
	if !next.Deadline.IsZero() && c.Run.Status == store.StatusWaiting {
		c.SetTimers = append(c.SetTimers, store.Timer{Key: deadlineKey, WakeAt: next.Deadline})
	}
	state, err := json.Marshal(next)
	if err != nil {
		return err
	}
	c.Run.State = state
	own, ownEvents := c.Steps, len(c.Events)
	c = merged(queue, c)
	queuedEvents := len(c.Events) - ownEvents
	c.RunID = rs.run.ID
	c.Rev = rs.run.Rev
	c.EventSeq = rs.run.EventSeq // spares the store reading it back
	var res store.CommitResult
	if rs.leased {
		err = e.leaseCommit(rs, &c)
	}
	if err == nil {
		res, err = e.storeCommit(ctx, c)
		if rs.leased {
			e.leaseCommitted(c, res, err)
		}
	}
	if err != nil {
		tell(queue, res, nil, err)
		if len(queue) > 0 {
			// The queued steps are lost with it, as with a failed flush:
			// nothing may be written on top of them (a caller that goes on
			// after the error, such as choices_from, must not succeed).
			rs.ahead.fail(err)
		}
		return err
	}
	rs.run.Rev = res.Rev
	if n := len(res.EventSeqs); n > 0 {
		rs.run.EventSeq = res.EventSeqs[n-1]
	}
	if rs.ahead != nil {
		rs.ahead.committed(rs.run)
	}
	rs.lastAnswerID = res.AnswerID
	rs.follow(state, c.Run, next, own)
	if awaited(queue) {
		tell(queue, res, e.settledBy(ctx, rs, c), nil)
	}
	// The queue's events come first; the run was running when they happened.
	split := min(queuedEvents, len(res.EventSeqs))
	e.publish(rs.run.ID, store.StatusRunning, c.Events[:queuedEvents], res.EventSeqs[:split])
	e.publish(rs.run.ID, rs.run.Status, c.Events[queuedEvents:], res.EventSeqs[split:])
	if rs.run.ConcurrencyLimit > 0 && store.Finished(rs.run.Status) {
		e.wantAdmission() // its slot is free
	}
	if len(c.SetTimers) > 0 {
		e.wakeTimers()
	}
	if c.Run.Status != "" && rs.run.ParentID != "" {
		child := &runState{run: rs.run}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.wakeParent(context.WithoutCancel(ctx), child)
		}()
	}
	return nil
}

// follow makes the in-memory run what a commit recorded: its state, its
// run update and the steps it recorded (for compensation in reverse).
func (rs *runState) follow(state json.RawMessage, u store.RunUpdate, next State, steps []store.Step) {
	rs.run.State = state
	if u.Status != "" {
		rs.run.Status = u.Status
	}
	// The rest as the store writes it (an empty value keeps the column):
	// a view built from the in-memory run (Settled) shows what a read would.
	if len(u.Inputs) > 0 {
		rs.run.Inputs = u.Inputs
	}
	if u.Reopen {
		rs.run.Outputs, rs.run.Error, rs.run.FinishedAt = nil, nil, time.Time{}
	}
	if len(u.Outputs) > 0 {
		rs.run.Outputs = u.Outputs
	}
	if len(u.Error) > 0 {
		rs.run.Error = u.Error
	}
	if !u.FinishedAt.IsZero() {
		rs.run.FinishedAt = u.FinishedAt
	}
	rs.state = next
	for _, st := range steps {
		rs.done = append(rs.done, doneStep{key: st.Key, stepID: st.StepID, status: st.Status, visit: st.Visit})
	}
}

func (e *Engine) publish(runID, status string, events []store.Event, seqs []int64) {
	if len(events) == 0 {
		return
	}
	out := make([]Event, len(events))
	for i, ev := range events {
		out[i] = Event{RunID: runID, Type: ev.Type, StepID: ev.StepID, Data: ev.Data, At: ev.At, Status: status}
		if i < len(seqs) {
			out[i].Seq = seqs[i]
		}
	}
	e.sawLocal(runID, seqs)
	e.bus.publish(out...)
}

func (e *Engine) event(rs *runState, typ, stepID string, data any, at time.Time) store.Event {
	ev := store.Event{Type: typ, StepID: stepID, At: at}
	if data != nil {
		if b, err := maskedJSON(rs.mask, data); err == nil {
			ev.Data = b
		}
	}
	return ev
}

func (e *Engine) startEvent(rs *runState, sx *stepExec) store.Event {
	// {"kind":…,"visit":…}, as maskedJSON writes that map, without the map.
	kind, _ := json.Marshal(rs.mask.Mask(sx.s.Kind()))
	b := make([]byte, 0, len(kind)+32)
	b = append(append(append(b, `{"kind":`...), kind...), `,"visit":`...)
	b = append(strconv.AppendInt(b, int64(sx.visit), 10), '}')
	return store.Event{Type: EventStepStarted, StepID: sx.s.ID, At: sx.started, Data: b}
}

// visitEvent is an event whose data is {"visit":…}: written directly, as
// maskedJSON would (a number holds no secret), on every step's hot path.
func visitEvent(typ, stepID string, visit int, at time.Time) store.Event {
	b := make([]byte, 0, 24)
	b = append(strconv.AppendInt(append(b, `{"visit":`...), int64(visit), 10), '}')
	return store.Event{Type: typ, StepID: stepID, At: at, Data: b}
}

// skip records a step whose condition was false.
func (e *Engine) skip(ctx context.Context, rs *runState, sx *stepExec) error {
	now := e.now().UTC()
	r := &result{Status: "skipped", Visit: sx.visit}
	err := e.commitAhead(ctx, rs, store.Commit{
		Steps:  []store.Step{{Key: sx.key, Visit: sx.visit, StepID: sx.s.ID, Status: "skipped", StartedAt: sx.started, FinishedAt: now}},
		Events: []store.Event{visitEvent(EventStepSkipped, sx.s.ID, sx.visit, now)},
	}, rs.next(sx, rs.state.Cursor+1))
	if err == nil {
		rs.record(sx.s.ID, r)
	}
	return err
}

// succeedOpts tune how a completed step is recorded.
type succeedOpts struct {
	// answer is the stored (sealed when secret) answer of a question.
	answer json.RawMessage
	// started: the step.started event was committed earlier (with the
	// pause the step opened).
	started bool
	// ahead: the step is pure; the driver need not wait for its record
	// (see commitAhead).
	ahead bool
	// queued, when not nil, puts the record in the run's pipeline (an
	// answer handed to the driver, see continueHandOff) and learns how the
	// commit that carries it went; queuedIt is set once it is queued.
	queued   func(store.CommitResult, *Settled, error)
	queuedIt *bool
	// skipped are the steps a forward goto jumps over: recorded as
	// skipped in the same commit.
	skipped []*workflow.Step
}

// succeedStep records a completed step and moves the cursor.
func (e *Engine) succeedStep(ctx context.Context, rs *runState, sx *stepExec, r *result, c store.Commit, cursor int, o succeedOpts) error {
	now := e.now().UTC()
	r.Status, r.Visit = "succeeded", sx.visit
	if r.Attempts == 0 {
		r.Attempts = max(sx.attempt, 1)
	}
	st := store.Step{Key: sx.key, Visit: sx.visit, StepID: sx.s.ID, Status: "succeeded", Attempts: r.Attempts,
		Answer: o.answer, StartedAt: sx.started, FinishedAt: now}
	if r.Output != nil {
		// What later steps see is what a resumed run would see.
		out, seen, err := e.storedOutput(rs, sx.s.ID, r.Output)
		if err != nil {
			return e.stepFailed(ctx, rs, sx, "output is not JSON: "+err.Error(), false)
		}
		st.Output, r.Output = out, seen
	}
	c.Steps = append(c.Steps, st)
	if r.Attempts > 1 {
		// Earlier attempts were recorded as they failed; the step row
		// stands for a first-try success.
		c.Attempts = append(c.Attempts, store.Attempt{Key: sx.key, Visit: sx.visit, Attempt: r.Attempts, Status: "succeeded", StartedAt: sx.started, FinishedAt: now})
	}
	if !o.started && sx.wait == nil {
		c.Events = append([]store.Event{e.startEvent(rs, sx)}, c.Events...)
	}
	c.Events = append(c.Events, visitEvent(EventStepSucceeded, sx.s.ID, sx.visit, now))
	skipped := make([]*result, len(o.skipped))
	for i, s := range o.skipped {
		v := rs.visit(s.ID) + 1
		skipped[i] = &result{Status: "skipped", Visit: v}
		c.Steps = append(c.Steps, store.Step{Key: s.ID, Visit: v, StepID: s.ID, Status: "skipped", StartedAt: now, FinishedAt: now})
		c.Events = append(c.Events, visitEvent(EventStepSkipped, s.ID, v, now))
	}
	write := e.commit
	switch {
	case o.queued != nil:
		write = func(ctx context.Context, rs *runState, c store.Commit, next State) error {
			err := e.enqueue(ctx, rs, c, next, o.queued)
			*o.queuedIt = err == nil
			return err
		}
	case o.ahead:
		write = e.commitAhead
	}
	if err := write(ctx, rs, c, rs.next(sx, cursor)); err != nil {
		return err
	}
	rs.record(sx.s.ID, r)
	for i, s := range o.skipped {
		rs.record(s.ID, skipped[i])
	}
	return nil
}

// stepFailed records a failed step. Unless the step continues on error (or
// fatal is set), the run fails.
func (e *Engine) stepFailed(ctx context.Context, rs *runState, sx *stepExec, msg string, fatal bool) error {
	return e.stepFailedWith(ctx, rs, sx, msg, fatal, failure{})
}

// failure is what a failed action said beyond its message, or the
// engine's code for why the step failed.
type failure struct {
	httpStatus   int
	responseBody string
	code         string
}

// failureOf reads an action's error.
func failureOf(err error) failure {
	var ae *action.Error
	if !errors.As(err, &ae) {
		return failure{}
	}
	return failure{httpStatus: ae.HTTPStatus, responseBody: ae.ResponseBody, code: ae.Code}
}

// RunError is the error a failed run records: the message and, for a
// step's failure, the step, its action, a code classifying the failure
// when there is one (the action's refusal: NETWORK_NOT_ALLOWED…; the
// engine's own: EXPRESSION_BUDGET, STEP_CRASHED) and what an HTTP response
// said (the body's start, secrets masked).
type RunError struct {
	// Code classifies the failure where one applies (EXPRESSION_BUDGET,
	// NETWORK_NOT_ALLOWED, STEP_CRASHED…).
	Code         string `json:"code,omitempty"`
	Message      string `json:"message"`
	StepID       string `json:"step_id,omitempty"`
	Action       string `json:"action,omitempty"`
	HTTPStatus   int    `json:"http_status,omitempty"`
	ResponseBody string `json:"response_body,omitempty"`
}

// stepFailedWith is stepFailed with what the action said.
func (e *Engine) stepFailedWith(ctx context.Context, rs *runState, sx *stepExec, msg string, fatal bool, f failure) error {
	now := e.now().UTC()
	msg = rs.mask.Mask(msg)
	attempt := max(sx.attempt, 1)
	code := sx.code // the engine's own reason, else the action's
	if code == "" {
		code = f.code
	}
	c := store.Commit{
		Steps:    []store.Step{{Key: sx.key, Visit: sx.visit, StepID: sx.s.ID, Status: "failed", Error: msg, Attempts: attempt, StartedAt: sx.started, FinishedAt: now}},
		Attempts: []store.Attempt{{Key: sx.key, Visit: sx.visit, Attempt: attempt, Status: "failed", Error: msg, StartedAt: sx.started, FinishedAt: now}},
		Events:   []store.Event{e.event(rs, EventStepFailed, sx.s.ID, withCode(code, map[string]any{"visit": sx.visit, "error": msg, "attempts": attempt}), now)},
	}
	if sx.wait == nil {
		c.Events = append([]store.Event{e.startEvent(rs, sx)}, c.Events...)
	}
	r := &result{Status: "failed", Error: msg, Attempts: attempt, Visit: sx.visit}
	if sx.s.ContinueOnError && !fatal {
		if err := e.commit(ctx, rs, c, rs.next(sx, rs.state.Cursor+1)); err != nil {
			return err
		}
		rs.record(sx.s.ID, r)
		return nil
	}
	runErr, _ := json.Marshal(RunError{Code: code, Message: msg, StepID: sx.s.ID, Action: sx.s.Uses,
		HTTPStatus: f.httpStatus, ResponseBody: rs.mask.Mask(f.responseBody)})
	next := rs.next(sx, rs.state.Cursor)
	if e.needsFinishing(rs) {
		// Undo what completed, run the on_failure hooks, then fail.
		next.Phase, next.Final = phaseCompensate, &Final{Status: store.StatusFailed, Error: runErr}
		c.Events = append(c.Events, e.event(rs, EventRunCompensating, sx.s.ID, map[string]any{"error": msg}, now))
	} else {
		c.Run = store.RunUpdate{Status: store.StatusFailed, Error: runErr, FinishedAt: now}
		c.Events = append(c.Events, e.event(rs, EventRunFailed, sx.s.ID, map[string]any{"error": msg}, now))
	}
	if err := e.commit(ctx, rs, c, next); err != nil {
		return err
	}
	rs.record(sx.s.ID, r)
	return nil
}

// succeed finishes the run: outputs are rendered and recorded.
func (e *Engine) succeed(ctx context.Context, rs *runState) error {
	now := e.now().UTC()
	env := rs.env(e.lookupEnv)
	out, shown, name, err := e.runOutputs(rs, env)
	if name != "" {
		msg := rs.mask.Mask(fmt.Sprintf("output %q: %v", name, err))
		runErr, _ := json.Marshal(withCode(failureCode(err), map[string]any{"message": msg}))
		return e.commit(ctx, rs, store.Commit{
			Run:    store.RunUpdate{Status: store.StatusFailed, Error: runErr, FinishedAt: now},
			Events: []store.Event{e.event(rs, EventRunFailed, "", map[string]any{"error": msg}, now)},
		}, rs.state)
	}
	if err != nil {
		return err
	}
	next := rs.state
	next.Phase = ""
	return e.commit(ctx, rs, store.Commit{
		Run:    store.RunUpdate{Status: store.StatusSucceeded, Outputs: out, FinishedAt: now},
		Events: []store.Event{{Type: EventRunSucceeded, At: now, Data: shown}},
	}, next)
}

// runAction executes a `uses` step.
func (e *Engine) runAction(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	s := sx.s
	act, ok := e.actions.Get(s.Uses)
	if !ok {
		return e.stepFailed(ctx, rs, sx, fmt.Sprintf("no action named %q", s.Uses), false)
	}
	var input map[string]any
	if s.With != nil {
		rendered, err := expr.RenderValueObserved(s.With, env, rs.learner())
		if err != nil {
			return e.stepFailedErr(ctx, rs, sx, "with: ", err, false)
		}
		input, _ = rendered.(map[string]any)
	}
	if input == nil {
		input = map[string]any{}
	}
	if vs := e.actions.CheckInput(act, input); len(vs) > 0 {
		return e.stepFailed(ctx, rs, sx, rs.mask.Mask(inputProblem(s.Uses, vs)), false)
	}
	callCtx := ctx
	if s.Timeout != "" {
		d, err := renderDuration(s.Timeout, env)
		if err != nil {
			return e.stepFailed(ctx, rs, sx, "timeout: "+err.Error(), false)
		}
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if dl := rs.state.Deadline; !dl.IsZero() {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithDeadline(callCtx, dl)
		defer cancel()
	}
	pure := action.IsPure(act)
	if !pure {
		// Its effect must not happen on top of steps a crash could take
		// back; a pure step's start shows with its record.
		if err := e.settle(ctx, rs); err != nil {
			return err
		}
		e.bus.publish(Event{RunID: rs.run.ID, Type: EventStepStarted, StepID: s.ID, At: sx.started, Status: rs.run.Status})
	}
	call, flushOut := actionCall(e, rs, sx, input)
	out, err := act.Run(callCtx, call)
	flushOut()
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted // shutdown or cancel: nothing recorded, the step runs again
		}
		if callCtx.Err() == context.DeadlineExceeded {
			if dl := rs.state.Deadline; !dl.IsZero() && !e.now().Before(dl) {
				return e.stepFailed(ctx, rs, sx, fmt.Sprintf("the run passed its deadline (timeout %s)", rs.wf.Timeout), true)
			}
			err = fmt.Errorf("timed out after %s", s.Timeout)
		}
		if e.shouldRetry(s, sx, err) {
			return e.retryLater(ctx, rs, sx, env, err)
		}
		return e.stepFailedWith(ctx, rs, sx, err.Error(), false, failureOf(err))
	}
	output := toData(out)
	if s.Repeat != nil {
		return e.repeatOrFinish(ctx, rs, sx, env, output)
	}
	return e.succeedStep(ctx, rs, sx, &result{Output: output}, store.Commit{}, rs.state.Cursor+1, succeedOpts{ahead: pure})
}

// inputProblem says why an action refused its rendered input.
func inputProblem(uses string, vs []workflow.Violation) string {
	msgs := make([]string, len(vs))
	for i, v := range vs {
		msgs[i] = v.Message
	}
	return uses + ": invalid input: " + strings.Join(msgs, "; ")
}

// toData converts an action's output to the JSON data model.
func toData(v any) any {
	switch v.(type) {
	case nil, string, bool, int64, float64, map[string]any, []any:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// branch evaluates a switch: the first case that holds moves the cursor to
// its target; none holding moves on.
func (e *Engine) branch(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	for i, c := range sx.s.Switch {
		if c.If != "" {
			ok, err := condition(string(c.If), env)
			if err != nil {
				return e.stepFailedErr(ctx, rs, sx, fmt.Sprintf("case %d: ", i+1), err, false)
			}
			if !ok {
				continue
			}
		}
		target := -1
		for j, t := range rs.wf.Steps {
			if t.ID == c.Goto {
				target = j
			}
		}
		if target < 0 {
			return e.stepFailed(ctx, rs, sx, fmt.Sprintf("goto %q: no such step at this level", c.Goto), true)
		}
		// A forward jump skips the steps in between: they are recorded as
		// skipped, as a false `if` would.
		var skipped []*workflow.Step
		if target > rs.state.Cursor+1 {
			skipped = rs.wf.Steps[rs.state.Cursor+1 : target]
		}
		return e.succeedStep(ctx, rs, sx, &result{Output: map[string]any{"goto": c.Goto, "case": i}}, store.Commit{}, target, succeedOpts{ahead: true, skipped: skipped})
	}
	return e.succeedStep(ctx, rs, sx, &result{Output: map[string]any{"goto": nil}}, store.Commit{}, rs.state.Cursor+1, succeedOpts{ahead: true})
}

// condition evaluates a condition field.
func condition(cond string, env map[string]any) (bool, error) {
	src, _, err := expr.Condition(cond)
	if err != nil {
		return false, err
	}
	v, err := expr.Eval(src, env)
	if err != nil {
		return false, err
	}
	return expr.Truthy(v), nil
}

func renderDuration(tmpl string, env map[string]any) (time.Duration, error) {
	v, err := expr.Render(tmpl, env)
	if err != nil {
		return 0, err
	}
	return workflow.ParseDuration(expr.Text(v))
}

// dropStaleTimers deletes the wake-ups of a run that no longer runs (a
// canceled or paused run with sleeps inside a group), so the timer loop
// does not keep waking it.
func (e *Engine) dropStaleTimers(ctx context.Context, rs *runState) {
	if !store.Finished(rs.run.Status) {
		return // a waiting run's group may hold later sleeps; a paused run's resume re-arms its wait
	}
	timers, err := e.store.Timers(ctx, rs.run.ID)
	if err != nil || len(timers) == 0 {
		return
	}
	keys := make([]string, len(timers))
	for i, t := range timers {
		keys[i] = t.Key
	}
	_, _ = e.store.Commit(ctx, store.Commit{RunID: rs.run.ID, Rev: rs.run.Rev, ClearTimers: keys})
}

// deadlineKey names the wake-up of a waiting run's deadline.
const deadlineKey = "deadline"

// expireWaiting ends the pauses of a run that waited past its deadline and
// puts it back to running: its next advance fails it on the deadline.
func (e *Engine) expireWaiting(ctx context.Context, rs *runState) error {
	ps, err := e.store.OpenPauses(ctx, rs.run.ID)
	if err != nil {
		return err
	}
	now := e.now().UTC()
	c := store.Commit{Run: store.RunUpdate{Status: store.StatusRunning}, ClearTimers: []string{deadlineKey},
		Events: []store.Event{e.event(rs, "run.deadline", "", map[string]any{"deadline": rs.state.Deadline}, now)}}
	for _, p := range ps {
		c.CancelPauses = append(c.CancelPauses, p.Seq)
	}
	return e.commit(ctx, rs, c, rs.state)
}

package engine

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Running ahead of the store.
//
// A step is recorded by a commit. For most steps the driver waits for that
// commit before it starts the next step: what the next step does outside the
// engine (a request, a question, a child run) must never happen on top of a
// step that a crash could take back. A pure step (a switch, a skipped step, a
// pure action such as noop or transform) has no effect outside the engine,
// so the driver hands its commit to the run's pipeline and goes on: the
// pipeline commits what is queued in the background, merging whatever queued
// up while the previous commit was in flight into one commit. Before a step
// that is not pure starts, the driver waits until the pipeline is empty
// (settle); a commit that must be waited for takes the queue with it, so the
// pure steps before a pause, a failure or the end of the run are written in
// the same transaction.
//
// An answer given by Continue joins a pipeline too (continueHandOff): it is
// queued with the run's state handed to the run's driver, so that the
// answer, the pure steps after it and the next question are one commit; the
// Continue waits for that commit, so an acknowledged answer is durable.
//
// What a crash can lose is only queued pure steps (and an answer whose
// Continue has not returned): the run resumes from the
// last durable step and computes them again. Their events reach subscribers
// only once they are durable, and nothing that depends on them leaves the
// engine before that, so a re-computed pure step cannot be told from the
// first computation.

// maxAhead bounds how many commits the driver may run ahead of the store:
// beyond it, it waits for the store to take them (memory, and the work a
// crash would make the run do again).
const maxAhead = 1024

// ahead is a run's pipeline of commits the driver did not wait for.
type ahead struct {
	mu   sync.Mutex
	idle *sync.Cond // broadcast when a background flush takes the queue and when it ends
	// queue holds commits not yet handed to the store, in step order.
	queue []queued
	// flushing is set while a background flush runs; it alone takes from
	// queue until it ends.
	flushing bool
	// err is the failure of a background flush (or of a driver's commit
	// that carried the queue): the queued commits after it were dropped,
	// and the driver must stop and reload the run.
	err error
	// rev and eventSeq are the run's revision and event sequence after the
	// last commit, whoever made it.
	rev, eventSeq int64
	// linger starts a flush of queued commits (fewer than flushAt) that no
	// later commit took along in time.
	linger *time.Timer
}

// queued is a commit in the pipeline and, for the answer of a Continue,
// who waits for it (nil for a step's).
type queued struct {
	c    store.Commit
	done func(store.CommitResult, *Settled, error)
}

// flushAt is how many queued commits start a background flush at once:
// fewer wait (lingerFor) for the commit of a question, a failure or the
// end of the run to take them along — an answer, the switch after it and
// the next question are one commit.
const flushAt = 4

// lingerFor is how long queued commits (fewer than flushAt) wait for the
// next commit to take them along before they are flushed on their own: long
// enough for the step after a switch to open its question, short enough
// that a long pure step (a delay) does not hide the one before it.
var lingerFor = 2 * time.Millisecond // a variable for tests that count commits

func newAhead(run store.Run) *ahead {
	a := &ahead{rev: run.Rev, eventSeq: run.EventSeq}
	a.idle = sync.NewCond(&a.mu)
	return a
}

// commitAhead records the commit of a pure step without waiting for it when
// the run has a pipeline, and like commit otherwise. next becomes the
// in-memory state at once.
func (e *Engine) commitAhead(ctx context.Context, rs *runState, c store.Commit, next State) error {
	a := rs.ahead
	if a == nil || !queueable(rs, c, next) {
		return e.commit(ctx, rs, c, next)
	}
	return e.enqueue(ctx, rs, c, next, nil)
}

// enqueue puts c (with next as the run's state) in rs's pipeline; done, when
// not nil, learns how the commit that carries it went. The in-memory run
// follows at once.
func (e *Engine) enqueue(ctx context.Context, rs *runState, c store.Commit, next State, done func(store.CommitResult, *Settled, error)) error {
	a := rs.ahead
	state, err := json.Marshal(next)
	if err != nil {
		return err
	}
	c.Run.State = state
	rs.mu.Lock()
	defer rs.mu.Unlock()
	a.mu.Lock()
	for len(a.queue) >= maxAhead && a.flushing && a.err == nil {
		a.idle.Wait() // the store is far behind: wait for it to take the queue
	}
	if a.err != nil { // also a flush that failed while the driver waited
		err := a.err
		a.mu.Unlock()
		return err
	}
	a.queue = append(a.queue, queued{c: c, done: done})
	// A few queued commits are left, for a moment, for the next commit the
	// driver waits for to carry along (an answer, a switch and the next
	// question: one commit); from flushAt on, or when the next step takes
	// longer than the moment (a delay), the store works while the driver
	// computes.
	if !a.flushing {
		flushCtx, runID := context.WithoutCancel(ctx), rs.run.ID
		if len(a.queue) >= flushAt {
			e.startFlush(flushCtx, runID, a)
		} else if a.linger == nil {
			var t *time.Timer
			t = time.AfterFunc(lingerFor, func() {
				a.mu.Lock()
				defer a.mu.Unlock()
				if a.linger != t {
					return // stopped too late: a take or a flush had it already
				}
				a.linger = nil
				if !a.flushing && len(a.queue) > 0 && a.err == nil {
					e.startFlush(flushCtx, runID, a)
				}
			})
			a.linger = t
		}
	}
	a.mu.Unlock()
	rs.follow(state, c.Run, next, c.Steps)
	return nil
}

// queueable reports whether c may wait in the pipeline: it records steps,
// attempts and events only, and neither it nor next touches a wake-up (a
// step that continues a wait clears its timer: commit does that).
func queueable(rs *runState, c store.Commit, next State) bool {
	u := c.Run
	return rs.state.Wait == nil && next.Wait == nil && u.Status == "" && u.State == nil && u.Inputs == nil &&
		u.Outputs == nil && u.Error == nil && u.FinishedAt.IsZero() && !u.Reopen &&
		c.OpenPause == nil && c.ClosePause == nil && c.Answer == nil && len(c.CancelPauses) == 0 &&
		len(c.SetTimers) == 0 && len(c.ClearTimers) == 0
}

// startFlush starts a background flush; the caller holds a.mu. The driver
// that owns a is alive (it has not settled: the queue is not empty), so
// the engine's wait group is above zero.
func (e *Engine) startFlush(ctx context.Context, runID string, a *ahead) {
	if a.linger != nil {
		a.linger.Stop()
		a.linger = nil
	}
	a.flushing = true
	e.wg.Add(1)
	go e.flush(ctx, runID, a)
}

// flush commits the queue until it is empty, each round merging what
// queued up during the previous one.
func (e *Engine) flush(ctx context.Context, runID string, a *ahead) {
	defer e.wg.Done()
	for {
		a.mu.Lock()
		if len(a.queue) == 0 || a.err != nil {
			dropped, err := a.queue, a.err
			a.queue = nil
			a.flushing = false
			a.idle.Broadcast()
			a.mu.Unlock()
			tell(dropped, store.CommitResult{}, nil, err)
			return
		}
		batch := a.queue
		a.queue = nil
		a.idle.Broadcast() // room in the queue
		c := merged(batch, store.Commit{})
		c.RunID, c.Rev, c.EventSeq = runID, a.rev, a.eventSeq
		a.mu.Unlock()

		// The pipeline is a driver's: its commits are fenced (lease.go).
		var res store.CommitResult
		var err error
		if err = e.leaseCommit(nil, &c); err == nil {
			res, err = e.storeCommit(ctx, c)
			e.leaseCommitted(c, res, err)
		}

		a.mu.Lock()
		if err != nil {
			a.err = err
		} else {
			a.rev = res.Rev
			if n := len(res.EventSeqs); n > 0 {
				a.eventSeq = res.EventSeqs[n-1]
			}
		}
		a.mu.Unlock()
		if err == nil {
			e.publish(runID, store.StatusRunning, c.Events, res.EventSeqs)
		}
		tell(batch, res, nil, err) // a flush leaves the run running: nothing settled
	}
}

// tell gives whoever waits for a queued commit the outcome of the commit
// that carried it (err alone when it was dropped), and the run as that
// commit left it when it settled (see Settled).
func tell(q []queued, res store.CommitResult, settled *Settled, err error) {
	for _, x := range q {
		if x.done != nil {
			x.done(res, settled, err)
		}
	}
}

// awaited reports whether someone waits for a commit of q.
func awaited(q []queued) bool {
	for _, x := range q {
		if x.done != nil {
			return true
		}
	}
	return false
}

// take waits for a background flush to end and hands over what is still
// queued (nil when nothing is). The run's revision and event sequence follow
// what was flushed. A failed flush fails every take after it: the commits
// queued behind it are gone, and writing anything on top of the in-memory
// run would record a state whose steps are missing.
func (a *ahead) take(run *store.Run) ([]queued, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.flushing {
		a.idle.Wait()
	}
	if a.err != nil {
		return nil, a.err
	}
	if a.linger != nil {
		a.linger.Stop()
		a.linger = nil
	}
	q := a.queue
	a.queue = nil
	run.Rev, run.EventSeq = a.rev, a.eventSeq
	return q, nil
}

// quiet reports whether nothing is queued or being flushed, with the
// failure of the last flush if it failed.
func (a *ahead) quiet() (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.flushing && len(a.queue) == 0, a.err
}

// fail records that a commit carrying queued commits failed: like a failed
// flush, it fails every take after it.
func (a *ahead) fail(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

// committed tells the pipeline about a commit the driver made itself.
func (a *ahead) committed(run store.Run) {
	a.mu.Lock()
	a.rev, a.eventSeq = run.Rev, run.EventSeq
	a.mu.Unlock()
}

// settle makes every queued commit of rs durable: what must not happen on
// top of a step a crash could take back comes after it. When nothing is
// queued it touches nothing (concurrent branches of a group call it).
func (e *Engine) settle(ctx context.Context, rs *runState) error {
	a := rs.ahead
	if a == nil {
		return nil
	}
	if quiet, err := a.quiet(); quiet || err != nil {
		return err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	q, err := a.take(&rs.run)
	if err != nil || len(q) == 0 {
		return err
	}
	return e.writeLocked(ctx, rs, q, store.Commit{}, rs.state)
}

// merged is the commits of queue followed by last, as one commit: steps,
// attempts and events in order; the run's status and state as the last one
// that sets them; the pause closed and the answer recorded by whichever
// sets them (at most one does: see carries).
func merged(queue []queued, last store.Commit) store.Commit {
	if len(queue) == 0 {
		return last
	}
	var steps, events int
	for _, q := range queue {
		steps += len(q.c.Steps)
		events += len(q.c.Events)
	}
	out := last
	out.Steps = make([]store.Step, 0, steps+len(last.Steps))
	out.Events = make([]store.Event, 0, events+len(last.Events))
	out.Attempts = nil // the queue's first, then last's (below)
	var status string
	var state json.RawMessage
	for _, q := range queue {
		out.Steps = append(out.Steps, q.c.Steps...)
		out.Events = append(out.Events, q.c.Events...)
		out.Attempts = append(out.Attempts, q.c.Attempts...)
		if q.c.Run.Status != "" {
			status = q.c.Run.Status
		}
		if q.c.Run.State != nil {
			state = q.c.Run.State
		}
		if q.c.ClosePause != nil {
			out.ClosePause = q.c.ClosePause
		}
		if q.c.Answer != nil {
			out.Answer = q.c.Answer
		}
	}
	out.Steps = append(out.Steps, last.Steps...)
	out.Events = append(out.Events, last.Events...)
	if len(last.Attempts) > 0 {
		out.Attempts = append(out.Attempts, last.Attempts...)
	}
	if out.Run.Status == "" {
		out.Run.Status = status
	}
	if out.Run.State == nil {
		out.Run.State = state
	}
	if last.ClosePause != nil {
		out.ClosePause = last.ClosePause
	}
	if last.Answer != nil {
		out.Answer = last.Answer
	}
	return out
}

// carries reports whether c can take queue along in one commit: a commit
// closes at most one pause and records at most one answer.
func carries(c store.Commit, queue []queued) bool {
	if c.ClosePause == nil && c.Answer == nil {
		return true
	}
	for _, q := range queue {
		if q.c.ClosePause != nil || q.c.Answer != nil {
			return false
		}
	}
	return true
}

// runsAhead reports whether the driver may start step s without waiting
// for the pipeline: s is pure, or whatever it does outside the engine waits
// there (an action that is not pure settles first, see invoke and
// runAction), or it does nothing outside the engine before its own commit,
// which then carries the queue along (a question, a failure).
func runsAhead(s *workflow.Step) bool {
	switch s.Kind() {
	case workflow.KindUses, workflow.KindSwitch, workflow.KindFail, workflow.KindAsk, workflow.KindAgent:
		return true
	}
	return false
}

// settleFor settles rs before act runs, unless act is pure.
func (e *Engine) settleFor(ctx context.Context, rs *runState, act action.Action) error {
	if action.IsPure(act) {
		return nil
	}
	return e.settle(ctx, rs)
}

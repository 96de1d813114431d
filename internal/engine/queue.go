package engine

import (
	"context"
	"fmt"
	"time"

	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Concurrency limits (issue 27). A top-level run of a workflow that
// declares concurrency is created queued in its queue (the workflow and
// the value of its key) and driven only once the store admits it
// (store.AdmitQueued: FIFO, up to the limit, atomically per queue, across
// processes). Admission is asked for when such a run starts, when any run
// finishes here (a slot may be free), and, once the engine claims runs
// (Recover) or once it has seen a limited run, at every poll: a run
// finished by another process or by a path that does not ask, or an
// admission lost to a crash between a finish and the next admission, is
// made up for within a poll. Slots are run statuses, so a crash leaks
// none: a running run keeps its slot until whoever recovers it finishes it.
// Sub-workflow runs are not limited (a parent holding the last slot would
// wait forever for its child).

// admitPoll is how often a claiming engine looks for admissible queued
// runs without being told.
const admitPoll = claimPoll

// concurrencyKey evaluates wf's concurrency key over the run's inputs.
func concurrencyKey(wf *workflow.Workflow, inputs map[string]any) (string, error) {
	c := wf.Concurrency
	if c == nil || c.Key == "" {
		return "", nil
	}
	v, err := expr.Render(c.Key, map[string]any{"inputs": inputs})
	if err != nil {
		return "", &Error{Code: CodeInputInvalid, Category: CategoryValidation, Workflow: wf.Name,
			Message:    "the concurrency key could not be evaluated: " + err.Error(),
			Violations: []workflow.Violation{{Path: "/concurrency/key", Rule: "input", Message: err.Error()}},
			Suggestion: "give the inputs the key reads"}
	}
	key := expr.Text(v)
	if len(key) > store.MaxConcurrencyKey {
		msg := fmt.Sprintf("the concurrency key is %d bytes long, more than %d", len(key), store.MaxConcurrencyKey)
		return "", &Error{Code: CodeInputInvalid, Category: CategoryValidation, Workflow: wf.Name, Message: msg,
			Violations: []workflow.Violation{{Path: "/concurrency/key", Rule: "input", Message: msg}},
			Suggestion: "shorten the inputs the key reads"}
	}
	return key, nil
}

// admit asks the store to admit queued runs (one queue, or every queue
// with r.All) and drives those it admitted here.
func (e *Engine) admit(ctx context.Context, r store.AdmitRequest) {
	if e.isStopping() {
		return
	}
	e.queues.Store(true)
	r.Owner, r.Now, r.TTL = e.owner, e.now().UTC(), e.leaseTTL
	got, err := e.store.AdmitQueued(ctx, r)
	if err != nil && ctx.Err() == nil {
		e.log.Error("admit queued runs", "workflow", r.Workflow, "err", err)
	}
	for _, l := range got {
		e.install(l.Lease)
		e.publish(l.RunID, store.StatusRunning, []store.Event{{Type: EventRunStarted, At: r.Now}}, []int64{l.EventSeq})
		e.schedule(l.RunID)
	}
}

// wantAdmission tells the timer loop to look for admissible queued runs
// (a run finished here: its slot may be free).
func (e *Engine) wantAdmission() {
	e.admitNow.Store(true)
	e.wakeTimers()
}

// admitDue admits queued runs when told to (wantAdmission) or, when
// claiming or once a limited run was seen here, every admitPoll.
func (e *Engine) admitDue(claiming bool) {
	now := time.Now()
	polls := claiming || e.queues.Load()
	if !e.admitNow.Swap(false) && (!polls || now.Sub(e.admittedAt) < admitPoll) {
		return
	}
	e.admittedAt = now
	e.admit(e.stepCtx, store.AdmitRequest{All: true})
}

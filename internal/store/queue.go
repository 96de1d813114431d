package store

import (
	"fmt"
	"time"
)

// Concurrency queues (issue 27). A top-level run of a workflow with a
// concurrency limit carries its queue (Run.ConcurrencyKey: the workflow's
// key template's value, "" for one queue per workflow) and the limit
// (Run.ConcurrencyLimit). The store guarantees:
//
//   - A run enters a queue's active set (pending, running, waiting, paused)
//     from StatusQueued only through AdmitQueued, which admits in one
//     transaction per queue, serialized with every other admission to that
//     queue (across processes sharing the database): the oldest queued
//     runs (creation order, then id) while fewer than the limit are active.
//     The limit is the one of the queue's oldest queued run.
//   - A slot is the run's status, not a record of its own: a run holds it
//     until a commit makes it finish (or a cancel of a queued run removes
//     it), whatever happens to the process that drove it, so a crash never
//     leaks one and a run recovered elsewhere keeps it.
//   - An admitted run is running, leased to the admitter (a new epoch) and
//     has a run.started event; its revision increases, so a concurrent
//     commit from a stale read (a cancel) conflicts.

// EventRunStarted is the event AdmitQueued appends.
const EventRunStarted = "run.started"

// MaxQueues is the most queues one AdmitQueued of every queue looks at.
const MaxQueues = 100

// AdmitRequest asks AdmitQueued to start queued runs.
type AdmitRequest struct {
	// All selects every queue that has queued runs (MaxQueues at most);
	// otherwise Workflow and Key name one queue.
	All      bool
	Workflow string
	Key      string
	// Owner leases the admitted runs from Now for TTL.
	Owner string
	Now   time.Time
	TTL   time.Duration
}

// Admitted is a run AdmitQueued started: its new lease and the sequence
// number of its run.started event.
type Admitted struct {
	Lease
	EventSeq int64
}

// ActiveStatuses are the statuses that hold a queue's slot.
var ActiveStatuses = []string{StatusPending, StatusRunning, StatusWaiting, StatusPaused}

// CheckAdmit validates an AdmitRequest (backends call it).
func CheckAdmit(r AdmitRequest) error {
	if err := CheckLeaseRequest(r.Owner, r.TTL); err != nil {
		return err
	}
	if !r.All && r.Workflow == "" {
		return fmt.Errorf("%w: admit needs a workflow or All", ErrInvalidLease)
	}
	return nil
}

// CheckQueued validates the concurrency fields of a run to create
// (backends call it): a queued run needs a limit, and a limited run a
// key no longer than MaxConcurrencyKey bytes.
func CheckQueued(r Run) error {
	if r.ConcurrencyLimit < 0 || (r.Status == StatusQueued && r.ConcurrencyLimit == 0) {
		return fmt.Errorf("%w: a queued run needs a concurrency limit", ErrInvalidRun)
	}
	if len(r.ConcurrencyKey) > MaxConcurrencyKey {
		return fmt.Errorf("%w: concurrency key longer than %d bytes", ErrInvalidRun, MaxConcurrencyKey)
	}
	return nil
}

// MaxConcurrencyKey is the longest concurrency key (bytes) a store keeps.
const MaxConcurrencyKey = 256

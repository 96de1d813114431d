// Package store defines how stepwise keeps runs: the Store interface that
// every backend implements (store/sqlite, store/postgres) and the
// records it holds. The semantics are pinned down by one conformance suite,
// store/storetest, that every backend must pass.
//
// The central operation is Commit: everything that one step of a run
// changes (the run's status and position, the step's result, its events, a
// pause opened or answered, a wake-up) is written in one transaction, so a
// crash either keeps all of it or none of it.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"stepwise.dev/stepwise/code"
)

// Errors a Store returns; backends wrap them with context.
var (
	// ErrNotFound: no such run, version, pause.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the run changed since it was read (revision mismatch).
	ErrConflict = errors.New("conflict: the run changed concurrently")
	// ErrPauseClosed: the pause was already answered or canceled.
	ErrPauseClosed = errors.New("pause already closed")
	// ErrExists: the record already exists.
	ErrExists = errors.New("already exists")
	// ErrBadCursor: a ListRuns cursor the store did not produce.
	ErrBadCursor = errors.New("invalid cursor")
	// ErrUnavailable: the database could not be reached, or dropped the
	// connection during the call (a restart, a failover). A write that
	// failed so may or may not have been applied: read again to know.
	ErrUnavailable = errors.New("database unavailable")
	// ErrInvalidRun: a run to create whose fields contradict each other.
	ErrInvalidRun = errors.New("invalid run")
)

// Run statuses.
const (
	// StatusQueued: the run waits for its workflow's concurrency limit
	// (AdmitQueued starts it).
	StatusQueued    = code.StatusQueued
	StatusPending   = code.StatusPending
	StatusRunning   = code.StatusRunning
	StatusWaiting   = code.StatusWaiting
	StatusSucceeded = code.StatusSucceeded
	StatusFailed    = code.StatusFailed
	StatusCanceled  = code.StatusCanceled
	// StatusPaused: an operator paused the run; it does not advance until
	// resumed.
	StatusPaused = code.StatusPaused
)

// Finished reports whether a run status is final.
func Finished(status string) bool {
	return code.Finished(status)
}

// Version is a workflow definition as a run pinned it: runs keep the exact
// definition they started with, whatever happens to the file later.
type Version struct {
	Version    string // sha256:…
	Name       string
	Definition []byte // canonical JSON
	CreatedAt  time.Time
}

// Run is a run's row.
type Run struct {
	ID       string
	Workflow string
	Version  string
	Status   string
	// Inputs are the resolved inputs; secret values are sealed or kept as
	// $NAME references, never in clear.
	Inputs json.RawMessage
	// Outputs are set when the run succeeds (secrets masked).
	Outputs json.RawMessage
	// Error is set when the run fails: {"message", "step_id", ...}.
	Error json.RawMessage
	// State is the engine's position (cursor, visits, …) as JSON; the
	// store does not interpret it.
	State json.RawMessage
	// ParentID links a sub-workflow run to its parent.
	ParentID string
	// ConcurrencyLimit (0: none) and ConcurrencyKey name the run's
	// concurrency queue (see queue.go); a run created StatusQueued waits
	// in it for AdmitQueued.
	ConcurrencyLimit int
	ConcurrencyKey   string
	// Rev increases with every commit; Commit checks it.
	Rev int64
	// EventSeq is the sequence number of the run's last event.
	EventSeq  int64
	CreatedAt time.Time
	// UpdatedAt is when the run was last written (created or committed),
	// by the store's clock, no earlier than the write began: a run left
	// running with an UpdatedAt before a process started was being driven
	// by an earlier one (the engine's recovery counts on it).
	UpdatedAt  time.Time
	FinishedAt time.Time // zero while not finished
	// Lease, given to CreateRun, creates the run leased to Lease.Owner
	// until Lease.Expires, at epoch 1 (whatever Lease.Epoch says): the run
	// is runnable and leased in one transaction. Reads leave it nil (see
	// GetLease).
	Lease *Lease
}

// Step is the recorded result of one execution of a step. Key identifies
// the step instance (its id, or a path for nested instances such as
// foreach items); Visit counts executions of the same key (goto loops).
type Step struct {
	RunID      string
	Key        string
	Visit      int
	StepID     string
	Status     string // succeeded, failed, skipped
	Output     json.RawMessage
	Answer     json.RawMessage
	Error      string
	Attempts   int
	StartedAt  time.Time
	FinishedAt time.Time
}

// Attempt is one try of a step.
type Attempt struct {
	RunID      string
	Key        string
	Visit      int
	Attempt    int
	Status     string
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
}

// Event is an append-only record of something that happened in a run.
type Event struct {
	RunID  string
	Seq    int64 // assigned by the store, per run, from 1
	Type   string
	StepID string
	Data   json.RawMessage
	At     time.Time
}

// Pause statuses.
const (
	PauseOpen     = "open"
	PauseAnswered = "answered"
	PauseCanceled = "canceled"
	// PauseTimedOut: the step's timeout passed before an answer came.
	PauseTimedOut = "timed_out"
)

// Pause is a run waiting for a person (question) or the agent.
type Pause struct {
	RunID     string
	Seq       int64 // per run, from 1; bound into the token
	StepKey   string
	Visit     int
	Kind      string // question | agent
	Request   json.RawMessage
	Status    string
	ExpiresAt time.Time
	CreatedAt time.Time
	// Answer and AnsweredAt are set when the pause is answered; secret
	// answers are sealed.
	Answer     json.RawMessage
	AnsweredAt time.Time
}

// Answer is a value submitted for a pause. IDs are unique and increase in
// submission order across the store.
type Answer struct {
	ID       int64
	RunID    string
	PauseSeq int64
	StepKey  string
	Value    json.RawMessage
	At       time.Time
}

// Timer is a durable wake-up: the run must be resumed at WakeAt.
type Timer struct {
	RunID  string
	Key    string
	WakeAt time.Time
}

// RunUpdate is the new state of a run in a commit. Nil fields are left as
// they are.
type RunUpdate struct {
	Status     string // "" keeps the status
	State      json.RawMessage
	Inputs     json.RawMessage
	Outputs    json.RawMessage
	Error      json.RawMessage
	FinishedAt time.Time
	// Reopen clears the error, outputs and finish time (a failed run that
	// is retried).
	Reopen bool
}

// Commit is everything one step of a run changes, written atomically.
type Commit struct {
	RunID string
	// Rev must equal the run's current revision, else ErrConflict and
	// nothing is written.
	Rev int64
	// EventSeq, when not zero, is the run's event sequence at Rev as the
	// caller last saw it. A backend may number the events from it instead
	// of reading the run; a wrong value may cost a read, never a wrong
	// number or a spurious conflict.
	EventSeq int64
	Run      RunUpdate
	// Steps are upserted by (RunID, Key, Visit).
	Steps    []Step
	Attempts []Attempt
	// Events are appended in order; the store assigns their Seq.
	Events []Event
	// OpenPause is inserted (its Seq must be new for the run).
	OpenPause *Pause
	// ClosePause answers or cancels an open pause; if it is not open the
	// commit fails with ErrPauseClosed and nothing is written.
	ClosePause *PauseClose
	// CancelPauses closes these open pauses (by sequence number) as
	// canceled; pauses already closed are left as they are.
	CancelPauses []int64
	// Answer is recorded with a new, increasing ID.
	Answer *Answer
	// SetTimers and ClearTimers manage wake-ups (by Key).
	SetTimers   []Timer
	ClearTimers []string
	// Lease, when set, fences the commit: it is written only if the run's
	// lease is held by Lease.Owner at Lease.Epoch (checked in the commit's
	// transaction), else it fails with ErrLeaseLost and writes nothing.
	// Nil: not fenced. See lease.go.
	Lease *LeaseRef
	// Acquire, when set, also acquires the run's lease in the commit's
	// transaction, as AcquireLease would (after the Lease check): another
	// owner's unexpired lease fails the commit with *LeaseHeldError and
	// nothing is written. The new lease is CommitResult.Lease.
	Acquire *LeaseRequest
	// Release, with Lease or Acquire, frees the run's lease in the commit's
	// transaction: the write that makes the run wait or finish lets go of
	// it at once (Release alone: ErrInvalidLease).
	Release bool
}

// LeaseRequest asks for a run's lease for Owner from Now for TTL.
type LeaseRequest struct {
	Owner string
	Now   time.Time
	TTL   time.Duration
}

// PauseClose closes a pause.
type PauseClose struct {
	Seq    int64
	Status string // PauseAnswered, PauseCanceled or PauseTimedOut
	Answer json.RawMessage
	At     time.Time
}

// CommitResult reports what a commit assigned.
type CommitResult struct {
	Rev       int64
	EventSeqs []int64
	AnswerID  int64
	// Lease is the lease the write acquired (Commit.Acquire, Run.Lease of
	// CreateRun); zero otherwise.
	Lease Lease
}

// WorkflowStats summarizes the runs of one workflow.
type WorkflowStats struct {
	Runs      int
	Succeeded int
	Failed    int
	Canceled  int
	// Active counts runs not finished (queued, pending, running, waiting,
	// paused).
	Active int
	// MeanDuration is the mean time from creation to finish of the
	// finished runs (zero when none finished).
	MeanDuration time.Duration
	// LastRunAt is the creation time of the newest run (zero when none).
	LastRunAt time.Time
}

// RunFilter selects runs for List.
type RunFilter struct {
	Workflow string
	Status   []string
	ParentID string
	// CreatedAfter/CreatedBefore bound the creation time (zero: unbounded).
	CreatedAfter, CreatedBefore time.Time
	// Search keeps the runs whose id or workflow name starts with it
	// (case-sensitive; "" keeps all).
	Search string
	// Limit caps the page (default 50, max 1000); Cursor continues a
	// previous page.
	Limit  int
	Cursor string
}

// Store keeps workflow versions, runs and their history.
type Store interface {
	// PutVersion records a workflow version; recording an existing one is
	// a no-op.
	PutVersion(ctx context.Context, v Version) error
	GetVersion(ctx context.Context, version string) (Version, error)
	// ListVersions returns up to limit (at most 1000) versions recorded
	// under the workflow name, newest first, without their definitions.
	ListVersions(ctx context.Context, name string, limit int) ([]Version, error)

	// CreateRun inserts a new run with its first events and, for a fork,
	// the step results it starts from. The run's ID must be new (ErrExists
	// otherwise) and its version recorded (ErrNotFound otherwise).
	CreateRun(ctx context.Context, r Run, events []Event, steps ...Step) (CommitResult, error)
	GetRun(ctx context.Context, id string) (Run, error)
	// ListRuns returns runs, newest first, and a cursor for the next page
	// ("" when there is none).
	ListRuns(ctx context.Context, f RunFilter) ([]Run, string, error)
	// RunIDsByStatus lists the ids of runs in the given statuses (for
	// recovery).
	RunIDsByStatus(ctx context.Context, statuses ...string) ([]string, error)
	// WorkflowStats summarizes the top-level runs (not sub-workflow runs)
	// of one workflow; a workflow never run has zero stats.
	WorkflowStats(ctx context.Context, workflow string) (WorkflowStats, error)

	// Ping reports whether the database answers (nil), or not
	// (ErrUnavailable): a replica's health.
	Ping(ctx context.Context) error

	// Commit applies one step's changes atomically (fenced by c.Lease when
	// set: ErrLeaseLost).
	Commit(ctx context.Context, c Commit) (CommitResult, error)

	// Run leases (see lease.go for the guarantees).
	//
	// AcquireLease takes the run's lease for owner until now+ttl when it is
	// free, expired at now, or already owner's; every acquisition bumps the
	// epoch. Another owner's unexpired lease: *LeaseHeldError
	// (ErrLeaseHeld). No such run: ErrNotFound.
	AcquireLease(ctx context.Context, runID, owner string, now time.Time, ttl time.Duration) (Lease, error)
	// RenewLease extends l to now+ttl, keeping its epoch, if the run's
	// lease is still l's owner at l's epoch (ErrLeaseLost otherwise).
	RenewLease(ctx context.Context, l Lease, now time.Time, ttl time.Duration) (Lease, error)
	// ReleaseLease frees the run's lease if it is still l's owner at l's
	// epoch (ErrLeaseLost otherwise); the epoch stays.
	ReleaseLease(ctx context.Context, l Lease) error
	// GetLease returns the run's lease (Owner "" when free).
	GetLease(ctx context.Context, runID string) (Lease, error)
	// ClaimRuns atomically acquires, for owner until now+ttl, the leases of
	// up to limit runs that the filter selects and whose lease is free or
	// expired at now, oldest runs first, skipping runs whose lease another
	// claimant is taking at the same moment. No run is ever handed to two
	// concurrent claimants.
	ClaimRuns(ctx context.Context, owner string, now time.Time, ttl time.Duration, f ClaimFilter, limit int) ([]Lease, error)
	// TakeOverLease acquires the run's lease for owner until now+ttl from
	// the holding from (its owner at its epoch), expired or not: for a
	// holder known to be gone (a process of this machine that no longer
	// exists). ErrLeaseLost when the lease is no longer from's; the new
	// lease has TookOver set.
	TakeOverLease(ctx context.Context, from Lease, owner string, now time.Time, ttl time.Duration) (Lease, error)

	// AdmitQueued starts queued runs whose queue has free slots (see
	// queue.go): each becomes running, leased to r.Owner, with a
	// run.started event. It returns them in admission order.
	AdmitQueued(ctx context.Context, r AdmitRequest) ([]Admitted, error)
	// QueuePosition returns how many runs of the queued run's queue were
	// queued before it (0: it is next); ErrNotFound when the run is not
	// queued.
	QueuePosition(ctx context.Context, runID string) (int, error)

	// Steps returns the recorded step results of a run in the order they
	// were recorded.
	Steps(ctx context.Context, runID string) ([]Step, error)
	Attempts(ctx context.Context, runID string) ([]Attempt, error)
	// Events returns events with Seq > after, in order (limit <= 0: all).
	Events(ctx context.Context, runID string, after int64, limit int) ([]Event, error)
	GetPause(ctx context.Context, runID string, seq int64) (Pause, error)
	// OpenPauses returns the open pauses of a run.
	OpenPauses(ctx context.Context, runID string) ([]Pause, error)
	// Answers returns the answers of a run in submission order.
	Answers(ctx context.Context, runID string) ([]Answer, error)
	// DueTimers returns timers whose wake time is at or before now. Timers
	// of paused runs (StatusPaused) are not due until the run is resumed.
	DueTimers(ctx context.Context, now time.Time, limit int) ([]Timer, error)
	// Timers returns the timers of one run.
	Timers(ctx context.Context, runID string) ([]Timer, error)
	// NextTimer returns the earliest timer of a run that is not paused (ok
	// false when there is none).
	NextTimer(ctx context.Context) (Timer, bool, error)

	// PurgeRuns deletes the finished runs the filter selects (see
	// PurgeFilter) with everything that belongs to them: their
	// sub-workflow runs, steps, attempts, events, pauses, answers, timers,
	// and the versions no remaining run refers to. It works in batches
	// that each commit atomically, so a run is either entirely there or
	// entirely gone; on error the result counts the batches that
	// committed. An invalid filter is ErrInvalidFilter and deletes nothing.
	PurgeRuns(ctx context.Context, f PurgeFilter) (PurgeResult, error)

	Close() error
}

// Gauges are what a store counts for a metrics scrape, each count
// stopping at the limit it was read with.
type Gauges struct {
	// OpenPauses are the pauses waiting for an answer.
	OpenPauses int64
	// RunsWaitingToBeDriven are the runs pending or running that no
	// process drives: no lease, or an expired one.
	RunsWaitingToBeDriven int64
}

// GaugeReader is implemented by the stores that count Gauges (SQLite and
// PostgreSQL): bounded queries, each stopping at limit rows.
type GaugeReader interface {
	Gauges(ctx context.Context, now time.Time, limit int) (Gauges, error)
}

package store

import (
	"errors"
	"fmt"
	"time"
)

// Run leases (issue 22). A process drives a run only while it holds the
// run's lease: an owner (the process's id), an epoch and an expiry, kept on
// the run's row. The store guarantees:
//
//   - At most one owner holds a run's lease at a time: AcquireLease and
//     ClaimRuns take it only when it is free (never taken, or released),
//     expired (Expires at or before the caller's now), or — for
//     AcquireLease — already held by the same owner. Two claimants racing
//     for one run, in one process or several (several stores on one
//     database), get one winner; the others get ErrLeaseHeld (AcquireLease)
//     or do not get the run (ClaimRuns).
//   - Every acquisition (AcquireLease, ClaimRuns) increases the run's epoch,
//     which never decreases, not even on release: an epoch names one
//     holding of the lease, once. RenewLease extends the expiry of the
//     holding it is given and keeps its epoch.
//   - A Commit that carries a LeaseRef is written only if the run's lease is
//     still that owner's at that epoch, checked in the commit's own
//     transaction (with group commit: its own savepoint, so a refused write
//     rolls back alone); otherwise it is refused with ErrLeaseLost and
//     writes nothing. The expiry is not checked at commit: the epoch fences.
//     A holder whose lease expired but that nobody took over may still
//     commit (and renew); once another process has acquired the lease, the
//     old holder can never commit again. A Commit without a LeaseRef is not
//     fenced (runs driven without leases; operator writes).
//
//   - A run can be leased by the write that makes it runnable: CreateRun of
//     a Run with Lease set creates it leased (epoch 1), and a Commit with
//     Acquire takes the lease (by AcquireLease's rules, after the Lease
//     check) in the commit's transaction; the commit fails whole if the
//     lease is another's, and acquires nothing if it fails otherwise.
//
// Leases are independent of the run's revision: taking, renewing or
// releasing one changes neither Rev nor UpdatedAt.
//
// Time is the caller's: every method takes now, so that tests inject it and
// expiry is judged by the claimant's clock. Processes sharing a database
// need clocks that agree to well within the lease's TTL; a clock that runs
// ahead takes leases over early, which costs a duplicate execution of the
// step in flight (at-least-once), never a second commit by the old holder.

// ErrLeaseLost: the lease is no longer the caller's (another owner or a
// later epoch holds it, or it was released); nothing was written.
var ErrLeaseLost = errors.New("lease lost: the run is leased to another owner or epoch")

// ErrLeaseHeld: another owner holds an unexpired lease on the run. The
// error a store returns is a *LeaseHeldError (errors.As) that says who and
// until when; errors.Is(err, ErrLeaseHeld) holds for it.
var ErrLeaseHeld = errors.New("lease held by another owner")

// LeaseHeldError is the ErrLeaseHeld of one run.
type LeaseHeldError struct {
	RunID   string
	Owner   string
	Expires time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("run %s: lease held by %s until %s", e.RunID, e.Owner, e.Expires.UTC().Format(time.RFC3339Nano))
}

// Is makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// ErrInvalidLease: a lease request without an owner or with a TTL that is
// not positive.
var ErrInvalidLease = errors.New("invalid lease request")

// Lease is one holding of a run's lease. GetLease of a run whose lease is
// free returns Owner "" and the epoch of the last holding (0 if none).
type Lease struct {
	RunID   string
	Owner   string
	Epoch   int64
	Expires time.Time
	// TookOver, on a lease just acquired (AcquireLease, ClaimRuns,
	// TakeOverLease, Commit.Acquire), says the previous holding was another
	// owner's and was never released: that owner stopped (or lost touch)
	// while it drove the run.
	TookOver bool
}

// Ref is what a commit carries to be fenced by this lease.
func (l Lease) Ref() *LeaseRef { return &LeaseRef{Owner: l.Owner, Epoch: l.Epoch} }

// Expired reports whether the lease has expired at now.
func (l Lease) Expired(now time.Time) bool { return !now.Before(l.Expires) }

// LeaseRef fences a Commit: it is written only while the run's lease is
// held by Owner at Epoch.
type LeaseRef struct {
	Owner string
	Epoch int64
}

// ClaimFilter selects the runs ClaimRuns may take.
type ClaimFilter struct {
	// Status lists the statuses claimed (default: pending and running, the
	// runs a process drives without waiting for anything).
	Status []string
	// Ready, when set, claims instead (Status ignored) the runs a driver
	// has work for: pending or running runs with no wake-up later than now
	// (a run parked on a sleep, a retry's backoff or a repeat is not
	// ready until it is due), and runs of any status but paused with a
	// wake-up due at now (a timeout, a deadline, a stale wake-up of a
	// finished run to clear).
	Ready bool
	// Workflow, when set, claims only runs of that workflow.
	Workflow string
}

// Statuses returns the statuses the filter claims.
func (f ClaimFilter) Statuses() []string {
	if len(f.Status) == 0 {
		return []string{StatusPending, StatusRunning}
	}
	return f.Status
}

// CreateLease is the lease a CreateRun of r takes (zero when r.Lease is
// nil), or ErrInvalidLease (backends call it).
func CreateLease(r Run) (Lease, error) {
	if r.Lease == nil {
		return Lease{}, nil
	}
	if r.Lease.Owner == "" || r.Lease.Expires.IsZero() {
		return Lease{}, fmt.Errorf("%w: a lease needs an owner and an expiry", ErrInvalidLease)
	}
	return Lease{RunID: r.ID, Owner: r.Lease.Owner, Epoch: 1, Expires: r.Lease.Expires.UTC()}, nil
}

// CheckLeaseRequest validates an owner and TTL (backends call it).
func CheckLeaseRequest(owner string, ttl time.Duration) error {
	if owner == "" {
		return fmt.Errorf("%w: empty owner", ErrInvalidLease)
	}
	if ttl <= 0 {
		return fmt.Errorf("%w: ttl %v must be positive", ErrInvalidLease, ttl)
	}
	return nil
}

// CheckCommitLease validates a commit's lease fields (backends call it).
func CheckCommitLease(c Commit) error {
	if a := c.Acquire; a != nil {
		if err := CheckLeaseRequest(a.Owner, a.TTL); err != nil {
			return err
		}
	}
	if c.Release && c.Lease == nil && c.Acquire == nil {
		return fmt.Errorf("%w: a commit releases a lease it holds or acquires", ErrInvalidLease)
	}
	return nil
}

package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Run leases (store/lease.go, docs/decisions/0004-run-leases.md). The
// engine drives a run only while it holds the run's lease, so that any
// number of processes on one store never execute a step twice but the one
// in flight when a process ended:
//
//   - A driver holds the lease before it executes anything: a run is
//     created leased (CreateRun), a Continue that hands its answer to a
//     driver takes the lease first, a claim (Recover's loop) takes runs
//     with theirs, and a driver that has none acquires it. A run whose
//     lease another live process holds is left to it.
//   - Every commit of a driver is fenced by the lease's epoch (writeLocked,
//     the pipeline's flush): once another process took the run over, the
//     old driver's commits are refused (store.ErrLeaseLost) and it stops.
//   - One heartbeat renews the engine's leases every TTL/3; a lease found
//     lost interrupts its driver. A driver that stops (the run waits,
//     finishes, parks on a wake-up) releases its lease; Close releases the
//     rest.
//   - After a crash the lease expires and a claim anywhere takes the run
//     over (Lease.TookOver: the recovery is counted, recover.go). A holder
//     known to be gone — an engine of this process that was closed, or a
//     process of this machine that no longer exists — is taken over at
//     once by Recover, Resume and Continue rather than after the TTL, so
//     that a command run again after kill -9 picks its runs up at once.
//
// Non-driver writes (answers committed by a Continue that did not hand
// off, cancels, holds, a child's result written into its parent) are not
// fenced: they are checked by the run's revision, and a driver that finds
// the run changed reloads it.

// defaultLeaseTTL is Config.LeaseTTL unless set: long enough that a
// heartbeat (TTL/3) survives a busy database, short enough that a crashed
// replica's runs move on within seconds.
const defaultLeaseTTL = 15 * time.Second

// heldLease is a lease the engine holds: the lease, and whether its
// acquisition took it over from a holder that never released it (not yet
// seen by a driver).
type heldLease struct {
	lease    store.Lease
	tookOver bool
	// pending: not acquired yet; the driver's first commit acquires it
	// (pend).
	pending bool
}

// Owner is the id this engine holds leases under: machine/pid/nonce.
func (e *Engine) Owner() string { return e.owner }

// liveEngines are the nonces of this process's open engines: a lease held
// under this process's pid and a nonce not among them belongs to an engine
// that was closed without releasing it (as if its process ended).
var liveEngines = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// machine identifies this machine and process namespace: the host name and
// the pid namespace, so that two containers sharing a host name do not
// take each other's process ids for their own.
var machine = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	host = strings.ReplaceAll(host, "/", "_")
	if ns := pidNamespace(); ns != "" {
		host += "~" + ns
	}
	return host
})

// newOwner returns a fresh owner id and its nonce.
func newOwner() (owner, nonce string) {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	nonce = hex.EncodeToString(b)
	return fmt.Sprintf("%s/%d/%s", machine(), os.Getpid(), nonce), nonce
}

// parseOwner splits an owner id made by newOwner.
func parseOwner(owner string) (mach string, pid int, nonce string, ok bool) {
	i := strings.LastIndexByte(owner, '/')
	if i < 0 {
		return "", 0, "", false
	}
	j := strings.LastIndexByte(owner[:i], '/')
	if j < 0 {
		return "", 0, "", false
	}
	pid, err := strconv.Atoi(owner[j+1 : i])
	if err != nil {
		return "", 0, "", false
	}
	return owner[:j], pid, owner[i+1:], true
}

// holderGone reports whether the owner of a lease is known to be gone: an
// engine of this process that was closed, or a process of this machine
// that no longer exists. Anything else (another machine, an id of another
// form) may be alive: its lease is left to expire.
func holderGone(owner string) bool {
	mach, pid, nonce, ok := parseOwner(owner)
	if !ok || mach != machine() {
		return false
	}
	if pid == os.Getpid() {
		liveEngines.Lock()
		defer liveEngines.Unlock()
		return !liveEngines.m[nonce]
	}
	return processGone(pid)
}

// leaseOf returns the lease the engine holds on a run (ok false: none).
func (e *Engine) leaseOf(runID string) (store.Lease, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.leases[runID]
	if !ok || h.pending {
		return store.Lease{}, false
	}
	return h.lease, true
}

// leaseCommit makes c a driver's commit on its run: fenced by the
// engine's lease (ErrLeaseLost when it holds none any more), or acquiring
// it when a hand-off left it to the first commit (pend). A commit that
// ends the run, or stops it at a top-level question, also releases the
// lease (store.Commit.Release): nothing more is driven until someone
// answers, and whoever answers takes the lease again.
func (e *Engine) leaseCommit(rs *runState, c *store.Commit) error {
	e.mu.Lock()
	h, ok := e.leases[c.RunID]
	var l store.Lease
	var pending bool
	if ok {
		l, pending = h.lease, h.pending
	}
	e.mu.Unlock()
	switch {
	case !ok:
		return fmt.Errorf("run %s: %w", c.RunID, store.ErrLeaseLost)
	case pending:
		c.Acquire = &store.LeaseRequest{Owner: e.owner, Now: e.now(), TTL: e.leaseTTL}
	default:
		c.Lease = l.Ref()
	}
	switch st := c.Run.Status; {
	case store.Finished(st):
		c.Release = true
	case st == store.StatusWaiting && c.OpenPause != nil && rs != nil && rs.state.Cursor < len(rs.wf.Steps) && rs.wf.Steps[rs.state.Cursor].ID == c.OpenPause.StepKey:
		c.Release = true
	}
	return nil
}

// leaseCommitted follows a driver's commit made by leaseCommit: the lease
// it acquired is held, the one it released or lost is not. A holding taken
// here since by another acquisition (a newer epoch) is left as it is.
func (e *Engine) leaseCommitted(c store.Commit, res store.CommitResult, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.leases[c.RunID]
	// epoch is the holding the commit was made under (or took).
	var epoch int64
	switch {
	case err == nil && c.Acquire != nil:
		epoch = res.Lease.Epoch
	case c.Lease != nil:
		epoch = c.Lease.Epoch
	}
	newer := ok && !h.pending && h.lease.Epoch > epoch
	switch {
	case err != nil:
		if ok && !newer && (errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrLeaseHeld)) {
			delete(e.leases, c.RunID)
		}
	case newer:
	case c.Release:
		delete(e.leases, c.RunID)
	case c.Acquire != nil:
		e.leases[c.RunID] = &heldLease{lease: res.Lease, tookOver: res.Lease.TookOver}
	}
}

// pend leaves the acquisition of a run's lease to the driver's first
// commit (a Continue's hand-off: the answer's commit takes the lease), when
// the engine holds none.
func (e *Engine) pend(runID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.leases[runID]; !ok {
		e.leases[runID] = &heldLease{lease: store.Lease{RunID: runID}, pending: true}
	}
}

// install records a lease the engine just acquired. An older holding of
// the same run (an acquisition that raced it in this process) gives way.
func (e *Engine) install(l store.Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.leases[l.RunID]
	if ok && !h.pending && h.lease.Epoch >= l.Epoch {
		h.tookOver = h.tookOver || l.TookOver
		return
	}
	// Two acquisitions racing here: the later holding replaces the
	// earlier, and what the earlier took over is not forgotten.
	e.leases[l.RunID] = &heldLease{lease: l, tookOver: l.TookOver || ok && h.tookOver}
}

// newLease is the lease a run created now to be driven here is created
// with (store.Run.Lease).
func (e *Engine) newLease(now time.Time) *store.Lease {
	return &store.Lease{Owner: e.owner, Expires: now.Add(e.leaseTTL)}
}

// tookOver reports, once, whether the engine's lease on a run was taken
// over from a holder that never released it.
func (e *Engine) tookOver(runID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	h, ok := e.leases[runID]
	if !ok || !h.tookOver {
		return false
	}
	h.tookOver = false
	return true
}

// hold makes sure the engine holds the run's lease: the one it holds, or
// a new acquisition (taking it over from a holder known to be gone).
// Another live owner's lease: *store.LeaseHeldError.
//
// A lease left to the first commit (pend) counts as held when pending is
// set (a hand-off: its first commit carries the answer, before anything
// with an effect runs); otherwise it is acquired now.
func (e *Engine) hold(ctx context.Context, runID string, pending bool) (store.Lease, error) {
	e.mu.Lock()
	h, ok := e.leases[runID]
	if ok && h.pending && !pending {
		delete(e.leases, runID)
		ok = false
	}
	e.mu.Unlock()
	if ok {
		return h.lease, nil
	}
	l, err := e.store.AcquireLease(ctx, runID, e.owner, e.now(), e.leaseTTL)
	for attempt := 0; attempt < 3; attempt++ {
		var held *store.LeaseHeldError
		if !errors.As(err, &held) || !holderGone(held.Owner) {
			break
		}
		cur, gerr := e.store.GetLease(ctx, runID)
		if gerr != nil {
			return store.Lease{}, gerr
		}
		if cur.Owner == "" || cur.Owner == e.owner || cur.Expired(e.now()) || !holderGone(cur.Owner) {
			// Changed since: acquire by the usual rules.
			l, err = e.store.AcquireLease(ctx, runID, e.owner, e.now(), e.leaseTTL)
			continue
		}
		if l, err = e.store.TakeOverLease(ctx, cur, e.owner, e.now(), e.leaseTTL); errors.Is(err, store.ErrLeaseLost) {
			l, err = e.store.AcquireLease(ctx, runID, e.owner, e.now(), e.leaseTTL)
		}
	}
	if err != nil {
		return store.Lease{}, err
	}
	e.install(l)
	l, _ = e.leaseOf(runID)
	return l, nil
}

// dropLease forgets the engine's lease on a run (lost: another process
// holds it now) when it is still the holding l.
func (e *Engine) dropLease(l store.Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if h, ok := e.leases[l.RunID]; ok && !h.pending && h.lease.Epoch == l.Epoch {
		delete(e.leases, l.RunID)
	}
}

// releaseLease releases a lease the engine no longer holds in its table.
func (e *Engine) releaseLease(l store.Lease) {
	// A run driven again here since (a new acquisition, another epoch)
	// keeps its lease: this release is then refused, harmlessly.
	if err := e.store.ReleaseLease(context.Background(), l); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		e.log.Debug("release the run's lease", "run_id", l.RunID, "err", err)
	}
}

// releaseAll gives up every lease the engine holds (Close).
func (e *Engine) releaseAll() {
	e.mu.Lock()
	held := make([]store.Lease, 0, len(e.leases))
	for id, h := range e.leases {
		if !h.pending {
			held = append(held, h.lease)
		}
		delete(e.leases, id)
	}
	e.mu.Unlock()
	for _, l := range held {
		e.releaseLease(l)
	}
}

// notHeld handles a driver that could not take its run's lease. Another
// live process drives the run: unless this engine claims ready runs anyway
// (Recover), it looks again once that lease expires, so that a run this
// process was asked to drive moves on should the other process end.
func (e *Engine) notHeld(runID string, err error) {
	var held *store.LeaseHeldError
	if !errors.As(err, &held) {
		if !errors.Is(err, store.ErrNotFound) && e.stepCtx.Err() == nil {
			e.log.Error("take the run's lease", "run_id", runID, "err", err)
		}
		return
	}
	e.log.Debug("the run is driven by another process", "run_id", runID, "owner", held.Owner)
	if e.claiming.Load() {
		return
	}
	e.mu.Lock()
	if e.stopping || e.retrying[runID] {
		e.mu.Unlock()
		return
	}
	e.retrying[runID] = true
	e.mu.Unlock()
	wait := min(max(held.Expires.Sub(e.now()), 50*time.Millisecond), e.leaseTTL) + 10*time.Millisecond
	time.AfterFunc(wait, func() {
		e.mu.Lock()
		delete(e.retrying, runID)
		e.mu.Unlock()
		run, err := e.store.GetRun(e.stepCtx, runID)
		if err == nil && (run.Status == store.StatusRunning || run.Status == store.StatusPending) {
			e.schedule(runID)
		}
	})
}

// heartbeat renews the engine's leases every TTL/3 until the engine
// closes. A lease found lost interrupts its driver: another process drives
// the run now, and the driver's commits would be refused anyway.
func (e *Engine) heartbeat() {
	defer close(e.heartbeatDone)
	tick := time.NewTicker(e.leaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-e.heartbeatStop:
			return
		case <-tick.C:
		}
		e.mu.Lock()
		held := make([]store.Lease, 0, len(e.leases))
		for _, h := range e.leases {
			if !h.pending {
				held = append(held, h.lease)
			}
		}
		e.mu.Unlock()
		for _, l := range held {
			renewed, err := e.store.RenewLease(context.Background(), l, e.now(), e.leaseTTL)
			switch {
			case err == nil:
				e.mu.Lock()
				if h, ok := e.leases[l.RunID]; ok && !h.pending && h.lease.Epoch == l.Epoch {
					h.lease.Expires = renewed.Expires
				}
				e.mu.Unlock()
			case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
				e.log.Warn("lost the run's lease: another process drives it now", "run_id", l.RunID, "owner", e.owner)
				e.dropLease(l)
				e.interrupt(l.RunID)
			default:
				// The database is unreachable: keep trying; the epoch
				// fences whatever happens meanwhile.
				e.log.Warn("renew the run's lease", "run_id", l.RunID, "err", err)
			}
		}
	}
}

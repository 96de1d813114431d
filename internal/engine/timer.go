package engine

import (
	"context"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// The timer loop wakes runs whose durable wake-up (a sleep, a retry's
// backoff, a repeat's interval) is due. Waiting runs hold no goroutine and
// no connection: their wake-ups are rows in the store, and one loop per
// engine sleeps until the earliest one. Other processes may add wake-ups
// too, so the loop also looks again at least every timerPoll.
//
// Once Recover was called, the loop claims instead (store.ClaimRuns,
// Ready): every ready run of the store — new, continued, due, or orphaned
// by a process whose lease expired — up to the engine's free driving
// slots, each with its lease; it looks at least every claimPoll. A
// wake-up fires once wherever it is due: only the holder of the run's
// lease drives it.
const (
	timerPoll    = 2 * time.Second
	claimPoll    = time.Second
	claimBackoff = 100 * time.Millisecond
	// claimBatch is the most runs one claim takes.
	claimBatch = 8
	// othersBackoff: before Recover, due wake-ups of other processes'
	// runs are not this loop's; it looks again this much later.
	othersBackoff = 250 * time.Millisecond
)

// maxMine bounds Engine.mine.
const maxMine = 4096

func (e *Engine) timerLoop() {
	defer close(e.timerDone)
	claimed := true
	for {
		wait := timerPoll
		claiming := e.claiming.Load()
		if claiming {
			wait = claimPoll
		}
		next, ok, err := e.store.NextTimer(e.stepCtx)
		if err == nil && ok {
			if d := next.WakeAt.Sub(e.now()); d < wait {
				wait = d
			}
		}
		switch {
		case claiming && !claimed:
			// The earliest wake-up is due but its run was not claimable
			// (another process drives it): look again soon, not at once.
			wait = max(wait, claimBackoff)
		case !claiming && !claimed:
			wait = max(wait, othersBackoff)
		}
		if claiming && e.claimNow.Swap(false) {
			wait = 0 // a run was made ready elsewhere, or more are waiting
		}
		if e.admitNow.Load() {
			wait = 0 // a run finished here: a queued one may start
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-e.stepCtx.Done():
				t.Stop()
				return
			case <-e.timerWake:
				t.Stop()
				continue
			case <-t.C:
			}
		}
		if e.isStopping() {
			return
		}
		e.admitDue(claiming)
		if claiming {
			claimed = e.claim() > 0
			continue
		}
		due, err := e.store.DueTimers(e.stepCtx, e.now(), 100)
		if err != nil {
			if e.stepCtx.Err() != nil {
				return
			}
			e.log.Error("due timers", "err", err)
			continue
		}
		woke := 0
		for _, t := range due {
			if e.mine.Contains(t.RunID) {
				e.schedule(t.RunID)
				woke++
			}
		}
		// Due wake-ups of other processes' runs only: not this loop's to
		// serve; look again at the next poll, not at once.
		claimed = woke > 0 || len(due) == 0
		if woke > 0 {
			// Give the drivers a moment to clear the timers they serve, so
			// the loop does not spin on the same due rows.
			select {
			case <-e.stepCtx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// wakeTimers tells the loop that a wake-up was added.
func (e *Engine) wakeTimers() {
	select {
	case e.timerWake <- struct{}{}:
	default:
	}
}

// wakeClaims tells the loop to claim ready runs at once (claiming only).
func (e *Engine) wakeClaims() {
	e.claimNow.Store(true)
	e.wakeTimers()
}

// startTimers starts the timer loop once.
func (e *Engine) startTimers(context.Context) {
	e.timerOnce.Do(func() { go e.timerLoop() })
}

// claim takes the leases of ready runs, as many as the engine has free
// driving slots (claimBatch at most), and drives them. It returns how many
// it claimed.
func (e *Engine) claim() int {
	e.mu.Lock()
	free := cap(e.sem) - len(e.active)
	e.mu.Unlock()
	if free <= 0 {
		return 0
	}
	// A few at a time: replicas woken by one notice take turns, so that
	// the first to ask does not take every ready run (it asks again at
	// once when it got a full handful).
	got, err := e.store.ClaimRuns(e.stepCtx, e.owner, e.now(), e.leaseTTL, store.ClaimFilter{Ready: true}, min(free, claimBatch))
	if err != nil {
		if e.stepCtx.Err() == nil {
			e.log.Error("claim ready runs", "err", err)
		}
		return 0
	}
	for _, l := range got {
		if l.TookOver {
			e.log.Info("took over a run whose driver stopped", "run_id", l.RunID, "owner", e.owner)
		}
		e.install(l)
		e.schedule(l.RunID)
	}
	if len(got) == claimBatch {
		e.wakeClaims()
	}
	return len(got)
}

package engine

import (
	"context"
	"time"
)

// The timer loop wakes runs whose durable wake-up (a sleep, a retry's
// backoff, a repeat's interval) is due. Waiting runs hold no goroutine and
// no connection: their wake-ups are rows in the store, and one loop per
// engine sleeps until the earliest one. Other processes may add wake-ups
// too, so the loop also looks again at least every timerPoll.
const timerPoll = 2 * time.Second

func (e *Engine) timerLoop() {
	defer close(e.timerDone)
	for {
		wait := timerPoll
		next, ok, err := e.store.NextTimer(e.stepCtx)
		if err == nil && ok {
			if d := next.WakeAt.Sub(e.now()); d < wait {
				wait = d
			}
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
		due, err := e.store.DueTimers(e.stepCtx, e.now(), 100)
		if err != nil {
			if e.stepCtx.Err() != nil {
				return
			}
			e.log.Error("due timers", "err", err)
			continue
		}
		for _, t := range due {
			e.schedule(t.RunID)
		}
		if len(due) > 0 {
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

// startTimers starts the timer loop once.
func (e *Engine) startTimers(context.Context) {
	e.timerOnce.Do(func() { go e.timerLoop() })
}

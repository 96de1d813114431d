package service

import (
	"context"
	"errors"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// Subscription is a stream of every run's events, opened before an action
// so that a Watch after it misses none of the events the action caused.
type Subscription struct {
	events <-chan engine.Event
	stop   func()
	// wanted are the runs a Watch on it follows: of the runs other
	// processes drive, only theirs are forwarded to this process for it.
	wanted sync.Map
}

// subscriptionBuffer is how many events a Subscription holds for a caller
// that has not read them yet; beyond it the oldest are lost (the newest,
// which carry the run's status, arrive). It is opened per tool call: a
// thousand events cost 120 KB each time.
const subscriptionBuffer = 256

// Subscribe opens a Subscription; Close it when done.
func (s *Service) Subscribe() *Subscription {
	sub := &Subscription{}
	sub.events, sub.stop = s.Engine.SubscribeWanting(subscriptionBuffer, func(runID string) bool {
		_, ok := sub.wanted.Load(runID)
		return ok
	})
	return sub
}

// Close ends the subscription.
func (sub *Subscription) Close() { sub.stop() }

// Watch waits like Wait — until the run stops running or timeout passes
// (<= 0: no limit) — and calls onEvent with each event of the run as it
// happens. With sub, events are read from it (those since it was opened
// included); without, from a subscription opened now. It returns the
// run's status.
func (s *Service) Watch(ctx context.Context, runID string, timeout time.Duration, sub *Subscription, onEvent func(engine.Event)) (string, error) {
	run, _, err := s.watchRun(ctx, runID, timeout, sub, onEvent)
	return run.Status, err
}

// AwaitBrief waits like Watch (timeout <= 0: not at all) and returns the
// run's brief view (GetRunBrief). When the wait ended because the run
// stopped running, the view is built from the row the wait read last
// instead of reading it again: a continue's result did read the run row
// three times in a row.
func (s *Service) AwaitBrief(ctx context.Context, runID string, timeout time.Duration, sub *Subscription, onEvent func(engine.Event)) (*RunView, error) {
	if timeout > 0 {
		run, stopped, err := s.watchRun(ctx, runID, timeout, sub, onEvent)
		if err != nil {
			return nil, err
		}
		if stopped {
			return s.briefOf(ctx, run), nil
		}
	}
	return s.GetRunBrief(ctx, runID)
}

// AwaitContinued is AwaitBrief right after a Continue of runID that
// returned res. When the commit that recorded the answer left the run
// waiting on the pause it opened (res.Settled), the view is built from
// what that commit wrote instead of reading it back: the same view, two
// reads fewer on every answer of a conversation.
func (s *Service) AwaitContinued(ctx context.Context, runID string, res engine.ContinueResult, timeout time.Duration, sub *Subscription, onEvent func(engine.Event)) (*RunView, error) {
	st := res.Settled
	if st == nil || st.Run.ID != runID {
		return s.AwaitBrief(ctx, runID, timeout, sub, onEvent)
	}
	if timeout > 0 && sub != nil {
		// As when a wait finds the run stopped: what is buffered.
		var seen int64
		catchUp(ctx, sub.events, runID, st.Run.EventSeq, &seen, deliverer(onEvent, &seen))
	}
	return s.settledBrief(ctx, st), nil
}

// settledBrief is briefOf for a run a commit just left waiting on one
// pause (engine.Settled): its own, as it has no children.
func (s *Service) settledBrief(ctx context.Context, st *engine.Settled) *RunView {
	v := s.summary(ctx, st.Run)
	v.Pause = s.ownPause(st.Run.ID, []store.Pause{st.Pause})
	return v
}

// ownPause is the first of the open pause rows of a run without children
// as the run shows it (its token signed), or nil.
func (s *Service) ownPause(runID string, rows []store.Pause) *engine.Pause {
	if ps, err := s.Engine.PausesOf(runID, rows); err == nil && len(ps) > 0 {
		return &ps[0]
	}
	return nil
}

// deliverer passes a run's events on to onEvent once each, in order;
// seen is the sequence number of the last one passed on.
func deliverer(onEvent func(engine.Event), seen *int64) func(engine.Event) {
	return func(ev engine.Event) {
		if ev.Seq != 0 && ev.Seq <= *seen {
			return // delivered already
		}
		if onEvent != nil {
			onEvent(ev)
		}
		if ev.Seq > *seen {
			*seen = ev.Seq
		}
	}
}

// watchRun is Watch returning the run's row as last read, and whether it
// was read after the run stopped running (false when the wait ran out:
// the row is then older than the wait).
func (s *Service) watchRun(ctx context.Context, runID string, timeout time.Duration, sub *Subscription, onEvent func(engine.Event)) (store.Run, bool, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if sub == nil {
		sub = &Subscription{}
		sub.events, sub.stop = s.Engine.Subscribe(runID)
		defer sub.Close()
	} else {
		sub.wanted.Store(runID, true)
	}
	events := sub.events
	tick := time.NewTicker(500 * time.Millisecond) // a driver in another process publishes nothing here
	defer tick.Stop()
	var seen int64 // the run's last event delivered to onEvent
	deliver := deliverer(onEvent, &seen)
	for {
		run, err := s.Store.GetRun(ctx, runID)
		if errors.Is(err, context.DeadlineExceeded) {
			return run, false, nil
		}
		if err != nil {
			return store.Run{}, false, runNotFound(runID, err)
		}
		if run.Status != store.StatusRunning && run.Status != store.StatusPending && run.Status != store.StatusQueued {
			catchUp(ctx, events, runID, run.EventSeq, &seen, deliver)
			return run, true, nil
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					return run, false, nil
				}
				return run, false, ctx.Err()
			case ev, ok := <-events:
				if !ok {
					events = nil // closed: poll
					break wait
				}
				if ev.RunID != runID {
					continue
				}
				deliver(ev)
				if ev.Status != store.StatusRunning && ev.Status != store.StatusPending && ev.Status != store.StatusQueued {
					break wait
				}
			case <-tick.C:
				break wait
			}
		}
	}
}

// catchUp delivers the events of a run that stopped running before Watch
// read them: those already buffered, then — when the subscription was live
// during the run's changes (it delivered some) — the last few, which the
// engine publishes just after committing, up to the run's last sequence
// number. It gives up after a short grace (the bus drops events for slow
// subscribers; the store has them).
func catchUp(ctx context.Context, events <-chan engine.Event, runID string, last int64, seen *int64, deliver func(engine.Event)) {
	if events == nil {
		return
	}
	grace := time.NewTimer(time.Second)
	defer grace.Stop()
	for *seen < last {
		if *seen == 0 {
			// Nothing delivered yet: take what is buffered, do not wait for
			// events that may predate the subscription.
			select {
			case ev, ok := <-events:
				if !ok {
					return
				}
				if ev.RunID == runID && ev.Seq > 0 {
					deliver(ev)
				}
				continue
			default:
				return
			}
		}
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev.RunID == runID && ev.Seq > 0 {
				deliver(ev)
			}
		case <-grace.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// ContinueFromAgent answers a pause with a value an agent passed on: a
// secret question accepts only an environment reference ("$NAME"), never
// a value in clear (a language model has seen it).
func (s *Service) ContinueFromAgent(ctx context.Context, token string, value any) (engine.ContinueResult, error) {
	return s.Engine.ContinueWith(ctx, token, value, engine.ContinueOptions{ViaAgent: true})
}

// RootRun returns the top-level run of a run: itself, or the parent of
// its parent … for sub-workflow runs.
func (s *Service) RootRun(ctx context.Context, runID string) (string, error) {
	id := runID
	for range 16 { // nesting is bounded well below this
		run, err := s.Store.GetRun(ctx, id)
		if err != nil {
			return "", runNotFound(id, err)
		}
		if run.ParentID == "" {
			return id, nil
		}
		id = run.ParentID
	}
	return id, nil
}

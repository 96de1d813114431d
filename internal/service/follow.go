package service

import (
	"context"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// followPoll is how often Follow reads a run's new events from the store
// when no event of this process's bus woke it: the run may be driven by
// another process, whose bus this one does not hear.
const followPoll = 300 * time.Millisecond

// followBatch bounds one read of a run's events.
const followBatch = 500

// Follow calls onEvent with each event of the run after sequence number
// after, in order, as the run records them — whichever process drives it —
// until the run stops running: it ended or waits on a question (a run an
// operator paused is followed on until it resumes). It returns the run's
// brief view (GetRunBrief) from then. This process's bus wakes it at once;
// otherwise it reads the store every followPoll.
func (s *Service) Follow(ctx context.Context, runID string, after int64, onEvent func(store.Event)) (*RunView, error) {
	wake, stop := s.Engine.Subscribe(runID)
	defer stop()
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	for {
		// The status first, then the events: every event up to that
		// status is delivered before Follow returns.
		v, err := s.GetRunBrief(ctx, runID)
		if err != nil {
			return nil, err
		}
		for {
			evs, err := s.Store.Events(ctx, runID, after, followBatch)
			if err != nil {
				return nil, err
			}
			for _, e := range evs {
				onEvent(e)
				after = e.Seq
			}
			if len(evs) < followBatch {
				break
			}
		}
		switch v.Status {
		case store.StatusRunning, store.StatusPending, store.StatusPaused, store.StatusQueued:
		default:
			return v, nil
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case _, ok := <-wake:
			if !ok {
				wake = nil // closed: the poll goes on
			}
		case <-tick.C:
		}
	}
}

// StepStatuses is each step's status in a run's view, by step id, as a
// drawing of its workflow colours them: of a step's records (visits,
// foreach items) those of its last visit count, and among them the one
// that says most — running, waiting, failed, canceled, pending, succeeded,
// skipped, in that order.
func StepStatuses(v *RunView) map[string]string {
	rank := map[string]int{store.StatusRunning: 7, store.StatusWaiting: 6, store.StatusFailed: 5, store.StatusCanceled: 4,
		store.StatusPending: 3, store.StatusSucceeded: 2, "skipped": 1}
	type best struct {
		visit  int
		status string
	}
	by := map[string]best{}
	for _, st := range v.Steps {
		visit := max(st.Visit, 1)
		b, seen := by[st.ID]
		if !seen || visit > b.visit || visit == b.visit && rank[st.Status] > rank[b.status] {
			by[st.ID] = best{visit, st.Status}
		}
	}
	out := make(map[string]string, len(by))
	for id, b := range by {
		out[id] = b.status
	}
	return out
}

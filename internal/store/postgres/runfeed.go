package postgres

import (
	"context"

	"stepwise.dev/stepwise/internal/store"
)

// Run notices: a commit (or CreateRun) that records events or changes a
// run's status tells the other processes on the database, in its own
// transaction (one more statement in the batch it sends anyway, delivered
// by PostgreSQL when the transaction commits, dropped with it when it
// rolls back): their engines wake at once to claim a run made ready, to
// end a wait, to forward a run's events to their subscribers
// (engine.RunFeed). PostgreSQL folds identical notices of one transaction
// into one.

// The topics of run notices on the runs' feed: readyTopic for a run
// created or set pending or running (a claimant may have work), runTopic
// for any other change told.
const (
	runTopic   = "run"
	readyTopic = "ready"
)

// sqlNotify sends a notice: channel $1, payload $2.
const sqlNotify = `SELECT pg_notify($1, $2)`

// noticeOf is the topic a commit is told to the other processes under
// ("": not told): it records events or changes the run's status.
func noticeOf(c store.Commit) string {
	switch {
	case c.Run.Status == store.StatusPending || c.Run.Status == store.StatusRunning:
		return readyTopic
	case len(c.Events) > 0 || c.Run.Status != "":
		return runTopic
	}
	return ""
}

// runNotice returns sqlNotify's arguments for a change of runID under
// topic, or nil when topic is "".
func (s *Store) runNotice(runID, topic string) []any {
	if topic == "" || s.runs == nil {
		return nil
	}
	return []any{s.runs.channel, s.runs.origin + feedSep + topic + feedSep + runID}
}

// ListenRuns calls fn with the id of every run another process on the
// database changed, and whether the change may have made it ready to
// drive, until stop is called; fn("", true) says that notices may have
// been lost (the connection was lost and is back): anything may have
// changed.
func (s *Store) ListenRuns(ctx context.Context, fn func(runID string, ready bool)) (stop func(), err error) {
	return s.runs.Listen(ctx, func(topic, name string) {
		switch topic {
		case runTopic:
			fn(name, false)
		case readyTopic:
			fn(name, true)
		case "":
			fn("", true)
		}
	})
}

package postgres

import (
	"context"

	"stepwise.dev/stepwise/store"
)

// Run notices: a commit (or CreateRun) that records events or changes a
// run's status tells the other processes on the database, in its own
// transaction (one more statement in the batch it sends anyway, delivered
// by PostgreSQL when the transaction commits, dropped with it when it
// rolls back): their engines wake at once to claim a run made ready, to
// end a wait, to forward a run's events to their subscribers
// (engine.RunFeed). PostgreSQL folds identical notices of one transaction
// into one.

// runTopic is the topic of run notices on the runs' feed.
const runTopic = "run"

// sqlNotify sends a notice: channel $1, payload $2.
const sqlNotify = `SELECT pg_notify($1, $2)`

// noticeOf reports whether a commit is told to the other processes: it
// records events or changes the run's status.
func noticeOf(c store.Commit) bool { return len(c.Events) > 0 || c.Run.Status != "" }

// runNotice returns sqlNotify's arguments for a change of runID, or nil
// when told is false.
func (s *Store) runNotice(runID string, told bool) []any {
	if !told || s.runs == nil {
		return nil
	}
	return []any{s.runs.channel, s.runs.origin + feedSep + runTopic + feedSep + runID}
}

// ListenRuns calls fn with the id of every run another process on the
// database changed, until stop is called; fn("") says that notices may
// have been lost (the connection was lost and is back): anything may have
// changed.
func (s *Store) ListenRuns(ctx context.Context, fn func(runID string)) (stop func(), err error) {
	return s.runs.Listen(ctx, func(topic, name string) {
		switch topic {
		case runTopic:
			fn(name)
		case "":
			fn("")
		}
	})
}

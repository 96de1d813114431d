package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"stepwise.dev/stepwise/internal/store"
)

// Commit writes one step's changes atomically. It checks the run's
// revision first and, when a pause is to be closed, that the pause is still
// open; either failing writes nothing. Concurrent commits share one
// transaction (see group.go); each returns once that transaction committed.
func (s *Store) Commit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	var res store.CommitResult
	now := time.Now()
	if err := store.CheckCommitLease(c); err != nil {
		return res, fmt.Errorf("commit run %s: %w", c.RunID, err)
	}
	err := s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res = store.CommitResult{}
		if c.Lease != nil {
			if err := checkLease(ctx, tx, c.RunID, c.Lease); err != nil {
				return err
			}
		}
		if a := c.Acquire; a != nil {
			l := store.Lease{RunID: c.RunID, Owner: a.Owner, Expires: a.Now.Add(a.TTL).UTC()}
			var err error
			if l.Epoch, l.TookOver, err = acquireIn(ctx, tx, c.RunID, a.Owner, a.Now, l.Expires); err != nil {
				return err
			}
			res.Lease = l
		}
		if c.Release {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE id = ?`, c.RunID); err != nil {
				return err
			}
		}
		var rev, eventSeq int64
		var err error
		u := c.Run
		stepOnly := len(u.Inputs) == 0 && len(u.Outputs) == 0 && len(u.Error) == 0 && !u.Reopen && u.FinishedAt.IsZero()
		if stepOnly && u.Status != "" {
			// A new status alone: set apart, so that an unchanged one
			// leaves the indexes alone (see sqlSetStatus). A wrong rev
			// changes nothing here and is found just below.
			if _, err := s.exec(ctx, tx, sqlSetStatus, u.Status, c.RunID, c.Rev, u.Status); err != nil {
				return err
			}
		}
		done := false
		if stepOnly && c.EventSeq > 0 {
			var r sql.Result
			if r, err = s.exec(ctx, tx, sqlStepRunAt, nanos(now), blob(u.State), len(c.Events), c.RunID, c.Rev, c.EventSeq); err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				rev, eventSeq, done = c.Rev+1, c.EventSeq, true
			}
		}
		if !done {
			var row *sql.Row
			if stepOnly {
				row = s.queryRow(ctx, tx, sqlStepRun, nanos(now), blob(u.State), len(c.Events), c.RunID, c.Rev)
			} else {
				row = s.queryRow(ctx, tx, sqlAdvanceRun,
					nanos(now), nullString(u.Status), blob(u.State), blob(u.Inputs),
					u.Reopen, blob(u.Outputs), u.Reopen, blob(u.Error), u.Reopen, nullable(u.FinishedAt),
					len(c.Events), c.RunID, c.Rev)
			}
			err = row.Scan(&rev, &eventSeq)
			eventSeq -= int64(len(c.Events)) // the sequence before this commit's events
		}
		if errors.Is(err, sql.ErrNoRows) {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, c.RunID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return store.ErrNotFound
			}
			return store.ErrConflict
		}
		if err != nil {
			return err
		}
		res.Rev = rev
		if p := c.ClosePause; p != nil {
			at := p.At
			if at.IsZero() {
				at = now
			}
			r, err := s.exec(ctx, tx, sqlClosePause,
				p.Status, blob(p.Answer), nanos(at), c.RunID, p.Seq)
			if err != nil {
				return fmt.Errorf("close pause %d: %w", p.Seq, err)
			}
			if n, _ := r.RowsAffected(); n == 0 {
				var st string
				err := tx.QueryRowContext(ctx, `SELECT status FROM pauses WHERE run_id = ? AND seq = ?`, c.RunID, p.Seq).Scan(&st)
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("pause %d: %w", p.Seq, store.ErrNotFound)
				}
				return store.ErrPauseClosed
			}
		}
		for _, seq := range c.CancelPauses {
			if _, err := s.exec(ctx, tx, sqlClosePause, store.PauseCanceled, nil, nanos(now), c.RunID, seq); err != nil {
				return fmt.Errorf("cancel pause %d: %w", seq, err)
			}
		}
		if a := c.Answer; a != nil {
			at := a.At
			if at.IsZero() {
				at = now
			}
			if err := s.queryRow(ctx, tx, sqlInsertAnswer,
				c.RunID, a.PauseSeq, a.StepKey, blob(a.Value), nanos(at)).Scan(&res.AnswerID); err != nil {
				return fmt.Errorf("record answer: %w", err)
			}
		}
		if err := s.upsertSteps(ctx, tx, c.RunID, rev, c.Steps); err != nil {
			return err
		}
		for _, a := range c.Attempts {
			if _, err := s.exec(ctx, tx, sqlUpsertAttempt,
				c.RunID, a.Key, a.Visit, a.Attempt, a.Status, nullString(a.Error), nanos(a.StartedAt), nanos(a.FinishedAt)); err != nil {
				return fmt.Errorf("record attempt %s/%d: %w", a.Key, a.Attempt, err)
			}
		}
		if p := c.OpenPause; p != nil {
			created := p.CreatedAt
			if created.IsZero() {
				created = now
			}
			if _, err := s.exec(ctx, tx, sqlInsertPause,
				c.RunID, p.Seq, p.StepKey, p.Visit, p.Kind, p.Request, nanos(p.ExpiresAt), nanos(created)); err != nil {
				if c := constraint(err); c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
					return fmt.Errorf("open pause %d: %w", p.Seq, store.ErrExists)
				}
				return fmt.Errorf("open pause %d: %w", p.Seq, err)
			}
		}
		for _, key := range c.ClearTimers {
			if _, err := tx.ExecContext(ctx, `DELETE FROM timers WHERE run_id = ? AND key = ?`, c.RunID, key); err != nil {
				return fmt.Errorf("clear timer %s: %w", key, err)
			}
		}
		for _, t := range c.SetTimers {
			if _, err := tx.ExecContext(ctx, `INSERT INTO timers (run_id, key, wake_at) VALUES (?, ?, ?) ON CONFLICT (run_id, key) DO UPDATE SET wake_at = excluded.wake_at`,
				c.RunID, t.Key, nanos(t.WakeAt)); err != nil {
				return fmt.Errorf("set timer %s: %w", t.Key, err)
			}
		}
		seqs, err := s.insertEvents(ctx, tx, c.RunID, eventSeq, c.Events, now)
		res.EventSeqs = seqs
		return err
	})
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("commit run %s: %w", c.RunID, unavailable(err))
	}
	return res, nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/store"
)

// sqlAdvanceRun moves a run to its next revision, checking the current
// one and, when $12 is not null, that the run's lease is $12's at epoch
// $13 (the commit's fence: the row's lock orders it with any acquisition);
// $14 releases the lease. Nil arguments leave their columns as they are.
const sqlAdvanceRun = `UPDATE runs SET rev = rev + 1, updated_at = $1,
		status = COALESCE($2, status), state = COALESCE($3, state), inputs = COALESCE($4, inputs),
		outputs = CASE WHEN $5 THEN NULL ELSE COALESCE($6, outputs) END,
		error = CASE WHEN $5 THEN NULL ELSE COALESCE($7, error) END,
		finished_at = CASE WHEN $5 THEN NULL ELSE COALESCE($8, finished_at) END,
		event_seq = event_seq + $9,
		lease_owner = CASE WHEN $14 THEN NULL ELSE lease_owner END,
		lease_expires = CASE WHEN $14 THEN 0 ELSE lease_expires END
	WHERE id = $10 AND rev = $11 AND ($12::text IS NULL OR (lease_owner = $12 AND lease_epoch = $13)) RETURNING rev, event_seq`

// sqlAdvanceRunAt is sqlAdvanceRun for a caller that says what the run's
// event sequence is (store.Commit.EventSeq): the events are numbered from
// it before the update runs, which the update checks.
const sqlAdvanceRunAt = `UPDATE runs SET rev = rev + 1, updated_at = $1,
		status = COALESCE($2, status), state = COALESCE($3, state), inputs = COALESCE($4, inputs),
		outputs = CASE WHEN $5 THEN NULL ELSE COALESCE($6, outputs) END,
		error = CASE WHEN $5 THEN NULL ELSE COALESCE($7, error) END,
		finished_at = CASE WHEN $5 THEN NULL ELSE COALESCE($8, finished_at) END,
		event_seq = event_seq + $9,
		lease_owner = CASE WHEN $15 THEN NULL ELSE lease_owner END,
		lease_expires = CASE WHEN $15 THEN 0 ELSE lease_expires END
	WHERE id = $10 AND rev = $11 AND event_seq = $12 AND ($13::text IS NULL OR (lease_owner = $13 AND lease_epoch = $14)) RETURNING rev`

// sqlAdvanceRunOrFail is sqlAdvanceRunAt that fails (division by zero,
// codeNotAdvanced) when it changes no row: in a commit sent whole with its
// COMMIT (commitOneTrip), the error is what keeps the statements after it,
// and the COMMIT, from running.
const sqlAdvanceRunOrFail = `WITH u AS (` + sqlAdvanceRunAt + `)
	SELECT max(rev) + 0 * (1 / count(*)) FROM u`

// codeNotAdvanced is the SQLSTATE of sqlAdvanceRunOrFail's failure.
const codeNotAdvanced = "22012"

// The other statements of a commit.
const (
	sqlClosePause    = `UPDATE pauses SET status = $1, answer = $2, answered_at = $3 WHERE run_id = $4 AND seq = $5 AND status = 'open'`
	sqlPauseStatus   = `SELECT status FROM pauses WHERE run_id = $1 AND seq = $2`
	sqlCancelPauses  = `UPDATE pauses SET status = 'canceled', answer = NULL, answered_at = $1 WHERE run_id = $2 AND seq = ANY($3) AND status = 'open'`
	sqlInsertAnswer  = `INSERT INTO answers (run_id, pause_seq, step_key, value, at) VALUES ($1, $2, $3, $4, $5) RETURNING id`
	sqlUpsertAttempt = `INSERT INTO attempts (run_id, key, visit, attempt, status, error, started_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (run_id, key, visit, attempt) DO UPDATE SET status = excluded.status, error = excluded.error, started_at = excluded.started_at, finished_at = excluded.finished_at`
	sqlInsertPause = `INSERT INTO pauses (run_id, seq, step_key, visit, kind, request, status, expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, 'open', $7, $8)`
	sqlClearTimers = `DELETE FROM timers WHERE run_id = $1 AND key = ANY($2)`
	sqlSetTimer    = `INSERT INTO timers (run_id, key, wake_at) VALUES ($1, $2, $3) ON CONFLICT (run_id, key) DO UPDATE SET wake_at = excluded.wake_at`
)

// Commit writes one step's changes atomically. It checks the run's
// revision first and, when a pause is to be closed, that the pause is still
// open; either failing writes nothing. Concurrent commits share one
// transaction (see group.go); each returns once that transaction committed.
//
// A commit that says what the run's event sequence is (Commit.EventSeq, as
// the engine's do) is one round trip: a savepoint, the run's update
// checking revision and sequence, and every other statement, pipelined in
// one pgx.Batch. When the update finds another sequence (or revision), the
// savepoint undoes the rest and the commit takes the other way: the run's
// update first, whose result numbers the events, then the rest.
func (s *Store) Commit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	var res store.CommitResult
	now := time.Now()
	if err := store.CheckCommitLease(c); err != nil {
		return res, fmt.Errorf("commit run %s: %w", c.RunID, err)
	}
	err := s.groupTx(ctx, c.RunID, func(ctx context.Context, tx dbtx) error {
		// The fence is checked by the run's update itself (fence), unless
		// the commit also acquires: then before, as AcquireLease would.
		var fence *store.LeaseRef
		switch {
		case c.Lease != nil && c.Acquire != nil:
			if err := checkLease(ctx, tx, c.RunID, c.Lease); err != nil {
				return err
			}
		case c.Lease != nil:
			fence = c.Lease
		}
		owner, epoch := fenceArgs(fence)
		var lease store.Lease
		if a := c.Acquire; a != nil {
			lease = store.Lease{RunID: c.RunID, Owner: a.Owner, Expires: a.Now.Add(a.TTL).UTC()}
			var err error
			if lease.Epoch, lease.TookOver, err = acquireIn(ctx, tx, c.RunID, a.Owner, a.Now, lease.Expires); err != nil {
				return err
			}
		}
		defer func() { res.Lease = lease }()
		if c.EventSeq > 0 {
			done, err := commitAt(ctx, tx, c, now, &res, s.runNotice(c.RunID, noticeOf(c)), owner, epoch)
			if done || err != nil {
				return err
			}
		}
		u := c.Run
		var rev, eventSeq int64
		err := tx.QueryRow(ctx, sqlAdvanceRun,
			nanos(now), nullString(u.Status), blob(u.State), blob(u.Inputs),
			u.Reopen, blob(u.Outputs), blob(u.Error), nullable(u.FinishedAt),
			len(c.Events), c.RunID, c.Rev, owner, epoch, c.Release).Scan(&rev, &eventSeq)
		if errors.Is(err, pgx.ErrNoRows) {
			return whyNotAdvanced(ctx, tx, c.RunID, fence)
		}
		if err != nil {
			return err
		}
		eventSeq -= int64(len(c.Events)) // the sequence before this commit's events
		res = store.CommitResult{Rev: rev}
		b := &pgx.Batch{}
		plan := queueRest(b, c, rev, eventSeq, now, s.runNotice(c.RunID, noticeOf(c)))
		if b.Len() == 0 {
			return nil
		}
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		if err := readRest(br, c, plan, &res); err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("commit run %s: %w", c.RunID, unavailable(err))
	}
	return res, nil
}

// commitAt is Commit in one round trip, numbering the events from
// c.EventSeq. It reports false, having written nothing, when the run is
// not at c.Rev and c.EventSeq.
func commitAt(ctx context.Context, tx dbtx, c store.Commit, now time.Time, res *store.CommitResult, notice []any, owner *string, epoch int64) (bool, error) {
	if lt, ok := tx.(*lazyTx); ok && lt.lone && !lt.begun && c.ClosePause == nil && c.Acquire == nil {
		return commitOneTrip(ctx, lt, c, now, res, notice, owner, epoch)
	}
	u := c.Run
	rev := c.Rev + 1
	b := &pgx.Batch{}
	b.Queue(`SAVEPOINT at`)
	b.Queue(sqlAdvanceRunAt,
		nanos(now), nullString(u.Status), blob(u.State), blob(u.Inputs),
		u.Reopen, blob(u.Outputs), blob(u.Error), nullable(u.FinishedAt),
		len(c.Events), c.RunID, c.Rev, c.EventSeq, owner, epoch, c.Release)
	plan := queueRest(b, c, rev, c.EventSeq, now, notice)
	br := tx.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return false, err
	}
	var got int64
	err := br.QueryRow().Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		// Not at this revision or sequence: what the batch did after the
		// update (it may have failed on an event's number) is undone.
		_ = br.Close()
		if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT at`); err != nil {
			return false, err
		}
		return false, nil
	}
	if err != nil {
		_ = br.Close()
		return false, err
	}
	*res = store.CommitResult{Rev: got}
	if err := readRest(br, c, plan, res); err != nil {
		_ = br.Close()
		return false, err
	}
	return true, br.Close()
}

// commitOneTrip is commitAt for a lone write (runLone): BEGIN, the run's
// update, the rest and COMMIT in one batch, one round trip. Only a commit
// whose every check fails as an SQL error may go this way (the update's
// check does, sqlAdvanceRunOrFail; a pause's close is checked by a count,
// so a commit closing one does not): a failure then keeps the COMMIT from
// running, and the transaction is rolled back. When the run is not at
// c.Rev and c.EventSeq (or no longer leased to the fence) it reports
// false, having written nothing, and the caller goes on in a new
// transaction.
func commitOneTrip(ctx context.Context, lt *lazyTx, c store.Commit, now time.Time, res *store.CommitResult, notice []any, owner *string, epoch int64) (bool, error) {
	u := c.Run
	b := &pgx.Batch{}
	b.Queue(sqlAdvanceRunOrFail,
		nanos(now), nullString(u.Status), blob(u.State), blob(u.Inputs),
		u.Reopen, blob(u.Outputs), blob(u.Error), nullable(u.FinishedAt),
		len(c.Events), c.RunID, c.Rev, c.EventSeq, owner, epoch, c.Release)
	plan := queueRest(b, c, c.Rev+1, c.EventSeq, now, notice)
	b.Queue(`COMMIT`)
	br := lt.SendBatch(ctx, b)
	if lt.err != nil {
		_ = br.Close()
		return false, lt.err
	}
	var got int64
	if err := br.QueryRow().Scan(&got); err != nil {
		_ = br.Close()
		if sqlState(err) != codeNotAdvanced {
			return false, err
		}
		// Nothing after the update ran: roll back, and let the caller
		// begin again.
		if _, err := lt.q.Exec(ctx, `ROLLBACK`); err != nil {
			return false, err
		}
		lt.begun = false
		return false, nil
	}
	*res = store.CommitResult{Rev: got}
	if err := readRest(br, c, plan, res); err != nil {
		_ = br.Close()
		return false, err
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		_ = br.Close()
		return false, err
	}
	lt.committed = true
	return true, br.Close()
}

// restPlan is what queueRest queued that readRest must read.
type restPlan struct {
	steps, events int
	seqs          []int64
	notice        bool
}

// queueRest queues every statement of c but the run's update, the run
// being at revision rev (after the update) and its events numbered after
// eventSeq.
//
// notice, when set, is the arguments of sqlNotify: the run's change told
// to the other processes on the database when the transaction commits.
func queueRest(b *pgx.Batch, c store.Commit, rev, eventSeq int64, now time.Time, notice []any) restPlan {
	var plan restPlan
	if p := c.ClosePause; p != nil {
		at := p.At
		if at.IsZero() {
			at = now
		}
		b.Queue(sqlClosePause, p.Status, blob(p.Answer), nanos(at), c.RunID, p.Seq)
		b.Queue(sqlPauseStatus, c.RunID, p.Seq)
	}
	if len(c.CancelPauses) > 0 {
		b.Queue(sqlCancelPauses, nanos(now), c.RunID, c.CancelPauses)
	}
	if a := c.Answer; a != nil {
		at := a.At
		if at.IsZero() {
			at = now
		}
		b.Queue(sqlInsertAnswer, c.RunID, a.PauseSeq, a.StepKey, blob(a.Value), nanos(at))
	}
	plan.steps = queueSteps(b, c.RunID, rev, c.Steps)
	for _, a := range c.Attempts {
		b.Queue(sqlUpsertAttempt, c.RunID, a.Key, a.Visit, a.Attempt, a.Status, nullString(a.Error), nanos(a.StartedAt), nanos(a.FinishedAt))
	}
	if p := c.OpenPause; p != nil {
		created := p.CreatedAt
		if created.IsZero() {
			created = now
		}
		request := []byte(p.Request)
		if request == nil {
			request = []byte{}
		}
		b.Queue(sqlInsertPause, c.RunID, p.Seq, p.StepKey, p.Visit, p.Kind, request, nanos(p.ExpiresAt), nanos(created))
	}
	if len(c.ClearTimers) > 0 {
		b.Queue(sqlClearTimers, c.RunID, c.ClearTimers)
	}
	for _, t := range c.SetTimers {
		b.Queue(sqlSetTimer, c.RunID, t.Key, nanos(t.WakeAt))
	}
	plan.seqs, plan.events = queueEvents(b, c.RunID, eventSeq, c.Events, now)
	if notice != nil {
		b.Queue(sqlNotify, notice...)
		plan.notice = true
	}
	return plan
}

// readRest reads the results of what queueRest queued, in order, turning
// the first failure into the commit's error, and records the answer's id
// and the events' numbers in res.
func readRest(br pgx.BatchResults, c store.Commit, plan restPlan, res *store.CommitResult) error {
	if p := c.ClosePause; p != nil {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("close pause %d: %w", p.Seq, err)
		}
		var status string
		err = br.QueryRow().Scan(&status)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("pause %d: %w", p.Seq, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("close pause %d: %w", p.Seq, err)
		}
		if tag.RowsAffected() == 0 {
			return store.ErrPauseClosed
		}
	}
	if len(c.CancelPauses) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("cancel pauses %v: %w", c.CancelPauses, err)
		}
	}
	if c.Answer != nil {
		if err := br.QueryRow().Scan(&res.AnswerID); err != nil {
			return fmt.Errorf("record answer: %w", err)
		}
	}
	for range plan.steps {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("record steps: %w", err)
		}
	}
	for _, a := range c.Attempts {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("record attempt %s/%d: %w", a.Key, a.Attempt, err)
		}
	}
	if p := c.OpenPause; p != nil {
		if _, err := br.Exec(); err != nil {
			if sqlState(err) == codeUniqueViolation {
				return fmt.Errorf("open pause %d: %w", p.Seq, store.ErrExists)
			}
			return fmt.Errorf("open pause %d: %w", p.Seq, err)
		}
	}
	if len(c.ClearTimers) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("clear timers: %w", err)
		}
	}
	for _, t := range c.SetTimers {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("set timer %s: %w", t.Key, err)
		}
	}
	for range plan.events {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("append events: %w", err)
		}
	}
	if plan.notice {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
	}
	res.EventSeqs = plan.seqs
	return nil
}

// fenceArgs are the fence's arguments of the run's update (nil owner: not
// fenced).
func fenceArgs(ref *store.LeaseRef) (*string, int64) {
	if ref == nil {
		return nil, 0
	}
	return &ref.Owner, ref.Epoch
}

// whyNotAdvanced says why a run's update changed no row: no such run
// (ErrNotFound), its lease is no longer the fence's (ErrLeaseLost), or it
// is at another revision (ErrConflict).
func whyNotAdvanced(ctx context.Context, tx dbtx, runID string, fence *store.LeaseRef) error {
	var owner *string
	var epoch int64
	err := tx.QueryRow(ctx, `SELECT lease_owner, lease_epoch FROM runs WHERE id = $1`, runID).Scan(&owner, &epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	if fence != nil && (owner == nil || *owner != fence.Owner || epoch != fence.Epoch) {
		return store.ErrLeaseLost
	}
	return store.ErrConflict
}

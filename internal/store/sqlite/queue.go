package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// The statuses that hold a queue's slot (store.ActiveStatuses), as SQL.
const activeIn = `status IN ('pending', 'running', 'waiting', 'paused')`

// The reads of an admission: the queues with queued runs, a queue's limit
// (its oldest queued run's), its active runs and its oldest queued runs.
const (
	sqlQueues      = `SELECT DISTINCT workflow, concurrency_key FROM runs WHERE status = 'queued' AND concurrency_key IS NOT NULL LIMIT ?`
	sqlQueueLimit  = `SELECT concurrency_limit FROM runs WHERE workflow = ? AND concurrency_key = ? AND status = 'queued' ORDER BY created_at, id LIMIT 1`
	sqlQueueActive = `SELECT count(*) FROM runs WHERE workflow = ? AND concurrency_key = ? AND ` + activeIn
	sqlQueueHead   = `SELECT id, lease_owner FROM runs WHERE workflow = ? AND concurrency_key = ? AND status = 'queued' ORDER BY created_at, id LIMIT ?`
)

// AdmitQueued starts the oldest queued runs of queues with free slots (see
// store/queue.go). Each queue is admitted in its own write transaction:
// SQLite has one writer at a time, so the count of active runs and the
// runs admitted cannot change in between, in this process or another.
func (s *Store) AdmitQueued(ctx context.Context, r store.AdmitRequest) ([]store.Admitted, error) {
	if err := store.CheckAdmit(r); err != nil {
		return nil, err
	}
	type queue struct{ workflow, key string }
	queues := []queue{{r.Workflow, r.Key}}
	if r.All {
		rows, err := s.r.QueryContext(ctx, sqlQueues, store.MaxQueues)
		if err != nil {
			return nil, fmt.Errorf("admit queued runs: %w", unavailable(err))
		}
		queues = queues[:0]
		for rows.Next() {
			var q queue
			if err := rows.Scan(&q.workflow, &q.key); err != nil {
				rows.Close()
				return nil, fmt.Errorf("admit queued runs: %w", err)
			}
			queues = append(queues, q)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("admit queued runs: %w", unavailable(err))
		}
	}
	expires := r.Now.Add(r.TTL).UTC()
	var out []store.Admitted
	for _, q := range queues {
		var got []store.Admitted
		err := s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
			got = got[:0]
			var limit, active int
			err := tx.QueryRowContext(ctx, sqlQueueLimit,
				q.workflow, q.key).Scan(&limit)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, sqlQueueActive,
				q.workflow, q.key).Scan(&active); err != nil {
				return err
			}
			if active >= limit {
				return nil
			}
			rows, err := tx.QueryContext(ctx, sqlQueueHead,
				q.workflow, q.key, limit-active)
			if err != nil {
				return err
			}
			for rows.Next() {
				l := store.Admitted{Lease: store.Lease{Owner: r.Owner, Expires: expires}}
				var prev sql.NullString
				if err := rows.Scan(&l.RunID, &prev); err != nil {
					rows.Close()
					return err
				}
				l.TookOver = prev.Valid && prev.String != r.Owner
				got = append(got, l)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			now := time.Now()
			for i := range got {
				var seq int64
				err := tx.QueryRowContext(ctx, `UPDATE runs SET status = 'running', rev = rev + 1, event_seq = event_seq + 1, updated_at = ?,
					lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires = ? WHERE id = ? RETURNING event_seq, lease_epoch`,
					nanos(now), r.Owner, nanos(expires), got[i].RunID).Scan(&seq, &got[i].Epoch)
				if err != nil {
					return err
				}
				got[i].EventSeq = seq
				if _, err := s.insertEvents(ctx, tx, got[i].RunID, seq-1, []store.Event{{Type: store.EventRunStarted, At: r.Now}}, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("admit queued runs of %s: %w", q.workflow, unavailable(err))
		}
		out = append(out, got...)
	}
	return out, nil
}

// QueuePosition counts the runs queued before a queued run in its queue.
func (s *Store) QueuePosition(ctx context.Context, runID string) (int, error) {
	var n int
	err := s.readQueryRow(ctx, `SELECT (SELECT count(*) FROM runs AS r
		WHERE r.workflow = q.workflow AND r.concurrency_key = q.concurrency_key AND r.status = 'queued'
		AND (r.created_at < q.created_at OR (r.created_at = q.created_at AND r.id < q.id)))
		FROM runs AS q WHERE q.id = ? AND q.status = 'queued'`, runID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("queue position of %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("queue position of %s: %w", runID, unavailable(err))
	}
	return n, nil
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/store"
)

// The statuses that hold a queue's slot (store.ActiveStatuses), as SQL.
const activeIn = `status IN ('pending', 'running', 'waiting', 'paused')`

// AdmitQueued starts the oldest queued runs of queues with free slots (see
// store/queue.go). Each queue is admitted in its own transaction (not a
// shared group commit) that first takes a transaction-level advisory lock
// named by the queue: admissions to one queue are serialized across every
// process of the database, and each statement after the lock sees the
// admissions committed before it (read committed).
func (s *Store) AdmitQueued(ctx context.Context, r store.AdmitRequest) ([]store.Admitted, error) {
	if err := store.CheckAdmit(r); err != nil {
		return nil, err
	}
	type queue struct{ workflow, key string }
	queues := []queue{{r.Workflow, r.Key}}
	if r.All {
		rows, err := s.pool.Query(ctx, `SELECT DISTINCT workflow, concurrency_key FROM runs WHERE status = 'queued' AND concurrency_key IS NOT NULL LIMIT $1`, store.MaxQueues)
		if err != nil {
			return nil, fmt.Errorf("admit queued runs: %w", unavailable(err))
		}
		queues, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (queue, error) {
			var q queue
			err := row.Scan(&q.workflow, &q.key)
			return q, err
		})
		if err != nil {
			return nil, fmt.Errorf("admit queued runs: %w", unavailable(err))
		}
	}
	expires := r.Now.Add(r.TTL).UTC()
	var out []store.Admitted
	for _, q := range queues {
		var got []store.Admitted
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			got = got[:0]
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "stepwise.queue\x1f"+q.workflow+"\x1f"+q.key); err != nil {
				return err
			}
			var limit, active int32
			err := tx.QueryRow(ctx, `SELECT concurrency_limit FROM runs WHERE workflow = $1 AND concurrency_key = $2 AND status = 'queued' ORDER BY created_at, id LIMIT 1`,
				q.workflow, q.key).Scan(&limit)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM runs WHERE workflow = $1 AND concurrency_key = $2 AND `+activeIn,
				q.workflow, q.key).Scan(&active); err != nil {
				return err
			}
			if active >= limit {
				return nil
			}
			// FOR UPDATE: a concurrent commit of a candidate (a cancel)
			// is waited for, and a run it took out of the queue skipped.
			rows, err := tx.Query(ctx, `SELECT id, lease_owner FROM runs WHERE workflow = $1 AND concurrency_key = $2 AND status = 'queued' ORDER BY created_at, id LIMIT $3 FOR UPDATE`,
				q.workflow, q.key, limit-active)
			if err != nil {
				return err
			}
			got, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Admitted, error) {
				l := store.Admitted{Lease: store.Lease{Owner: r.Owner, Expires: expires}}
				var prev *string
				err := row.Scan(&l.RunID, &prev)
				l.TookOver = prev != nil && *prev != r.Owner
				return l, err
			})
			if err != nil {
				return err
			}
			now := time.Now()
			for i := range got {
				var seq int64
				err := tx.QueryRow(ctx, `UPDATE runs SET status = 'running', rev = rev + 1, event_seq = event_seq + 1, updated_at = $1,
					lease_owner = $2, lease_epoch = lease_epoch + 1, lease_expires = $3 WHERE id = $4 RETURNING event_seq, lease_epoch`,
					nanos(now), r.Owner, nanos(expires), got[i].RunID).Scan(&seq, &got[i].Epoch)
				if err != nil {
					return err
				}
				got[i].EventSeq = seq
				if _, err := tx.Exec(ctx, `INSERT INTO events (run_id, seq, type, at) VALUES ($1, $2, $3, $4)`,
					got[i].RunID, seq, store.EventRunStarted, nanos(r.Now)); err != nil {
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
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM runs AS r
		WHERE r.workflow = q.workflow AND r.concurrency_key = q.concurrency_key AND r.status = 'queued'
		AND (r.created_at, r.id) < (q.created_at, q.id))
		FROM runs AS q WHERE q.id = $1 AND q.status = 'queued'`, runID).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("queue position of %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("queue position of %s: %w", runID, unavailable(err))
	}
	return int(n), nil
}

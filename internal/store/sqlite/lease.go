package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Run leases (see store/lease.go). Every lease write goes through the
// group commit like the other writes: one writer, and several stores on
// one file serialize on SQLite's write lock, so a check and the write that
// follows it in one transaction see no other writer in between.

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{RunID: runID, Owner: owner, Expires: now.Add(ttl).UTC()}
	err := s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		l.Epoch, l.TookOver, err = acquireIn(ctx, tx, runID, owner, now, l.Expires)
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease on run %s: %w", runID, unavailable(err))
	}
	return l, nil
}

// acquireIn takes the run's lease in tx (see AcquireLease) and returns
// its new epoch, and whether it took the lease over from another owner
// that never released it.
func acquireIn(ctx context.Context, tx *sql.Tx, runID, owner string, now, expires time.Time) (int64, bool, error) {
	var holder sql.NullString
	var until int64
	err := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_expires FROM runs WHERE id = ?`, runID).Scan(&holder, &until)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, store.ErrNotFound
	}
	if err != nil {
		return 0, false, err
	}
	other := holder.Valid && holder.String != owner
	if other && until > nanos(now) {
		return 0, false, &store.LeaseHeldError{RunID: runID, Owner: holder.String, Expires: fromNanos(until)}
	}
	var epoch int64
	err = tx.QueryRowContext(ctx, `UPDATE runs SET lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires = ? WHERE id = ? RETURNING lease_epoch`,
		owner, nanos(expires), runID).Scan(&epoch)
	return epoch, other, err
}

// TakeOverLease implements store.Store.
func (s *Store) TakeOverLease(ctx context.Context, from store.Lease, owner string, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{RunID: from.RunID, Owner: owner, Expires: now.Add(ttl).UTC(), TookOver: true}
	err := s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE runs SET lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires = ?
			WHERE id = ? AND lease_owner = ? AND lease_epoch = ? RETURNING lease_epoch`,
			owner, nanos(l.Expires), from.RunID, from.Owner, from.Epoch).Scan(&l.Epoch)
		if errors.Is(err, sql.ErrNoRows) {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, from.RunID).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return store.ErrNotFound
			}
			return store.ErrLeaseLost
		}
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("take over the lease on run %s: %w", from.RunID, err)
	}
	return l, nil
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(l.Owner, ttl); err != nil {
		return store.Lease{}, err
	}
	l.Expires = now.Add(ttl).UTC()
	err := s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE runs SET lease_expires = ? WHERE id = ? AND lease_owner = ? AND lease_epoch = ?`,
			nanos(l.Expires), l.RunID, l.Owner, l.Epoch)
		if err != nil {
			return err
		}
		return s.leaseWritten(ctx, tx, r, l.RunID)
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease on run %s: %w", l.RunID, err)
	}
	return l, nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	err := s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE id = ? AND lease_owner = ? AND lease_epoch = ?`,
			l.RunID, l.Owner, l.Epoch)
		if err != nil {
			return err
		}
		return s.leaseWritten(ctx, tx, r, l.RunID)
	})
	if err != nil {
		return fmt.Errorf("release lease on run %s: %w", l.RunID, err)
	}
	return nil
}

// leaseWritten turns a lease update that changed no row into ErrNotFound
// or ErrLeaseLost.
func (s *Store) leaseWritten(ctx context.Context, tx *sql.Tx, r sql.Result, runID string) error {
	if n, err := r.RowsAffected(); err != nil || n == 1 {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id = ?`, runID).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return store.ErrLeaseLost
}

// checkLease fences a commit: the run's lease must be ref's.
func checkLease(ctx context.Context, tx *sql.Tx, runID string, ref *store.LeaseRef) error {
	var owner sql.NullString
	var epoch int64
	err := tx.QueryRowContext(ctx, `SELECT lease_owner, lease_epoch FROM runs WHERE id = ?`, runID).Scan(&owner, &epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	if !owner.Valid || owner.String != ref.Owner || epoch != ref.Epoch {
		return store.ErrLeaseLost
	}
	return nil
}

// GetLease implements store.Store.
func (s *Store) GetLease(ctx context.Context, runID string) (store.Lease, error) {
	var owner sql.NullString
	var expires int64
	l := store.Lease{RunID: runID}
	err := s.r.QueryRowContext(ctx, `SELECT lease_owner, lease_epoch, lease_expires FROM runs WHERE id = ?`, runID).Scan(&owner, &l.Epoch, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("lease of run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease of run %s: %w", runID, err)
	}
	if owner.Valid {
		l.Owner, l.Expires = owner.String, fromNanos(expires)
	}
	return l, nil
}

// claimWhere is the condition of ClaimRuns's candidates and its
// arguments (after those of the lease: owner, expiry).
func claimWhere(f store.ClaimFilter, now time.Time) (string, []any) {
	var q string
	var args []any
	if f.Ready {
		q = `status <> 'paused' AND id IN (
				SELECT id FROM runs WHERE status IN ('pending', 'running')
					AND NOT EXISTS (SELECT 1 FROM timers t WHERE t.run_id = runs.id AND t.wake_at > ?)
				UNION SELECT run_id FROM timers WHERE wake_at <= ?)`
		args = append(args, nanos(now), nanos(now))
	} else {
		statuses := f.Statuses()
		q = `status IN (?` + strings.Repeat(", ?", len(statuses)-1) + `)`
		for _, st := range statuses {
			args = append(args, st)
		}
	}
	q += ` AND (lease_owner IS NULL OR lease_expires <= ?)`
	args = append(args, nanos(now))
	if f.Workflow != "" {
		q += ` AND workflow = ?`
		args = append(args, f.Workflow)
	}
	return q, args
}

// ClaimRuns implements store.Store. It looks for candidates on the read
// connection first, so that a process polling for work takes the write
// lock only when there is some.
func (s *Store) ClaimRuns(ctx context.Context, owner string, now time.Time, ttl time.Duration, f store.ClaimFilter, limit int) ([]store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	expires := now.Add(ttl).UTC()
	where, args := claimWhere(f, now)
	var found int
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE `+where+`)`, args...).Scan(&found)
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	if found == 0 {
		return nil, nil
	}
	pick := `SELECT id, lease_owner FROM runs WHERE ` + where + ` ORDER BY created_at, id LIMIT ?`
	var out []store.Lease
	err = s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, pick, append(args, limit)...)
		if err != nil {
			return err
		}
		for rows.Next() {
			l := store.Lease{Owner: owner, Expires: expires}
			var prev sql.NullString
			if err := rows.Scan(&l.RunID, &prev); err != nil {
				rows.Close()
				return err
			}
			l.TookOver = prev.Valid && prev.String != owner
			out = append(out, l)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// One writer at a time: nobody changed the candidates since.
		for i := range out {
			err := tx.QueryRowContext(ctx, `UPDATE runs SET lease_owner = ?, lease_epoch = lease_epoch + 1, lease_expires = ? WHERE id = ? RETURNING lease_epoch`,
				owner, nanos(expires), out[i].RunID).Scan(&out[i].Epoch)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	return out, nil
}

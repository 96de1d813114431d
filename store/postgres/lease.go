package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/store"
)

// Run leases (see store/lease.go). The run's row lock orders every lease
// write and every fenced commit: AcquireLease reads the lease FOR UPDATE
// and decides in the same transaction; RenewLease and ReleaseLease are one
// UPDATE each whose condition the server re-checks on the row's latest
// version once it holds the lock; a fenced Commit reads the lease FOR
// UPDATE in its own transaction (savepoint, with group commit), so a
// concurrent acquisition either comes first (and the commit is refused) or
// waits for the commit to end. ClaimRuns picks its runs FOR UPDATE SKIP
// LOCKED: claimants on any number of stores never wait on each other's
// rows nor take the same one.

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(ctx context.Context, runID, owner string, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{RunID: runID, Owner: owner, Expires: now.Add(ttl).UTC()}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		l.Epoch, err = acquireIn(ctx, tx, runID, owner, now, l.Expires)
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease on run %s: %w", runID, err)
	}
	return l, nil
}

// acquireIn takes the run's lease in tx (see AcquireLease) and returns
// its new epoch. The row stays locked until tx ends.
func acquireIn(ctx context.Context, tx pgx.Tx, runID, owner string, now, expires time.Time) (int64, error) {
	var holder *string
	var until, epoch int64
	err := tx.QueryRow(ctx, `SELECT lease_owner, lease_expires FROM runs WHERE id = $1 FOR UPDATE`, runID).Scan(&holder, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, store.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	if holder != nil && *holder != owner && until > nanos(now) {
		return 0, &store.LeaseHeldError{RunID: runID, Owner: *holder, Expires: fromNanos(until)}
	}
	err = tx.QueryRow(ctx, `UPDATE runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires = $2 WHERE id = $3 RETURNING lease_epoch`,
		owner, nanos(expires), runID).Scan(&epoch)
	return epoch, err
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(l.Owner, ttl); err != nil {
		return store.Lease{}, err
	}
	l.Expires = now.Add(ttl).UTC()
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET lease_expires = $1 WHERE id = $2 AND lease_owner = $3 AND lease_epoch = $4`,
		nanos(l.Expires), l.RunID, l.Owner, l.Epoch)
	if err == nil && tag.RowsAffected() == 0 {
		err = s.leaseMissing(ctx, l.RunID)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease on run %s: %w", l.RunID, err)
	}
	return l, nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	tag, err := s.pool.Exec(ctx, `UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3`,
		l.RunID, l.Owner, l.Epoch)
	if err == nil && tag.RowsAffected() == 0 {
		err = s.leaseMissing(ctx, l.RunID)
	}
	if err != nil {
		return fmt.Errorf("release lease on run %s: %w", l.RunID, err)
	}
	return nil
}

// leaseMissing says why a lease update changed no row: ErrNotFound or
// ErrLeaseLost.
func (s *Store) leaseMissing(ctx context.Context, runID string) error {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM runs WHERE id = $1`, runID).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return store.ErrNotFound
	}
	return store.ErrLeaseLost
}

// checkLease fences a commit: the run's lease must be ref's. The row stays
// locked until the commit's transaction ends.
func checkLease(ctx context.Context, tx pgx.Tx, runID string, ref *store.LeaseRef) error {
	var owner *string
	var epoch int64
	err := tx.QueryRow(ctx, `SELECT lease_owner, lease_epoch FROM runs WHERE id = $1 FOR UPDATE`, runID).Scan(&owner, &epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	if err != nil {
		return err
	}
	if owner == nil || *owner != ref.Owner || epoch != ref.Epoch {
		return store.ErrLeaseLost
	}
	return nil
}

// GetLease implements store.Store.
func (s *Store) GetLease(ctx context.Context, runID string) (store.Lease, error) {
	var owner *string
	var expires int64
	l := store.Lease{RunID: runID}
	err := s.pool.QueryRow(ctx, `SELECT lease_owner, lease_epoch, lease_expires FROM runs WHERE id = $1`, runID).Scan(&owner, &l.Epoch, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("lease of run %s: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("lease of run %s: %w", runID, err)
	}
	if owner != nil {
		l.Owner, l.Expires = *owner, fromNanos(expires)
	}
	return l, nil
}

// sqlClaimRuns leases up to $5 runs in statuses $3 (of workflow $6 unless
// it is empty) whose lease is free or expired at $4.
const sqlClaimRuns = `WITH c AS (
		SELECT id FROM runs
		WHERE status = ANY($3) AND (lease_owner IS NULL OR lease_expires <= $4) AND ($6 = '' OR workflow = $6)
		ORDER BY created_at, id LIMIT $5
		FOR UPDATE SKIP LOCKED)
	UPDATE runs r SET lease_owner = $1, lease_epoch = r.lease_epoch + 1, lease_expires = $2
	FROM c WHERE r.id = c.id
	RETURNING r.id, r.lease_epoch`

// ClaimRuns implements store.Store.
func (s *Store) ClaimRuns(ctx context.Context, owner string, now time.Time, ttl time.Duration, f store.ClaimFilter, limit int) ([]store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	expires := now.Add(ttl).UTC()
	rows, err := s.pool.Query(ctx, sqlClaimRuns, owner, nanos(expires), f.Statuses(), nanos(now), limit, f.Workflow)
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Lease, error) {
		l := store.Lease{Owner: owner, Expires: expires}
		err := row.Scan(&l.RunID, &l.Epoch)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	return out, nil
}

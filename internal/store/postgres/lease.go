package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/store"
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
// that never released it. The row stays locked until tx ends.
func acquireIn(ctx context.Context, tx dbtx, runID, owner string, now, expires time.Time) (int64, bool, error) {
	var holder *string
	var until, epoch int64
	err := tx.QueryRow(ctx, `SELECT lease_owner, lease_expires FROM runs WHERE id = $1 FOR UPDATE`, runID).Scan(&holder, &until)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, store.ErrNotFound
	}
	if err != nil {
		return 0, false, err
	}
	other := holder != nil && *holder != owner
	if other && until > nanos(now) {
		return 0, false, &store.LeaseHeldError{RunID: runID, Owner: *holder, Expires: fromNanos(until)}
	}
	err = tx.QueryRow(ctx, `UPDATE runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires = $2 WHERE id = $3 RETURNING lease_epoch`,
		owner, nanos(expires), runID).Scan(&epoch)
	return epoch, other, err
}

// TakeOverLease implements store.Store.
func (s *Store) TakeOverLease(ctx context.Context, from store.Lease, owner string, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{RunID: from.RunID, Owner: owner, Expires: now.Add(ttl).UTC(), TookOver: true}
	err := s.pool.QueryRow(ctx, `UPDATE runs SET lease_owner = $1, lease_epoch = lease_epoch + 1, lease_expires = $2
		WHERE id = $3 AND lease_owner = $4 AND lease_epoch = $5 RETURNING lease_epoch`,
		owner, nanos(l.Expires), from.RunID, from.Owner, from.Epoch).Scan(&l.Epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.leaseMissing(ctx, from.RunID)
	}
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
//
// A run released while it is still pending or running (its driver
// stopped: a graceful shutdown, a run parked on a wake-up) is told to the
// other processes as ready, in the same statement, so that one of them
// claims it at once rather than at its next poll.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	var released int64
	notice := s.runNotice(l.RunID, readyTopic) // never nil: Open makes the feed
	err := s.pool.QueryRow(ctx, sqlReleaseLease, l.RunID, l.Owner, l.Epoch, notice[0], notice[1]).Scan(&released)
	if err == nil && released == 0 {
		err = s.leaseMissing(ctx, l.RunID)
	}
	if err != nil {
		return fmt.Errorf("release lease on run %s: %w", l.RunID, err)
	}
	return nil
}

// sqlReleaseLease frees the lease of run $1 if it is $2's at epoch $3, and
// sends notice $5 on channel $4 when the run is still pending or running;
// it returns how many leases it freed.
const sqlReleaseLease = `WITH u AS (
		UPDATE runs SET lease_owner = NULL, lease_expires = 0 WHERE id = $1 AND lease_owner = $2 AND lease_epoch = $3 RETURNING status),
	n AS (SELECT pg_notify($4, $5) FROM u WHERE status IN ('pending', 'running'))
	SELECT (SELECT count(*) FROM u) + 0 * (SELECT count(*) FROM n)`

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
func checkLease(ctx context.Context, tx dbtx, runID string, ref *store.LeaseRef) error {
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

// sqlClaimRuns leases up to $5 runs that $3 selects (see claimReady)
// whose lease is free or expired at $4 (of workflow $6 unless it is
// empty), and says of each whether it took the lease over from another
// owner.
const sqlClaimRuns = `WITH c AS (
		SELECT id, lease_owner AS prev FROM runs
		WHERE %s AND (lease_owner IS NULL OR lease_expires <= $4) AND ($6 = '' OR workflow = $6)
		ORDER BY created_at, id LIMIT $5
		FOR UPDATE SKIP LOCKED)
	UPDATE runs r SET lease_owner = $1, lease_epoch = r.lease_epoch + 1, lease_expires = $2
	FROM c WHERE r.id = c.id
	RETURNING r.id, r.lease_epoch, c.prev IS NOT NULL AND c.prev <> $1`

// claimStatus and claimReady are ClaimRuns's selections: by status ($3),
// or the runs a driver has work for (ClaimFilter.Ready; $3 unused).
var (
	claimStatus = fmt.Sprintf(sqlClaimRuns, `status = ANY($3)`)
	claimReady  = fmt.Sprintf(sqlClaimRuns, `status <> 'paused' AND cardinality($3::text[]) >= 0 AND id IN (
				SELECT id FROM runs WHERE status IN ('pending', 'running')
					AND NOT EXISTS (SELECT 1 FROM timers t WHERE t.run_id = runs.id AND t.wake_at > $4)
				UNION SELECT run_id FROM timers WHERE wake_at <= $4)`)
)

// ClaimRuns implements store.Store.
func (s *Store) ClaimRuns(ctx context.Context, owner string, now time.Time, ttl time.Duration, f store.ClaimFilter, limit int) ([]store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	expires := now.Add(ttl).UTC()
	q := claimStatus
	if f.Ready {
		q = claimReady
	}
	rows, err := s.pool.Query(ctx, q, owner, nanos(expires), f.Statuses(), nanos(now), limit, f.Workflow)
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Lease, error) {
		l := store.Lease{Owner: owner, Expires: expires}
		err := row.Scan(&l.RunID, &l.Epoch, &l.TookOver)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	return out, nil
}

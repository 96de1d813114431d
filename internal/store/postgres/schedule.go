package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/store"
)

// Schedules (see store/schedule.go). A claim is one conditional UPDATE:
// the server re-checks its condition on the row's latest version once it
// holds the row's lock, so of replicas claiming one instant one updates
// the row and the others find it moved on; the firings' primary key
// refuses an instant recorded twice all the same.

var _ store.ScheduleStore = (*Store)(nil)

// SyncSchedules implements store.ScheduleStore.
func (s *Store) SyncSchedules(ctx context.Context, workflow string, scheds []store.Schedule) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT key, spec FROM schedules WHERE workflow = $1 FOR UPDATE`, workflow)
		if err != nil {
			return err
		}
		old := map[string]string{}
		for rows.Next() {
			var k, spec string
			if err := rows.Scan(&k, &spec); err != nil {
				rows.Close()
				return err
			}
			old[k] = spec
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		keep := map[string]bool{}
		for _, sc := range scheds {
			keep[sc.Key] = true
			if spec, ok := old[sc.Key]; ok && spec == sc.Spec {
				continue
			}
			// A changed schedule starts afresh: its firings go with the old spec.
			if _, err := tx.Exec(ctx, `DELETE FROM schedule_firings WHERE key = $1`, sc.Key); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schedules (key, workflow, trigger_index, spec, next_fire, paused) VALUES ($1, $2, $3, $4, $5, $6)
				ON CONFLICT (key) DO UPDATE SET workflow = excluded.workflow, trigger_index = excluded.trigger_index, spec = excluded.spec,
				next_fire = excluded.next_fire, paused = excluded.paused, last_fired = 0, last_run = ''
				WHERE schedules.spec <> excluded.spec`,
				sc.Key, workflow, sc.Trigger, sc.Spec, nanos(sc.NextFire), sc.Paused); err != nil {
				return err
			}
		}
		for k := range old {
			if !keep[k] {
				if _, err := tx.Exec(ctx, `DELETE FROM schedules WHERE key = $1`, k); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `DELETE FROM schedule_firings WHERE key = $1`, k); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sync schedules of %s: %w", workflow, unavailable(err))
	}
	return nil
}

// ListSchedules implements store.ScheduleStore.
func (s *Store) ListSchedules(ctx context.Context) ([]store.Schedule, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, workflow, trigger_index, spec, next_fire, paused, last_fired, last_run FROM schedules ORDER BY workflow, trigger_index`)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", unavailable(err))
	}
	defer rows.Close()
	var out []store.Schedule
	for rows.Next() {
		var sc store.Schedule
		var next, last int64
		if err := rows.Scan(&sc.Key, &sc.Workflow, &sc.Trigger, &sc.Spec, &next, &sc.Paused, &last, &sc.LastRunID); err != nil {
			return nil, err
		}
		sc.NextFire, sc.LastFired = fromNanos(next), fromNanos(last)
		out = append(out, sc)
	}
	return out, rows.Err()
}

// ClaimFiring implements store.ScheduleStore.
func (s *Store) ClaimFiring(ctx context.Context, key string, expected, next time.Time, at []time.Time) error {
	if len(at) > 100 {
		return fmt.Errorf("claim firing of %s: %d instants, at most 100", key, len(at))
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		last := int64(0)
		if len(at) > 0 {
			last = nanos(at[len(at)-1])
		}
		tag, err := tx.Exec(ctx, `UPDATE schedules SET next_fire = $1, last_fired = CASE WHEN $2::BIGINT = 0 THEN last_fired ELSE $2::BIGINT END
			WHERE key = $3 AND next_fire = $4 AND NOT paused`, nanos(next), last, key, nanos(expected))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrFiringTaken
		}
		for _, t := range at {
			if _, err := tx.Exec(ctx, `INSERT INTO schedule_firings (key, at) VALUES ($1, $2)`, key, nanos(t)); err != nil {
				if sqlState(err) == codeUniqueViolation {
					return store.ErrFiringTaken
				}
				return err
			}
		}
		// The history is bounded: the newest store.MaxFirings firings stay.
		_, err = tx.Exec(ctx, `DELETE FROM schedule_firings WHERE key = $1 AND at < (SELECT at FROM schedule_firings WHERE key = $1 ORDER BY at DESC LIMIT 1 OFFSET $2)`,
			key, store.MaxFirings-1)
		return err
	})
	if err != nil {
		return fmt.Errorf("claim firing of %s: %w", key, unavailable(err))
	}
	return nil
}

// RecordFiringRun implements store.ScheduleStore.
func (s *Store) RecordFiringRun(ctx context.Context, key string, at time.Time, runID string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE schedule_firings SET run_id = $1 WHERE key = $2 AND at = $3`, runID, key, nanos(at)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE schedules SET last_run = $1 WHERE key = $2 AND last_fired = $3`, runID, key, nanos(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("record firing of %s: %w", key, unavailable(err))
	}
	return nil
}

// Firings implements store.ScheduleStore.
func (s *Store) Firings(ctx context.Context, key string, limit int) ([]store.Firing, error) {
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	rows, err := s.pool.Query(ctx, `SELECT at, run_id FROM schedule_firings WHERE key = $1 ORDER BY at DESC LIMIT $2`, key, limit)
	if err != nil {
		return nil, fmt.Errorf("firings of %s: %w", key, unavailable(err))
	}
	defer rows.Close()
	var out []store.Firing
	for rows.Next() {
		f := store.Firing{Key: key}
		var at int64
		if err := rows.Scan(&at, &f.RunID); err != nil {
			return nil, err
		}
		f.At = fromNanos(at)
		out = append(out, f)
	}
	return out, rows.Err()
}

// SetSchedulePaused implements store.ScheduleStore.
func (s *Store) SetSchedulePaused(ctx context.Context, key string, paused bool, next time.Time) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM schedules WHERE key = $1`, key).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		if paused {
			_, err := tx.Exec(ctx, `UPDATE schedules SET paused = true WHERE key = $1`, key)
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE schedules SET paused = false, next_fire = $1 WHERE key = $2 AND paused`, nanos(next), key)
		return err
	})
	if err != nil {
		return fmt.Errorf("pause schedule %s: %w", key, unavailable(err))
	}
	return nil
}

// SeenDelivery implements store.ScheduleStore.
func (s *Store) SeenDelivery(ctx context.Context, hook, id string, now time.Time, window time.Duration) (bool, error) {
	seen := false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE seen_at < $1`, nanos(now.Add(-window))); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (hook, id, seen_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, hook, id, nanos(now))
		seen = err == nil && tag.RowsAffected() == 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record delivery %s of hook %s: %w", id, hook, unavailable(err))
	}
	return seen, nil
}

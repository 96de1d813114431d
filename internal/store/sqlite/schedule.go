package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"stepwise.dev/stepwise/internal/store"
)

// Schedules (see store/schedule.go). Writes take SQLite's write lock for
// their whole transaction (_txlock=immediate), so a claim's check and
// update see no other writer in between, in this process or another.

var _ store.ScheduleStore = (*Store)(nil)

// SyncSchedules implements store.ScheduleStore.
func (s *Store) SyncSchedules(ctx context.Context, workflow string, scheds []store.Schedule) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT key, spec FROM schedules WHERE workflow = ?`, workflow)
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
			if spec, ok := old[sc.Key]; ok && spec == sc.Spec {
				keep[sc.Key] = true
				continue
			}
			// A changed schedule starts afresh: its firings go with the old spec.
			if _, err := tx.ExecContext(ctx, `DELETE FROM schedule_firings WHERE key = ?`, sc.Key); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schedules (key, workflow, trigger_index, spec, next_fire, paused) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (key) DO UPDATE SET workflow = excluded.workflow, trigger_index = excluded.trigger_index, spec = excluded.spec,
				next_fire = excluded.next_fire, paused = excluded.paused, last_fired = 0, last_run = ''`,
				sc.Key, workflow, sc.Trigger, sc.Spec, nanos(sc.NextFire), sc.Paused); err != nil {
				return err
			}
			keep[sc.Key] = true
		}
		for k := range old {
			if !keep[k] {
				if _, err := tx.ExecContext(ctx, `DELETE FROM schedules WHERE key = ?`, k); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM schedule_firings WHERE key = ?`, k); err != nil {
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
	rows, err := s.r.QueryContext(ctx, `SELECT key, workflow, trigger_index, spec, next_fire, paused, last_fired, last_run FROM schedules ORDER BY workflow, trigger_index`)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
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
	err := s.tx(ctx, func(tx *sql.Tx) error {
		last := int64(0)
		if len(at) > 0 {
			last = nanos(at[len(at)-1])
		}
		res, err := tx.ExecContext(ctx, `UPDATE schedules SET next_fire = ?, last_fired = CASE WHEN ? = 0 THEN last_fired ELSE ? END
			WHERE key = ? AND next_fire = ? AND paused = 0`, nanos(next), last, last, key, nanos(expected))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrFiringTaken
		}
		for _, t := range at {
			if _, err := tx.ExecContext(ctx, `INSERT INTO schedule_firings (key, at) VALUES (?, ?)`, key, nanos(t)); err != nil {
				if c := constraint(err); c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
					return store.ErrFiringTaken
				}
				return err
			}
		}
		// The history is bounded: the newest store.MaxFirings firings stay.
		_, err = tx.ExecContext(ctx, `DELETE FROM schedule_firings WHERE key = ? AND at < (SELECT at FROM schedule_firings WHERE key = ? ORDER BY at DESC LIMIT 1 OFFSET ?)`,
			key, key, store.MaxFirings-1)
		return err
	})
	if err != nil {
		return fmt.Errorf("claim firing of %s: %w", key, unavailable(err))
	}
	return nil
}

// RecordFiringRun implements store.ScheduleStore.
func (s *Store) RecordFiringRun(ctx context.Context, key string, at time.Time, runID string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE schedule_firings SET run_id = ? WHERE key = ? AND at = ?`, runID, key, nanos(at)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE schedules SET last_run = ? WHERE key = ? AND last_fired = ?`, runID, key, nanos(at))
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
	rows, err := s.r.QueryContext(ctx, `SELECT at, run_id FROM schedule_firings WHERE key = ? ORDER BY at DESC LIMIT ?`, key, limit)
	if err != nil {
		return nil, fmt.Errorf("firings of %s: %w", key, err)
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
	err := s.tx(ctx, func(tx *sql.Tx) error {
		q, args := `UPDATE schedules SET paused = 1 WHERE key = ?`, []any{key}
		if !paused {
			q, args = `UPDATE schedules SET paused = 0, next_fire = ? WHERE key = ? AND paused = 1`, []any{nanos(next), key}
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schedules WHERE key = ?`, key).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pause schedule %s: %w", key, unavailable(err))
	}
	return nil
}

// SeenDelivery implements store.ScheduleStore.
func (s *Store) SeenDelivery(ctx context.Context, hook, id string, now time.Time, window time.Duration) (bool, error) {
	seen := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE seen_at < ?`, nanos(now.Add(-window))); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO webhook_deliveries (hook, id, seen_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, hook, id, nanos(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		seen = n == 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record delivery %s of hook %s: %w", id, hook, unavailable(err))
	}
	return seen, nil
}

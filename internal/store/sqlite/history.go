package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Steps returns the recorded steps of a run in recording order.
func (s *Store) Steps(ctx context.Context, runID string) ([]store.Step, error) {
	ctx, err := byKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("steps of %s: %w", runID, err)
	}
	rows, err := s.readQuery(ctx, `SELECT key, visit, step_id, status, output, answer, error, attempts, started_at, finished_at FROM steps WHERE run_id = ? ORDER BY ord`, runID)
	if err != nil {
		return nil, fmt.Errorf("steps of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Step
	for rows.Next() {
		st := store.Step{RunID: runID}
		var errText sql.NullString
		var started, finished int64
		if err := rows.Scan(&st.Key, &st.Visit, &st.StepID, &st.Status, (*[]byte)((*[]byte)(&st.Output)), (*[]byte)((*[]byte)(&st.Answer)), &errText, &st.Attempts, &started, &finished); err != nil {
			return nil, fmt.Errorf("steps of %s: %w", runID, err)
		}
		st.Error = errText.String
		st.StartedAt, st.FinishedAt = fromNanos(started), fromNanos(finished)
		out = append(out, st)
	}
	return out, rows.Err()
}

// Attempts returns the attempts of a run.
func (s *Store) Attempts(ctx context.Context, runID string) ([]store.Attempt, error) {
	rows, err := s.readQuery(ctx, `SELECT key, visit, attempt, status, error, started_at, finished_at FROM attempts WHERE run_id = ? ORDER BY started_at, key, visit, attempt`, runID)
	if err != nil {
		return nil, fmt.Errorf("attempts of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		a := store.Attempt{RunID: runID}
		var errText sql.NullString
		var started, finished int64
		if err := rows.Scan(&a.Key, &a.Visit, &a.Attempt, &a.Status, &errText, &started, &finished); err != nil {
			return nil, fmt.Errorf("attempts of %s: %w", runID, err)
		}
		a.Error = errText.String
		a.StartedAt, a.FinishedAt = fromNanos(started), fromNanos(finished)
		out = append(out, a)
	}
	return out, rows.Err()
}

// Events returns a run's events after a sequence number.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]store.Event, error) {
	q := `SELECT seq, type, step_id, data, at FROM events WHERE run_id = ? AND seq > ? ORDER BY seq`
	args := []any{runID, after}
	if limit > 0 {
		q += " LIMIT " + strconv.Itoa(limit) // in the text: see ListRuns
	}
	rows, err := s.readQuery(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Event
	for rows.Next() {
		e := store.Event{RunID: runID}
		var step sql.NullString
		var at int64
		if err := rows.Scan(&e.Seq, &e.Type, &step, (*[]byte)((*[]byte)(&e.Data)), &at); err != nil {
			return nil, fmt.Errorf("events of %s: %w", runID, err)
		}
		e.StepID, e.At = step.String, fromNanos(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

const pauseColumns = `seq, step_key, visit, kind, request, status, expires_at, created_at, answer, answered_at`

func scanPause(runID string, sc interface{ Scan(...any) error }) (store.Pause, error) {
	p := store.Pause{RunID: runID}
	var expires, created int64
	var answered sql.NullInt64
	if err := sc.Scan(&p.Seq, &p.StepKey, &p.Visit, &p.Kind, (*[]byte)((*[]byte)(&p.Request)), &p.Status, &expires, &created, (*[]byte)((*[]byte)(&p.Answer)), &answered); err != nil {
		return p, err
	}
	p.ExpiresAt, p.CreatedAt, p.AnsweredAt = fromNanos(expires), fromNanos(created), nullNanos(answered)
	return p, nil
}

// GetPause reads one pause.
func (s *Store) GetPause(ctx context.Context, runID string, seq int64) (store.Pause, error) {
	ctx, err := byKey(ctx)
	if err != nil {
		return store.Pause{}, fmt.Errorf("pause %s/%d: %w", runID, seq, err)
	}
	p, err := scanPause(runID, s.readQueryRow(ctx, `SELECT `+pauseColumns+` FROM pauses WHERE run_id = ? AND seq = ?`, runID, seq))
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("pause %s/%d: %w", runID, seq, store.ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("pause %s/%d: %w", runID, seq, err)
	}
	return p, nil
}

// OpenPauses returns a run's open pauses.
func (s *Store) OpenPauses(ctx context.Context, runID string) ([]store.Pause, error) {
	ctx, err := byKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("open pauses of %s: %w", runID, err)
	}
	rows, err := s.readQuery(ctx, `SELECT `+pauseColumns+` FROM pauses WHERE run_id = ? AND status = 'open' ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("open pauses of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Pause
	for rows.Next() {
		p, err := scanPause(runID, rows)
		if err != nil {
			return nil, fmt.Errorf("open pauses of %s: %w", runID, err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Answers returns a run's answers in submission order.
func (s *Store) Answers(ctx context.Context, runID string) ([]store.Answer, error) {
	rows, err := s.readQuery(ctx, `SELECT id, pause_seq, step_key, value, at FROM answers WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("answers of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Answer
	for rows.Next() {
		a := store.Answer{RunID: runID}
		var at int64
		if err := rows.Scan(&a.ID, &a.PauseSeq, &a.StepKey, (*[]byte)((*[]byte)(&a.Value)), &at); err != nil {
			return nil, fmt.Errorf("answers of %s: %w", runID, err)
		}
		a.At = fromNanos(at)
		out = append(out, a)
	}
	return out, rows.Err()
}

// Timers of operator-paused runs are left out of DueTimers and NextTimer:
// the run will not advance until it is resumed, and resuming wakes the
// timer loop. Without this the loop would schedule a paused run every time
// it looks.
const (
	sqlDueTimers = `SELECT t.run_id, t.key, t.wake_at FROM timers t JOIN runs r ON r.id = t.run_id
		WHERE t.wake_at <= ? AND r.status <> 'paused' ORDER BY t.wake_at LIMIT `
	sqlNextTimer = `SELECT t.run_id, t.key, t.wake_at FROM timers t JOIN runs r ON r.id = t.run_id
		WHERE r.status <> 'paused' ORDER BY t.wake_at LIMIT 1`
)

// DueTimers returns timers due at now, except those of paused runs.
func (s *Store) DueTimers(ctx context.Context, now time.Time, limit int) ([]store.Timer, error) {
	if limit <= 0 {
		limit = 100
	}
	// The limit is written into the SQL: a bound LIMIT recompiles the
	// prepared statement on every call.
	rows, err := s.readQuery(ctx, sqlDueTimers+strconv.Itoa(limit), nanos(now))
	if err != nil {
		return nil, fmt.Errorf("due timers: %w", err)
	}
	defer rows.Close()
	var out []store.Timer
	for rows.Next() {
		var t store.Timer
		var at int64
		if err := rows.Scan(&t.RunID, &t.Key, &at); err != nil {
			return nil, fmt.Errorf("due timers: %w", err)
		}
		t.WakeAt = fromNanos(at)
		out = append(out, t)
	}
	return out, rows.Err()
}

// NextTimer returns the earliest timer of a run that is not paused.
func (s *Store) NextTimer(ctx context.Context) (store.Timer, bool, error) {
	var t store.Timer
	var at int64
	err := s.readQueryRow(ctx, sqlNextTimer).Scan(&t.RunID, &t.Key, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, fmt.Errorf("next timer: %w", err)
	}
	t.WakeAt = fromNanos(at)
	return t, true, nil
}

// Timers returns a run's timers.
func (s *Store) Timers(ctx context.Context, runID string) ([]store.Timer, error) {
	rows, err := s.readQuery(ctx, `SELECT key, wake_at FROM timers WHERE run_id = ? ORDER BY wake_at`, runID)
	if err != nil {
		return nil, fmt.Errorf("timers of %s: %w", runID, err)
	}
	defer rows.Close()
	var out []store.Timer
	for rows.Next() {
		t := store.Timer{RunID: runID}
		var at int64
		if err := rows.Scan(&t.Key, &at); err != nil {
			return nil, fmt.Errorf("timers of %s: %w", runID, err)
		}
		t.WakeAt = fromNanos(at)
		out = append(out, t)
	}
	return out, rows.Err()
}

package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	moderncsqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"stepwise.dev/stepwise/internal/store"
)

// PutVersion records a workflow version (a no-op when it exists). Every
// run start records its version, nearly always one that exists: a read
// finds it without taking the writer, and a new one is written with
// whatever other writes are queued (see group.go).
func (s *Store) PutVersion(ctx context.Context, v store.Version) error {
	var one int
	err := s.r.QueryRowContext(ctx, `SELECT 1 FROM versions WHERE version = ?`, v.Version).Scan(&one)
	if err == nil {
		return nil // versions are content-addressed: the stored one is this one
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("put version %s: %w", v.Version, err)
	}
	at := v.CreatedAt
	if at.IsZero() {
		at = time.Now()
	}
	err = s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO versions (version, name, definition, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (version) DO NOTHING`,
			v.Version, v.Name, v.Definition, nanos(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("put version %s: %w", v.Version, err)
	}
	return nil
}

// GetVersion reads a workflow version.
func (s *Store) GetVersion(ctx context.Context, version string) (store.Version, error) {
	var v store.Version
	var at int64
	err := s.readQueryRow(ctx, `SELECT version, name, definition, created_at FROM versions WHERE version = ?`, version).
		Scan(&v.Version, &v.Name, &v.Definition, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return v, fmt.Errorf("get version %s: %w", version, store.ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("get version %s: %w", version, err)
	}
	v.CreatedAt = fromNanos(at)
	return v, nil
}

// CreateRun inserts a run and its first events atomically (sharing a
// transaction with concurrent writes, see group.go).
func (s *Store) CreateRun(ctx context.Context, r store.Run, events []store.Event, steps ...store.Step) (store.CommitResult, error) {
	var res store.CommitResult
	now := time.Now()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	lease, err := store.CreateLease(r)
	if err != nil {
		return res, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	if err := store.CheckQueued(r); err != nil {
		return res, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	err = s.groupTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, sqlInsertRun,
			r.ID, r.Workflow, r.Version, r.Status, blob(r.Inputs), blob(r.Outputs), blob(r.Error), blob(r.State),
			nullString(r.ParentID), len(events), nanos(r.CreatedAt), nanos(now), nullable(r.FinishedAt))
		if err != nil {
			switch constraint(err) {
			case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
				return fmt.Errorf("version %s is not recorded: %w", r.Version, store.ErrNotFound)
			case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE:
				return store.ErrExists
			}
			return err
		}
		res.Rev = 1
		if r.ConcurrencyLimit > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET concurrency_key = ?, concurrency_limit = ? WHERE id = ?`,
				r.ConcurrencyKey, r.ConcurrencyLimit, r.ID); err != nil {
				return fmt.Errorf("concurrency: %w", err)
			}
		}
		if r.Lease != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE runs SET lease_owner = ?, lease_epoch = 1, lease_expires = ? WHERE id = ?`,
				lease.Owner, nanos(lease.Expires), r.ID); err != nil {
				return fmt.Errorf("lease: %w", err)
			}
		}
		if err := s.upsertSteps(ctx, tx, r.ID, 1, steps); err != nil {
			return fmt.Errorf("copy steps: %w", err)
		}
		seqs, err := s.insertEvents(ctx, tx, r.ID, 0, events, now)
		if err != nil {
			return err
		}
		res.EventSeqs = seqs
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("create run %s: %w", r.ID, unavailable(err))
	}
	res.Lease = lease
	return res, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// constraint is the extended result code of err when it is a constraint
// violation (SQLITE_CONSTRAINT_*), else 0.
func constraint(err error) int {
	var se *moderncsqlite.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_CONSTRAINT {
		return 0
	}
	return se.Code()
}

const runColumns = `id, workflow, version, status, inputs, outputs, error, state, parent_id, rev, event_seq, created_at, updated_at, finished_at, concurrency_key, concurrency_limit`

func scanRun(sc interface{ Scan(...any) error }) (store.Run, error) {
	var r store.Run
	var parent sql.NullString
	var created, updated int64
	var finished sql.NullInt64
	var key sql.NullString
	err := sc.Scan(&r.ID, &r.Workflow, &r.Version, &r.Status, (*[]byte)((*[]byte)(&r.Inputs)), (*[]byte)((*[]byte)(&r.Outputs)), (*[]byte)((*[]byte)(&r.Error)), (*[]byte)((*[]byte)(&r.State)), &parent, &r.Rev, &r.EventSeq, &created, &updated, &finished, &key, &r.ConcurrencyLimit)
	if err != nil {
		return r, err
	}
	r.ConcurrencyKey = key.String
	r.ParentID = parent.String
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = fromNanos(created), fromNanos(updated), nullNanos(finished)
	return r, nil
}

// GetRun reads a run.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	ctx, err := byKey(ctx)
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	r, err := scanRun(s.readQueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("get run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// ListRuns pages through runs, newest first.
func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]store.Run, string, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	if limit > 1000 {
		limit = 1000
	}
	var where []string
	var args []any
	if f.Workflow != "" {
		where = append(where, "workflow = ?")
		args = append(args, f.Workflow)
	}
	if len(f.Status) > 0 {
		where = append(where, "status IN ("+strings.TrimSuffix(strings.Repeat("?,", len(f.Status)), ",")+")")
		for _, st := range f.Status {
			args = append(args, st)
		}
	}
	if f.ParentID != "" {
		where = append(where, "parent_id = ?")
		args = append(args, f.ParentID)
	}
	if !f.CreatedAfter.IsZero() {
		where = append(where, "created_at > ?")
		args = append(args, nanos(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, nanos(f.CreatedBefore))
	}
	if f.Cursor != "" {
		at, id, err := store.DecodeCursor(f.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("list runs: %w", err)
		}
		where = append(where, "(created_at < ? OR (created_at = ? AND id < ?))")
		args = append(args, at, at, id)
	}
	// The limit is part of the text, not a parameter: SQLite plans with a
	// bound LIMIT's value, so a statement with LIMIT ? is compiled again on
	// every run and preparing it would save nothing.
	order := " ORDER BY created_at DESC, id DESC LIMIT " + strconv.Itoa(limit+1)
	var q string
	if f.Search == "" {
		q = `SELECT ` + runColumns + ` FROM runs`
		if len(where) > 0 {
			q += " WHERE " + strings.Join(where, " AND ")
		}
		q += order
	} else {
		var err error
		if q, args, err = s.searchQuery(ctx, f.Search, where, args, order); err != nil {
			return nil, "", fmt.Errorf("list runs: %w", err)
		}
	}
	rows, err := s.readQuery(ctx, q, args...)
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []store.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, "", fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	out, next := store.Page(out, limit)
	return out, next, nil
}

// RunIDsByStatus lists run ids by status.
func (s *Store) RunIDsByStatus(ctx context.Context, statuses ...string) ([]string, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	args := make([]any, len(statuses))
	for i, st := range statuses {
		args[i] = st
	}
	rows, err := s.readQuery(ctx, `SELECT id FROM runs WHERE status IN (`+strings.TrimSuffix(strings.Repeat("?,", len(statuses)), ",")+`) ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("runs by status: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.commits.Add(1)
	return nil
}

// insertEvents appends events after lastSeq (the caller keeps the run's
// event_seq in step), in statements of up to maxRows rows.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, runID string, lastSeq int64, events []store.Event, now time.Time) ([]int64, error) {
	if len(events) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(events))
	start := 0
	for _, n := range chunks(len(events)) {
		args := make([]any, 0, 6*n)
		for i, e := range events[start : start+n] {
			seq := lastSeq + int64(start+i) + 1
			at := e.At
			if at.IsZero() {
				at = now
			}
			args = append(args, runID, seq, e.Type, nullString(e.StepID), blob(e.Data), nanos(at))
			seqs[start+i] = seq
		}
		if _, err := s.execRows(ctx, tx, sqlInsertEvents[n], args...); err != nil {
			return nil, fmt.Errorf("append events: %w", err)
		}
		start += n
	}
	return seqs, nil
}

// upsertSteps records steps in statements of up to maxRows rows; the
// i-th gets ord stepOrd(rev, i) if it is new.
func (s *Store) upsertSteps(ctx context.Context, tx *sql.Tx, runID string, rev int64, steps []store.Step) error {
	start := 0
	for _, n := range chunks(len(steps)) {
		args := make([]any, 0, 12*n)
		for i, st := range steps[start : start+n] {
			args = append(args, runID, st.Key, st.Visit, st.StepID, st.Status, blob(st.Output), blob(st.Answer),
				nullString(st.Error), st.Attempts, nanos(st.StartedAt), nanos(st.FinishedAt), stepOrd(rev, start+i))
		}
		if _, err := s.execRows(ctx, tx, sqlUpsertSteps[n], args...); err != nil {
			return fmt.Errorf("record steps %s…: %w", steps[start].Key, err)
		}
		start += n
	}
	return nil
}

// ListVersions implements store.Store, along versions_name_created.
func (s *Store) ListVersions(ctx context.Context, name string, limit int) ([]store.Version, error) {
	limit = min(max(limit, 1), 1000)
	rows, err := s.readQuery(ctx, `SELECT version, created_at FROM versions WHERE name = ? ORDER BY created_at DESC, version LIMIT ?`, name, limit)
	if err != nil {
		return nil, fmt.Errorf("versions of %q: %w", name, err)
	}
	defer rows.Close()
	var out []store.Version
	for rows.Next() {
		v := store.Version{Name: name}
		var created int64
		if err := rows.Scan(&v.Version, &created); err != nil {
			return nil, fmt.Errorf("versions of %q: %w", name, err)
		}
		v.CreatedAt = fromNanos(created)
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("versions of %q: %w", name, err)
	}
	return out, nil
}

// WorkflowStats implements store.Store: one aggregate over the workflow's
// index.
func (s *Store) WorkflowStats(ctx context.Context, workflow string) (store.WorkflowStats, error) {
	var st store.WorkflowStats
	var succeeded, failed, canceled, finished, durSum, last sql.NullInt64
	err := s.readQueryRow(ctx, `SELECT COUNT(*),
  SUM(status = 'succeeded'), SUM(status = 'failed'), SUM(status = 'canceled'),
  SUM(finished_at IS NOT NULL), SUM(CASE WHEN finished_at IS NOT NULL THEN finished_at - created_at END),
  MAX(created_at)
FROM runs WHERE workflow = ? AND parent_id IS NULL`, workflow).Scan(&st.Runs, &succeeded, &failed, &canceled, &finished, &durSum, &last)
	if err != nil {
		return st, fmt.Errorf("workflow stats %q: %w", workflow, err)
	}
	st.Succeeded, st.Failed, st.Canceled = int(succeeded.Int64), int(failed.Int64), int(canceled.Int64)
	st.Active = st.Runs - st.Succeeded - st.Failed - st.Canceled
	if finished.Int64 > 0 {
		st.MeanDuration = time.Duration(durSum.Int64 / finished.Int64)
	}
	st.LastRunAt = nullNanos(last)
	return st, nil
}

// prefixEnd is the least string above every string that starts with p
// (in byte order): p with its last byte incremented, bytes 0xff dropped.
func prefixEnd(p string) string {
	b := []byte(p)
	for len(b) > 0 && b[len(b)-1] == 0xff {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return "\xff\xff\xff\xff"
	}
	b[len(b)-1]++
	return string(b)
}

// maxSearchWorkflows is how many workflow names a search's prefix may
// match and still be read one index range each.
const maxSearchWorkflows = 50

// searchSortMax is how many runs a search reads by id and sorts at most.
const searchSortMax = 1000

// searchQuery is the page of runs whose id or workflow starts with p, as
// the union of ordered index reads, each cut at the page: the runs of
// each workflow whose name starts with p (runs_workflow_created, in
// order: a page costs the same at any number of runs), and the runs whose
// id starts with p (the primary key's range, sorted: what it matches). A
// prefix that more than maxSearchWorkflows workflow names start with is
// read as one range of the workflow index and sorted.
func (s *Store) searchQuery(ctx context.Context, p string, where []string, args []any, order string) (string, []any, error) {
	end := prefixEnd(p)
	// The distinct names, one index seek each (a loose index scan).
	rows, err := s.readQuery(ctx, `WITH RECURSIVE w(name) AS (
  SELECT (SELECT workflow FROM runs WHERE workflow >= ? AND workflow < ? ORDER BY workflow LIMIT 1)
  UNION ALL
  SELECT (SELECT workflow FROM runs WHERE workflow > w.name AND workflow < ? ORDER BY workflow LIMIT 1) FROM w WHERE w.name IS NOT NULL
) SELECT name FROM w WHERE name IS NOT NULL LIMIT `+strconv.Itoa(maxSearchWorkflows+1), p, end, end)
	if err != nil {
		return "", nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return "", nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return "", nil, err
	}
	var branches []string
	var all []any
	branch := func(cond string, cargs ...any) {
		w := append(append([]string(nil), where...), cond)
		branches = append(branches, "SELECT * FROM (SELECT "+runColumns+" FROM runs WHERE "+strings.Join(w, " AND ")+order+")")
		all = append(append(all, args...), cargs...)
	}
	// Few runs whose id starts with p: the primary key's range, sorted.
	// Many (a short prefix): the creation index in order, filtered, which
	// finds a page of them soon.
	var many int
	if err := s.readQueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM runs WHERE id >= ? AND id < ? LIMIT `+strconv.Itoa(searchSortMax)+`)`, p, end).Scan(&many); err != nil {
		return "", nil, err
	}
	if many < searchSortMax {
		branch("id >= ? AND id < ?", p, end)
	} else {
		branch("+id >= ? AND +id < ?", p, end)
	}
	if len(names) > maxSearchWorkflows {
		branch("workflow >= ? AND workflow < ?", p, end)
	} else {
		for _, n := range names {
			branch("workflow = ?", n)
		}
	}
	return strings.Join(branches, " UNION ") + order, all, nil
}

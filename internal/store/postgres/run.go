package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/store"
)

// PutVersion records a workflow version (a no-op when it exists). Every
// run start records its version, nearly always one that exists: a read
// finds it without taking the writer, and a new one is written with
// whatever other writes are queued (see group.go).
func (s *Store) PutVersion(ctx context.Context, v store.Version) error {
	var one int32
	err := s.pool.QueryRow(ctx, `SELECT 1 FROM versions WHERE version = $1`, v.Version).Scan(&one)
	if err == nil {
		return nil // versions are content-addressed: the stored one is this one
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("put version %s: %w", v.Version, err)
	}
	at := v.CreatedAt
	if at.IsZero() {
		at = time.Now()
	}
	err = s.groupTx(ctx, "version "+v.Version, func(ctx context.Context, tx dbtx) error {
		_, err := tx.Exec(ctx, `INSERT INTO versions (version, name, definition, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (version) DO NOTHING`,
			v.Version, v.Name, []byte(v.Definition), nanos(at))
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
	err := s.pool.QueryRow(ctx, `SELECT version, name, definition, created_at FROM versions WHERE version = $1`, version).
		Scan(&v.Version, &v.Name, &v.Definition, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, fmt.Errorf("get version %s: %w", version, store.ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("get version %s: %w", version, err)
	}
	v.CreatedAt = fromNanos(at)
	return v, nil
}

const sqlInsertRun = `INSERT INTO runs (id, workflow, version, status, inputs, outputs, error, state, parent_id, rev, event_seq, created_at, updated_at, finished_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $11, $12, $13)`

// CreateRun inserts a run, its first events and the steps it starts from
// atomically (sharing a transaction with concurrent writes, see group.go).
func (s *Store) CreateRun(ctx context.Context, r store.Run, events []store.Event, steps ...store.Step) (store.CommitResult, error) {
	var res store.CommitResult
	now := time.Now()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	lease, err := store.CreateLease(r)
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	if err := store.CheckQueued(r); err != nil {
		return store.CommitResult{}, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	err = s.groupTx(ctx, r.ID, func(ctx context.Context, tx dbtx) error {
		b := &pgx.Batch{}
		b.Queue(sqlInsertRun, r.ID, r.Workflow, r.Version, r.Status, blob(r.Inputs), blob(r.Outputs), blob(r.Error), blob(r.State),
			nullString(r.ParentID), len(events), nanos(r.CreatedAt), nanos(now), nullable(r.FinishedAt))
		if r.Lease != nil {
			b.Queue(`UPDATE runs SET lease_owner = $1, lease_epoch = 1, lease_expires = $2 WHERE id = $3`, lease.Owner, nanos(lease.Expires), r.ID)
		}
		if r.ConcurrencyLimit > 0 {
			b.Queue(`UPDATE runs SET concurrency_key = $1, concurrency_limit = $2 WHERE id = $3`, r.ConcurrencyKey, r.ConcurrencyLimit, r.ID)
		}
		nSteps := queueSteps(b, r.ID, 1, steps)
		seqs, nEvents := queueEvents(b, r.ID, 0, events, now)
		notice := s.runNotice(r.ID, readyTopic)
		if notice != nil {
			b.Queue(sqlNotify, notice...)
		}
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			switch sqlState(err) {
			case codeForeignKeyViolation:
				return fmt.Errorf("version %s is not recorded: %w", r.Version, store.ErrNotFound)
			case codeUniqueViolation:
				return store.ErrExists
			}
			return err
		}
		if r.Lease != nil {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("lease: %w", err)
			}
		}
		if r.ConcurrencyLimit > 0 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("concurrency: %w", err)
			}
		}
		for range nSteps {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("copy steps: %w", err)
			}
		}
		for range nEvents {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("append events: %w", err)
			}
		}
		if notice != nil {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("notify: %w", err)
			}
		}
		res.Rev, res.EventSeqs = 1, seqs
		return br.Close()
	})
	if err != nil {
		return store.CommitResult{}, fmt.Errorf("create run %s: %w", r.ID, unavailable(err))
	}
	res.Lease = lease
	return res, nil
}

const runColumns = `id, workflow, version, status, inputs, outputs, error, state, parent_id, rev, event_seq, created_at, updated_at, finished_at, concurrency_key, concurrency_limit`

func scanRun(sc interface{ Scan(...any) error }) (store.Run, error) {
	var r store.Run
	var parent *string
	var created, updated int64
	var finished *int64
	var key *string
	var limit int32
	err := sc.Scan(&r.ID, &r.Workflow, &r.Version, &r.Status, (*[]byte)(&r.Inputs), (*[]byte)(&r.Outputs), (*[]byte)(&r.Error), (*[]byte)(&r.State), &parent, &r.Rev, &r.EventSeq, &created, &updated, &finished, &key, &limit)
	if err != nil {
		return r, err
	}
	if key != nil {
		r.ConcurrencyKey = *key
	}
	r.ConcurrencyLimit = int(limit)
	if parent != nil {
		r.ParentID = *parent
	}
	r.CreatedAt, r.UpdatedAt, r.FinishedAt = fromNanos(created), fromNanos(updated), nullNanos(finished)
	return r, nil
}

// GetRun reads a run.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("get run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("get run %s: %w", id, unavailable(err))
	}
	return r, nil
}

// args numbers the parameters of a statement built piece by piece.
type args []any

// add appends a parameter and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
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
	var a args
	if f.Workflow != "" {
		where = append(where, "workflow = "+a.add(f.Workflow))
	}
	if len(f.Status) > 0 {
		where = append(where, "status = ANY("+a.add(f.Status)+")")
	}
	if f.ParentID != "" {
		where = append(where, "parent_id = "+a.add(f.ParentID))
	}
	if !f.CreatedAfter.IsZero() {
		where = append(where, "created_at > "+a.add(nanos(f.CreatedAfter)))
	}
	if !f.CreatedBefore.IsZero() {
		where = append(where, "created_at < "+a.add(nanos(f.CreatedBefore)))
	}
	if f.Search != "" {
		p := a.add(f.Search)
		where = append(where, "(starts_with(id, "+p+") OR starts_with(workflow, "+p+"))")
	}
	if f.Cursor != "" {
		at, id, err := store.DecodeCursor(f.Cursor)
		if err != nil {
			return nil, "", fmt.Errorf("list runs: %w", err)
		}
		where = append(where, "(created_at, id) < ("+a.add(at)+", "+a.add(id)+")")
	}
	q := `SELECT ` + runColumns + ` FROM runs`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT " + a.add(limit+1)
	rows, err := s.pool.Query(ctx, q, a...)
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

// RunIDsByStatus lists run ids by status, oldest first.
func (s *Store) RunIDsByStatus(ctx context.Context, statuses ...string) ([]string, error) {
	if len(statuses) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id FROM runs WHERE status = ANY($1) ORDER BY created_at, id`, statuses)
	if err != nil {
		return nil, fmt.Errorf("runs by status: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("runs by status: %w", err)
	}
	return ids, nil
}

// queueEvents queues the insert of events numbered after lastSeq (the
// caller keeps the run's event_seq in step) as one statement, and returns
// their numbers and how many statements it queued.
func queueEvents(b *pgx.Batch, runID string, lastSeq int64, events []store.Event, now time.Time) ([]int64, int) {
	if len(events) == 0 {
		return nil, 0
	}
	n := len(events)
	seqs := make([]int64, n)
	types := make([]string, n)
	stepIDs := make([]*string, n)
	data := make([][]byte, n)
	ats := make([]int64, n)
	for i, e := range events {
		seqs[i] = lastSeq + int64(i) + 1
		types[i] = e.Type
		stepIDs[i] = nullStringPtr(e.StepID)
		data[i] = blobOrNil(e.Data)
		at := e.At
		if at.IsZero() {
			at = now
		}
		ats[i] = nanos(at)
	}
	b.Queue(`INSERT INTO events (run_id, seq, type, step_id, data, at)
		SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bytea[], $6::bigint[])`,
		runID, seqs, types, stepIDs, data, ats)
	return seqs, 1
}

// sqlUpsertSteps records steps given as arrays; a step's ord is set by its
// first record only.
const sqlUpsertSteps = `INSERT INTO steps (run_id, key, visit, step_id, status, output, answer, error, attempts, started_at, finished_at, ord)
	SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::bytea[], $7::bytea[], $8::text[], $9::int[], $10::bigint[], $11::bigint[], $12::bigint[])
	ON CONFLICT (run_id, key, visit) DO UPDATE SET step_id = excluded.step_id, status = excluded.status, output = excluded.output,
	answer = excluded.answer, error = excluded.error, attempts = excluded.attempts, started_at = excluded.started_at, finished_at = excluded.finished_at`

// queueSteps queues the upsert of steps as one statement and returns how
// many statements it queued. One statement may not touch a row twice, so
// a step recorded several times in the list is written once: in the place
// (ord) of its first record, with the values of its last, which is what
// recording them one after another leaves. The i-th distinct step gets
// ord stepOrd(rev, i) if it is new.
func queueSteps(b *pgx.Batch, runID string, rev int64, steps []store.Step) int {
	if len(steps) == 0 {
		return 0
	}
	type id struct {
		key   string
		visit int
	}
	var index map[id]int
	uniq := steps
	if len(steps) > 1 {
		index = make(map[id]int, len(steps))
		uniq = make([]store.Step, 0, len(steps))
		for _, st := range steps {
			k := id{st.Key, st.Visit}
			if i, ok := index[k]; ok {
				uniq[i] = st
				continue
			}
			index[k] = len(uniq)
			uniq = append(uniq, st)
		}
	}
	n := len(uniq)
	keys, stepIDs, statuses := make([]string, n), make([]string, n), make([]string, n)
	visits, attempts := make([]int32, n), make([]int32, n)
	outputs, answers := make([][]byte, n), make([][]byte, n)
	errs := make([]*string, n)
	started, finished, ords := make([]int64, n), make([]int64, n), make([]int64, n)
	for i, st := range uniq {
		keys[i], visits[i], stepIDs[i], statuses[i] = st.Key, int32(st.Visit), st.StepID, st.Status
		outputs[i], answers[i], errs[i], attempts[i] = blobOrNil(st.Output), blobOrNil(st.Answer), nullStringPtr(st.Error), int32(st.Attempts)
		started[i], finished[i], ords[i] = nanos(st.StartedAt), nanos(st.FinishedAt), stepOrd(rev, i)
	}
	b.Queue(sqlUpsertSteps, runID, keys, visits, stepIDs, statuses, outputs, answers, errs, attempts, started, finished, ords)
	return 1
}

// stepOrd is the recording order of the i-th step of the commit that
// brought the run to revision rev: increasing with each commit of the run,
// and within a commit.
func stepOrd(rev int64, i int) int64 { return rev<<32 | int64(i) }

// ListVersions implements store.Store, along versions_name_created.
func (s *Store) ListVersions(ctx context.Context, name string, limit int) ([]store.Version, error) {
	limit = min(max(limit, 1), 1000)
	rows, err := s.pool.Query(ctx, `SELECT version, created_at FROM versions WHERE name = $1 ORDER BY created_at DESC, version LIMIT $2`, name, limit)
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
// runs.
func (s *Store) WorkflowStats(ctx context.Context, workflow string) (store.WorkflowStats, error) {
	var st store.WorkflowStats
	var runs, succeeded, failed, canceled, finished, durSum int64
	var last *int64
	err := s.pool.QueryRow(ctx, `SELECT COUNT(*),
  COUNT(*) FILTER (WHERE status = 'succeeded'), COUNT(*) FILTER (WHERE status = 'failed'), COUNT(*) FILTER (WHERE status = 'canceled'),
  COUNT(finished_at), COALESCE(SUM(finished_at - created_at), 0)::bigint,
  MAX(created_at)
FROM runs WHERE workflow = $1 AND parent_id IS NULL`, workflow).Scan(&runs, &succeeded, &failed, &canceled, &finished, &durSum, &last)
	if err != nil {
		return st, fmt.Errorf("workflow stats %q: %w", workflow, err)
	}
	st.Runs, st.Succeeded, st.Failed, st.Canceled = int(runs), int(succeeded), int(failed), int(canceled)
	st.Active = st.Runs - st.Succeeded - st.Failed - st.Canceled
	if finished > 0 {
		st.MeanDuration = time.Duration(durSum / finished)
	}
	st.LastRunAt = nullNanos(last)
	return st, nil
}

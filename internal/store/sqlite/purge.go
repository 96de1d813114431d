package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"stepwise.dev/stepwise/internal/store"
)

// defaultPurgeBatch is how many top-level runs (with their sub-workflow
// runs) one purge transaction deletes: the store has one writer, and one
// long transaction over years of history would hold up every live run's
// commits until it ends.
const defaultPurgeBatch = 200

// PurgeRuns deletes the finished runs f selects, batch by batch, each
// batch in one transaction that selects and deletes together (a run that
// is retried or gets a new child meanwhile is either seen active and kept,
// or deleted before the retry, which then finds no run).
func (s *Store) PurgeRuns(ctx context.Context, f store.PurgeFilter) (store.PurgeResult, error) {
	batch := s.purgeBatch
	if batch <= 0 {
		batch = defaultPurgeBatch
	}
	return store.PurgeInBatches(ctx, f, batch, s.countPurge, s.purgeOnce)
}

// purgeSelection is the WITH clause naming what a purge deletes: tree(id)
// holds the selected top-level runs and all their descendants. limit caps
// the number of top-level runs, oldest first (-1: no cap).
//
// blocked walks up from every unfinished sub-workflow run to its root, so
// that a tree with anything still active is left whole; walking up from
// the few active runs is cheaper than walking down every candidate tree.
func purgeSelection(f store.PurgeFilter, limit int) (string, []any) {
	var args []any
	in := func(values []string) string {
		for _, v := range values {
			args = append(args, v)
		}
		return strings.TrimSuffix(strings.Repeat("?,", len(values)), ",")
	}
	var b strings.Builder
	b.WriteString(`WITH RECURSIVE
blocked(id, parent_id) AS (
  SELECT id, parent_id FROM runs WHERE parent_id IS NOT NULL AND status NOT IN (` + in(store.FinishedStatuses) + `)
  UNION
  SELECT r.id, r.parent_id FROM runs r JOIN blocked b ON r.id = b.parent_id
),
matching(id, finished_at) AS (
  SELECT id, finished_at FROM runs WHERE parent_id IS NULL AND +status IN (` + in(f.Statuses()) + `)`)
	if f.Workflow != "" {
		b.WriteString(` AND workflow = ?`)
		args = append(args, f.Workflow)
	}
	if !f.FinishedBefore.IsZero() {
		b.WriteString(` AND finished_at < ?`)
		args = append(args, nanos(f.FinishedBefore))
	}
	// Oldest first; but when the newest Keep are spared, newest first past
	// them, so that one index scan serves both the skip and the batch.
	order := `finished_at, id`
	if f.Keep > 0 {
		order = `finished_at DESC, id DESC`
		b.WriteString(` ORDER BY ` + order + ` LIMIT -1 OFFSET ?`)
		args = append(args, f.Keep)
	}
	b.WriteString(`
),
roots(id) AS (
  SELECT id FROM matching WHERE id NOT IN (SELECT id FROM blocked WHERE parent_id IS NULL)
  ORDER BY ` + order + ` LIMIT ?
),
tree(id) AS (
  SELECT id FROM roots
  UNION
  SELECT r.id FROM runs r JOIN tree t ON r.parent_id = t.id
)
`)
	args = append(args, limit)
	return b.String(), args
}

// inTree restricts a table's run_id to the selected runs.
const inTree = `run_id IN (SELECT id FROM tree)`

// countPurge counts what a purge would delete, in one statement so the
// counts come from one snapshot.
func (s *Store) countPurge(ctx context.Context, f store.PurgeFilter) (store.PurgeResult, error) {
	sel, args := purgeSelection(f, -1)
	q := sel + `SELECT
  (SELECT count(*) FROM tree),
  (SELECT count(*) FROM steps WHERE ` + inTree + `),
  (SELECT count(*) FROM attempts WHERE ` + inTree + `),
  (SELECT count(*) FROM events WHERE ` + inTree + `),
  (SELECT count(*) FROM pauses WHERE ` + inTree + `),
  (SELECT count(*) FROM answers WHERE ` + inTree + `),
  (SELECT count(*) FROM timers WHERE ` + inTree + `),
  (SELECT count(*) FROM versions v WHERE v.version IN (SELECT version FROM runs WHERE id IN (SELECT id FROM tree))
    AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.version = v.version AND r.id NOT IN (SELECT id FROM tree)))`
	var r store.PurgeResult
	err := s.r.QueryRowContext(ctx, q, args...).Scan(&r.Runs, &r.Steps, &r.Attempts, &r.Events, &r.Pauses, &r.Answers, &r.Timers, &r.Versions)
	return r, err
}

// purgeOnce deletes one batch of at most limit top-level runs with their
// trees in one transaction, and reports how many top-level runs it took.
// The selected ids go to a temporary table first so that the selection is
// evaluated once and every delete sees the same runs.
func (s *Store) purgeOnce(ctx context.Context, f store.PurgeFilter, limit int) (store.PurgeResult, int, error) {
	var res store.PurgeResult
	roots := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			`CREATE TEMP TABLE IF NOT EXISTS purge_ids (id TEXT PRIMARY KEY)`,
			`CREATE TEMP TABLE IF NOT EXISTS purge_versions (version TEXT PRIMARY KEY)`,
			`DELETE FROM temp.purge_ids`,
			`DELETE FROM temp.purge_versions`,
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("prepare purge: %w", err)
			}
		}
		sel, args := purgeSelection(f, limit)
		if _, err := tx.ExecContext(ctx, sel+`INSERT INTO temp.purge_ids (id) SELECT id FROM tree`, args...); err != nil {
			return fmt.Errorf("select runs: %w", err)
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM temp.purge_ids p JOIN runs r ON r.id = p.id WHERE r.parent_id IS NULL`).Scan(&roots); err != nil {
			return fmt.Errorf("count selected runs: %w", err)
		}
		if roots == 0 {
			return nil
		}
		// The versions of the selected runs, to drop those no other run
		// refers to once the runs are gone.
		if _, err := tx.ExecContext(ctx, `INSERT INTO temp.purge_versions (version) SELECT DISTINCT version FROM runs WHERE id IN (SELECT id FROM temp.purge_ids)`); err != nil {
			return fmt.Errorf("collect versions: %w", err)
		}
		const selected = ` WHERE run_id IN (SELECT id FROM temp.purge_ids)`
		for _, d := range []struct {
			q string
			n *int
		}{
			{`DELETE FROM steps` + selected, &res.Steps},
			{`DELETE FROM attempts` + selected, &res.Attempts},
			{`DELETE FROM events` + selected, &res.Events},
			{`DELETE FROM pauses` + selected, &res.Pauses},
			{`DELETE FROM answers` + selected, &res.Answers},
			{`DELETE FROM timers` + selected, &res.Timers},
			{`DELETE FROM runs WHERE id IN (SELECT id FROM temp.purge_ids)`, &res.Runs},
			{`DELETE FROM versions WHERE version IN (SELECT version FROM temp.purge_versions)
				AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.version = versions.version)`, &res.Versions},
		} {
			r, err := tx.ExecContext(ctx, d.q)
			if err != nil {
				return fmt.Errorf("%s: %w", strings.Fields(d.q)[2], err)
			}
			n, err := r.RowsAffected()
			if err != nil {
				return err
			}
			*d.n = int(n)
		}
		return nil
	})
	if err != nil {
		return store.PurgeResult{}, 0, err
	}
	return res, roots, nil
}

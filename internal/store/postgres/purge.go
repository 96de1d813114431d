package postgres

import (
	"context"
	"fmt"
	"strings"

	"stepwise.dev/stepwise/internal/store"
)

// defaultPurgeBatch is how many top-level runs (with their sub-workflow
// runs) one purge transaction deletes: one long transaction over years of
// history would hold up this process's commits (it goes through the group
// commit, as a write) and keep its locks until it ends.
const defaultPurgeBatch = 200

// PurgeRuns deletes the finished runs f selects, batch by batch, each
// batch in one transaction that selects and deletes together. Batches are
// written through the group commit (group.go), so they are serialized
// with this process's commits: a run that is retried or gets a new child
// meanwhile is either seen active and kept, or deleted before the retry,
// which then finds no run.
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
// that a tree with anything still active is left whole.
func purgeSelection(f store.PurgeFilter, limit int) (string, args) {
	var a args
	var b strings.Builder
	b.WriteString(`WITH RECURSIVE
blocked(id, parent_id) AS (
  SELECT id, parent_id FROM runs WHERE parent_id IS NOT NULL AND NOT (status = ANY(` + a.add(store.FinishedStatuses) + `))
  UNION
  SELECT r.id, r.parent_id FROM runs r JOIN blocked b ON r.id = b.parent_id
),
matching(id, finished_at) AS (
  SELECT id, finished_at FROM runs WHERE parent_id IS NULL AND status = ANY(` + a.add(f.Statuses()) + `)`)
	if f.Workflow != "" {
		b.WriteString(` AND workflow = ` + a.add(f.Workflow))
	}
	if !f.FinishedBefore.IsZero() {
		b.WriteString(` AND finished_at < ` + a.add(nanos(f.FinishedBefore)))
	}
	// Oldest first; but when the newest Keep are spared, newest first past
	// them.
	order := `finished_at, id`
	if f.Keep > 0 {
		order = `finished_at DESC, id DESC`
		b.WriteString(` ORDER BY ` + order + ` OFFSET ` + a.add(f.Keep))
	}
	var lim any // NULL: no limit
	if limit >= 0 {
		lim = limit
	}
	b.WriteString(`
),
roots(id) AS (
  SELECT id FROM matching WHERE id NOT IN (SELECT id FROM blocked WHERE parent_id IS NULL)
  ORDER BY ` + order + ` LIMIT ` + a.add(lim) + `
),
tree(id) AS (
  SELECT id FROM roots
  UNION
  SELECT r.id FROM runs r JOIN tree t ON r.parent_id = t.id
)
`)
	return b.String(), a
}

// inTree restricts a table's run_id to the selected runs.
const inTree = `run_id IN (SELECT id FROM tree)`

// countPurge counts what a purge would delete, in one statement so the
// counts come from one snapshot.
func (s *Store) countPurge(ctx context.Context, f store.PurgeFilter) (store.PurgeResult, error) {
	sel, a := purgeSelection(f, -1)
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
	var n [8]int64
	err := s.pool.QueryRow(ctx, q, a...).Scan(&n[0], &n[1], &n[2], &n[3], &n[4], &n[5], &n[6], &n[7])
	return store.PurgeResult{Runs: int(n[0]), Steps: int(n[1]), Attempts: int(n[2]), Events: int(n[3]),
		Pauses: int(n[4]), Answers: int(n[5]), Timers: int(n[6]), Versions: int(n[7])}, err
}

// purgeOnce deletes one batch of at most limit top-level runs with their
// trees in one transaction, and reports how many top-level runs it took.
// The selected ids go to a temporary table (dropped at commit) first so
// that the selection is evaluated once and every delete sees the same
// runs.
func (s *Store) purgeOnce(ctx context.Context, f store.PurgeFilter, limit int) (store.PurgeResult, int, error) {
	var res store.PurgeResult
	roots := 0
	err := s.groupTx(ctx, "purge", func(ctx context.Context, tx dbtx) error {
		res, roots = store.PurgeResult{}, 0
		for _, q := range []string{
			`CREATE TEMP TABLE IF NOT EXISTS purge_ids (id TEXT COLLATE "C" PRIMARY KEY) ON COMMIT DROP`,
			`CREATE TEMP TABLE IF NOT EXISTS purge_versions (version TEXT COLLATE "C" PRIMARY KEY) ON COMMIT DROP`,
			`DELETE FROM purge_ids`,
			`DELETE FROM purge_versions`,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("prepare purge: %w", err)
			}
		}
		sel, a := purgeSelection(f, limit)
		if _, err := tx.Exec(ctx, sel+`INSERT INTO purge_ids (id) SELECT id FROM tree`, a...); err != nil {
			return fmt.Errorf("select runs: %w", err)
		}
		var n int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM purge_ids p JOIN runs r ON r.id = p.id WHERE r.parent_id IS NULL`).Scan(&n); err != nil {
			return fmt.Errorf("count selected runs: %w", err)
		}
		roots = int(n)
		if roots == 0 {
			return nil
		}
		// The versions of the selected runs, to drop those no other run
		// refers to once the runs are gone.
		if _, err := tx.Exec(ctx, `INSERT INTO purge_versions (version) SELECT DISTINCT version FROM runs WHERE id IN (SELECT id FROM purge_ids)`); err != nil {
			return fmt.Errorf("collect versions: %w", err)
		}
		const selected = ` WHERE run_id IN (SELECT id FROM purge_ids)`
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
			{`DELETE FROM runs WHERE id IN (SELECT id FROM purge_ids)`, &res.Runs},
			{`DELETE FROM versions WHERE version IN (SELECT version FROM purge_versions)
				AND NOT EXISTS (SELECT 1 FROM runs WHERE runs.version = versions.version)`, &res.Versions},
		} {
			tag, err := tx.Exec(ctx, d.q)
			if err != nil {
				return fmt.Errorf("%s: %w", strings.Fields(d.q)[2], err)
			}
			*d.n = int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return store.PurgeResult{}, 0, err
	}
	return res, roots, nil
}

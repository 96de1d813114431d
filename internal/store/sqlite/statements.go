package sqlite

import "strings"

// The statements of the hot path (a step's commit), prepared once when the
// store opens.
const (
	sqlAdvanceRun = `UPDATE runs SET rev = rev + 1, updated_at = ?,
				status = COALESCE(?, status), state = COALESCE(?, state), inputs = COALESCE(?, inputs),
				outputs = CASE WHEN ? THEN NULL ELSE COALESCE(?, outputs) END,
				error = CASE WHEN ? THEN NULL ELSE COALESCE(?, error) END,
				finished_at = CASE WHEN ? THEN NULL ELSE COALESCE(?, finished_at) END,
				event_seq = event_seq + ?
			WHERE id = ? AND rev = ? RETURNING rev, event_seq`
	// sqlSetStatus changes a run's status alone, and only when it differs:
	// naming status in an UPDATE rewrites its entries in the runs indexes
	// (runs_status, runs_status_created) even when the value stays, three
	// pages more for the commit to write. An answer that ends at the next
	// question leaves a run waiting as it was.
	sqlSetStatus = `UPDATE runs SET status = ? WHERE id = ? AND rev = ? AND status <> ?`
	// sqlStepRun is sqlAdvanceRun for the common commit that only moves
	// the run (its state and events): it names no indexed column, so SQLite
	// leaves the runs indexes alone instead of rewriting their entries.
	sqlStepRun = `UPDATE runs SET rev = rev + 1, updated_at = ?, state = COALESCE(?, state), event_seq = event_seq + ?
			WHERE id = ? AND rev = ? RETURNING rev, event_seq`
	// sqlStepRunAt is sqlStepRun for a caller that says what the run's
	// event sequence is (store.Commit.EventSeq): a plain UPDATE, cheaper
	// than reading results back with RETURNING; no row updated means the
	// claim or the revision is off, and sqlStepRun decides which.
	sqlStepRunAt = `UPDATE runs SET rev = rev + 1, updated_at = ?, state = COALESCE(?, state), event_seq = event_seq + ?
			WHERE id = ? AND rev = ? AND event_seq = ?`
	sqlClosePause    = `UPDATE pauses SET status = ?, answer = ?, answered_at = ? WHERE run_id = ? AND seq = ? AND status = 'open'`
	sqlInsertAnswer  = `INSERT INTO answers (run_id, pause_seq, step_key, value, at) VALUES (?, ?, ?, ?, ?) RETURNING id`
	sqlUpsertAttempt = `INSERT INTO attempts (run_id, key, visit, attempt, status, error, started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (run_id, key, visit, attempt) DO UPDATE SET status = excluded.status, error = excluded.error, started_at = excluded.started_at, finished_at = excluded.finished_at`
	sqlInsertPause = `INSERT INTO pauses (run_id, seq, step_key, visit, kind, request, status, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?, 'open', ?, ?)`
	// sqlInsertRun records a new run, its event sequence already counting
	// the events inserted with it.
	sqlInsertRun = `INSERT INTO runs (id, workflow, version, status, inputs, outputs, error, state, parent_id, rev, event_seq, created_at, updated_at, finished_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)`

	// The savepoint around each write of a shared transaction (group.go).
	sqlSavepoint         = `SAVEPOINT write`
	sqlRollbackSavepoint = `ROLLBACK TO write`
	sqlReleaseSavepoint  = `RELEASE write`
)

var hotStatements = []string{sqlAdvanceRun, sqlSetStatus, sqlStepRun, sqlStepRunAt, sqlClosePause, sqlInsertAnswer, sqlUpsertAttempt, sqlInsertPause, sqlInsertRun,
	sqlSavepoint, sqlRollbackSavepoint, sqlReleaseSavepoint}

// maxRows is the most rows a multi-row INSERT carries; there is one for
// every count up to it. A commit's events and steps go in as few
// statements as that allows.
// A step records 1 to 3 events, an answer with the steps that ride along
// with it 5 to 8: one statement each. The long merged commits of pure steps
// (the engine's ahead.go) take one per 8 rows. Larger sizes would save more
// there (a 32-row statement: 11 µs of store CPU per merged step against 13.5
// with 8 rows, BenchmarkCommitMerged) but prepared they cost every start
// 0.6 ms, and unprepared (parsed at each use) more than they save.
const maxRows = 8

// chunks splits n rows into statements of maxRows rows, the rest last.
func chunks(n int) []int {
	var out []int
	for ; n > 0; n -= maxRows {
		out = append(out, min(n, maxRows))
	}
	return out
}

// multiRow is an INSERT of n rows: head, n times row (comma-separated),
// then tail.
func multiRow(head, row, tail string, n int) string {
	return head + strings.Repeat(row+", ", n-1) + row + tail
}

// sqlInsertEvents[n] inserts n events (1 ≤ n ≤ maxRows).
var sqlInsertEvents = variants("INSERT INTO events (run_id, seq, type, step_id, data, at) VALUES ", "(?, ?, ?, ?, ?, ?)", "")

// sqlUpsertSteps[n] records n steps (1 ≤ n ≤ maxRows); ord (recording
// order) is set by a step's first insert only, as the rowid was before
// migration 0004: see stepOrd. Rows of one statement are applied in order,
// so a step recorded twice in one commit ends as its last row says.
var sqlUpsertSteps = variants("INSERT INTO steps (run_id, key, visit, step_id, status, output, answer, error, attempts, started_at, finished_at, ord) VALUES ",
	"(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	` ON CONFLICT (run_id, key, visit) DO UPDATE SET step_id = excluded.step_id, status = excluded.status, output = excluded.output,
	answer = excluded.answer, error = excluded.error, attempts = excluded.attempts, started_at = excluded.started_at, finished_at = excluded.finished_at`)

// variants makes the multi-row statement of every count up to maxRows.
func variants(head, row, tail string) []string {
	out := make([]string, maxRows+1)
	for n := 1; n <= maxRows; n++ {
		out[n] = multiRow(head, row, tail, n)
	}
	return out
}

// eagerRows are the row counts whose statements are prepared when the
// store opens, as before there were more: events of up to 4 rows, steps of
// one. The others are prepared on first use (Store.execRows): each prepared
// statement stays in memory, and an idle server that never answers or
// merges should not carry them (about 0.5 MB for all sixteen).
func eagerRows(n int, events bool) bool {
	if events {
		return n <= 4
	}
	return n == 1
}

func init() {
	for n := 1; n <= maxRows; n++ {
		if eagerRows(n, true) {
			hotStatements = append(hotStatements, sqlInsertEvents[n])
		}
		if eagerRows(n, false) {
			hotStatements = append(hotStatements, sqlUpsertSteps[n])
		}
	}
}

// stepOrd is the recording order of the i-th step of the commit that
// brought the run to revision rev: above every rowid the steps had before
// migration 0004 (they keep those as ord), increasing with each commit.
func stepOrd(rev int64, i int) int64 { return rev<<32 | int64(i) }

package sqlite

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
	sqlClosePause   = `UPDATE pauses SET status = ?, answer = ?, answered_at = ? WHERE run_id = ? AND seq = ? AND status = 'open'`
	sqlInsertAnswer = `INSERT INTO answers (run_id, pause_seq, step_key, value, at) VALUES (?, ?, ?, ?, ?) RETURNING id`
	// sqlUpsertStep records a step; ord (recording order) is set by the
	// first insert only, as the rowid was before migration 0004: see
	// stepOrd.
	sqlUpsertStep = `INSERT INTO steps (run_id, key, visit, step_id, status, output, answer, error, attempts, started_at, finished_at, ord)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (run_id, key, visit) DO UPDATE SET step_id = excluded.step_id, status = excluded.status, output = excluded.output,
					answer = excluded.answer, error = excluded.error, attempts = excluded.attempts, started_at = excluded.started_at, finished_at = excluded.finished_at`
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

var hotStatements = []string{sqlAdvanceRun, sqlStepRun, sqlStepRunAt, sqlClosePause, sqlInsertAnswer, sqlUpsertStep, sqlUpsertAttempt, sqlInsertPause, sqlInsertRun,
	sqlSavepoint, sqlRollbackSavepoint, sqlReleaseSavepoint}

// maxEventRows is the most events one INSERT carries.
const maxEventRows = 4

// sqlInsertEvents[n] inserts n events.
var sqlInsertEvents = func() []string {
	out := make([]string, maxEventRows+1)
	for n := 1; n <= maxEventRows; n++ {
		q := "INSERT INTO events (run_id, seq, type, step_id, data, at) VALUES (?, ?, ?, ?, ?, ?)"
		for i := 1; i < n; i++ {
			q += ", (?, ?, ?, ?, ?, ?)"
		}
		out[n] = q
	}
	return out
}()

func init() { hotStatements = append(hotStatements, sqlInsertEvents[1:]...) }

// stepOrd is the recording order of the i-th step of the commit that
// brought the run to revision rev: above every rowid the steps had before
// migration 0004 (they keep those as ord), increasing with each commit.
func stepOrd(rev int64, i int) int64 { return rev<<32 | int64(i) }

// Package sqlite is the embedded SQLite backend of the store: WAL, one
// writer connection (SQLite has one writer anyway; a single connection
// avoids busy-waiting between our own goroutines) and a pool of read-only
// connections, synchronous=FULL unless told otherwise.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	moderncsqlite "modernc.org/sqlite" // the pure-Go SQLite driver
	sqlite3 "modernc.org/sqlite/lib"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/store"
)

// Durability settings.
const (
	// Full fsyncs every commit: a committed step survives power loss.
	Full = code.DurabilityFull
	// Normal fsyncs at checkpoints: a committed step survives a crash of
	// the process but the last commits may be lost on power loss.
	Normal = code.DurabilityNormal
)

// Options tune the database.
type Options struct {
	// Durability is Full (default) or Normal.
	Durability string
	// BusyTimeout bounds how long a connection waits for a lock held by
	// another process (default 10s).
	BusyTimeout time.Duration
	// Readers is the size of the read pool (default: number of CPUs, at
	// least 2).
	Readers int
}

// Store is the SQLite store.
type Store struct {
	w *sql.DB // the one writer connection
	r *sql.DB // read-only pool

	// Statements prepared once on the writer: parsing SQL costs more than
	// executing these small statements. Read-only after Open.
	stmts map[string]*sql.Stmt
	// late holds the multi-row statements prepared on first use (see
	// eagerRows), an immutable map replaced whole; wanted the ones used
	// unprepared since, for the group's leader to prepare once its
	// transaction is done (group.go).
	late   atomic.Pointer[map[string]*sql.Stmt]
	wantMu sync.Mutex
	wanted map[string]bool

	// reads are the read pool's prepared statements (reads.go).
	reads readStmts

	// purgeBatch overrides defaultPurgeBatch (tests use small batches).
	purgeBatch int

	// commits counts write transactions that committed, writes the
	// Commit, CreateRun and PutVersion calls they carried (see Stats).
	commits, writes atomic.Int64
	// checkpoints counts the checkpointer's checkpoints (see Stats).
	checkpoints atomic.Int64
	ckpt        *checkpointer

	// group queues concurrent writes into shared transactions (group.go).
	group group
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and applies
// migrations.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	sync := "FULL"
	switch opts.Durability {
	case "", Full:
	case Normal:
		sync = "NORMAL"
	default:
		return nil, fmt.Errorf("open store: durability %q: want %q or %q", opts.Durability, Full, Normal)
	}
	busy := opts.BusyTimeout
	if busy <= 0 {
		busy = 10 * time.Second
	}
	readers := opts.Readers
	if readers <= 0 {
		readers = max(runtime.NumCPU(), 2)
	}
	dsn := func(readOnly bool) string {
		q := url.Values{}
		q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous("+sync+")")
		q.Add("_pragma", "foreign_keys(1)")
		if readOnly {
			q.Add("_pragma", "query_only(1)")
		} else {
			q.Set("_txlock", "immediate")
			// The checkpointer does it, off the commit path (checkpoint.go).
			q.Add("_pragma", "wal_autocheckpoint(0)")
			// Statement journals (one per savepoint of a group commit,
			// group.go) stay in memory: spilled to a temporary file,
			// every page a batch touches cost a write system call.
			// They only serve rollbacks inside a transaction, so nothing
			// durable lives there.
			q.Add("_pragma", "temp_store(MEMORY)")
		}
		return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	}
	w, err := sql.Open("sqlite", dsn(false))
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	// Several processes may open a new database at once: switching it to
	// WAL and migrating it can meet a lock that the busy timeout does not
	// cover, so those steps are retried a few times.
	var err2 error
	for attempt := 0; attempt < 8; attempt++ {
		if err2 = w.PingContext(ctx); err2 == nil {
			if err2 = migrate(ctx, w); err2 == nil {
				break
			}
		}
		if !isBusy(err2) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 25 * time.Millisecond)
	}
	if err2 != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err2)
	}
	r, err := sql.Open("sqlite", dsn(true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	st := &Store{w: w, r: r, stmts: map[string]*sql.Stmt{}}
	if err := st.prepare(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	ck, err := sql.Open("sqlite", dsn(false))
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	ck.SetMaxOpenConns(1)
	ck.SetMaxIdleConns(1)
	ck.SetConnMaxLifetime(0)
	st.startCheckpointer(ck)
	return st, nil
}

// Close closes the database.
func (s *Store) Close() error {
	for _, st := range s.stmts {
		st.Close()
	}
	if late := s.late.Load(); late != nil {
		for _, st := range *late {
			st.Close()
		}
	}
	s.reads.close()
	return errors.Join(s.stopCheckpointer(), s.r.Close(), s.w.Close())
}

// stmt returns the prepared form of query for use inside tx. Statements
// are prepared when the store opens, or for the larger multi-row ones
// after a transaction that used them (prepare needs the one writer
// connection, which a running transaction holds); a query that was not
// prepared runs unprepared.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, bool) {
	st, ok := s.stmts[query]
	if !ok {
		if late := s.late.Load(); late != nil {
			st, ok = (*late)[query]
		}
		if !ok {
			return nil, false
		}
	}
	if b := s.group.stmts.Load(); b != nil && b.tx == tx {
		return b.bound(ctx, st), true
	}
	return tx.StmtContext(ctx, st), true
}

// prepare prepares the statements of the hot path on the writer.
func (s *Store) prepare(ctx context.Context) error {
	for _, q := range hotStatements {
		st, err := s.w.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.stmts[q] = st
	}
	return nil
}

// execRows runs a multi-row statement in tx: prepared when it has been
// prepared, else unprepared this time and wanted prepared.
func (s *Store) execRows(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st, ok := s.stmt(ctx, tx, query); ok {
		return st.ExecContext(ctx, args...)
	}
	s.wantMu.Lock()
	if s.wanted == nil {
		s.wanted = map[string]bool{}
	}
	s.wanted[query] = true
	s.wantMu.Unlock()
	return tx.ExecContext(ctx, query, args...)
}

// prepareWanted prepares the statements execRows ran unprepared. It needs
// the writer connection free: the group's leader calls it after its
// transaction, before handing the writer on. A statement that fails to
// prepare stays unprepared.
func (s *Store) prepareWanted(ctx context.Context) {
	s.wantMu.Lock()
	wanted := s.wanted
	s.wanted = nil
	s.wantMu.Unlock()
	if len(wanted) == 0 {
		return
	}
	next := map[string]*sql.Stmt{}
	if late := s.late.Load(); late != nil {
		maps.Copy(next, *late)
	}
	for q := range wanted {
		if _, done := next[q]; done {
			continue
		}
		if st, err := s.w.PrepareContext(ctx, q); err == nil {
			next[q] = st
		}
	}
	s.late.Store(&next)
}

// exec runs a statement in tx, prepared when it is a hot one.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st, ok := s.stmt(ctx, tx, query); ok {
		return st.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// queryRow runs a single-row statement in tx, prepared when it is a hot one.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st, ok := s.stmt(ctx, tx, query); ok {
		return st.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// Stats are counters of a store's activity since it was opened.
type Stats struct {
	// Commits counts write transactions that committed: a batch of step
	// commits, created runs and new versions written together (see
	// group.go), every purge batch. Each one is a write to the WAL and,
	// with Full durability, an fsync: the figure that decides how many
	// steps per second the store can take.
	Commits int64
	// Writes counts the Commit, CreateRun and PutVersion calls that were
	// written (a PutVersion of a stored version writes nothing).
	// Concurrent ones share a transaction (group commit), so Writes may
	// exceed the transactions they took.
	Writes int64
	// Checkpoints counts the background checkpoints that ran (checkpoint.go).
	Checkpoints int64
}

// Stats returns the store's counters. It is cheap (atomic loads) and safe
// to call concurrently.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Writes: s.writes.Load(), Checkpoints: s.checkpoints.Load()}
}

// Writer exposes the writer connection for benchmarks that compare the
// engine with raw commits on the same database.
func (s *Store) Writer() *sql.DB { return s.w }

// isBusy reports whether err is SQLite's "database is locked" (BUSY or
// LOCKED, extended codes included): another connection held the lock past
// the busy timeout.
func isBusy(err error) bool {
	var se *moderncsqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	code := se.Code() & 0xff // the primary code of an extended one
	return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
}

// unavailable marks a busy database (isBusy: another process kept the
// write lock past the busy timeout) as store.ErrUnavailable: the write was
// not made, and may be tried again.
func unavailable(err error) error {
	if isBusy(err) && !errors.Is(err, store.ErrUnavailable) {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return err
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func nullNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

func nullable(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Ping implements store.Store: a read on the read connections (a write
// lock held elsewhere does not make the database unavailable to reads).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.r.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil {
		return fmt.Errorf("ping: %w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// Package postgres is the PostgreSQL backend of the store, on pgx/v5 and
// its connection pool: the same Store as store/sqlite, passing the same
// conformance suite (store/storetest). It also keeps what the replicas on
// one database share besides runs — the workflow library (library.go,
// passing library/librarytest), the server key (keys.go), catalog
// documents (catalogs.go), the one-time secret pages (secretpages.go) —
// and carries their changes between them (feed.go: LISTEN/NOTIFY). Writes go through a group commit
// (group.go) as SQLite's do, so that the commits of concurrent runs share
// one transaction; reads go to the pool. The schema is applied by embedded
// migrations (migrate.go) under an advisory lock.
//
// Times are kept as Unix nanoseconds and JSON as the bytes the engine
// wrote, as in SQLite, so that both stores give back the same values.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"stepwise.dev/stepwise/internal/store"
)

// Durability settings, as store/sqlite names them.
const (
	// Full waits for every commit to be flushed to the server's disk
	// (synchronous_commit as the server has it, on by default).
	Full = "full"
	// Normal sets synchronous_commit off for the store's sessions: a
	// commit returns before its WAL is flushed, so the last commits may be
	// lost if the server crashes (never a corrupted database).
	Normal = "normal"
)

// Options tune the store.
type Options struct {
	// Durability is Full (default) or Normal.
	Durability string
	// MaxConns bounds the connection pool (default: pgxpool's, the larger
	// of 4 and the number of CPUs). One connection at a time writes (the
	// group commit's leader); the others serve reads.
	MaxConns int32
	// ConnectTimeout bounds how long connecting may take (default 10s).
	ConnectTimeout time.Duration
}

// Store is the PostgreSQL store.
type Store struct {
	pool *pgxpool.Pool

	// purgeBatch overrides defaultPurgeBatch (tests use small batches).
	purgeBatch int

	// commits counts write transactions that committed, writes the
	// Commit, CreateRun and PutVersion calls they carried (see Stats).
	commits, writes atomic.Int64

	// lanes queue concurrent writes into shared transactions (group.go).
	lanes []group

	// runs is the feed of run changes (runfeed.go).
	runs *Feed
}

var _ store.Store = (*Store)(nil)

// IsURL reports whether s is a PostgreSQL connection URL
// (postgres:// or postgresql://), the form Open takes.
func IsURL(s string) bool {
	lower := strings.ToLower(s)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// Redact returns the URL with its password replaced by "xxxxx", fit to be
// shown or logged. A string that does not parse as a URL is shown as its
// scheme alone.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		scheme, _, _ := strings.Cut(rawURL, "://")
		return scheme + "://…"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// scrub removes the URL's password from an error's text, whatever the
// driver put there, and keeps the text to one line.
func scrub(rawURL string, err error) string {
	msg := err.Error()
	if u, perr := url.Parse(rawURL); perr == nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
		if pw := u.Query().Get("password"); pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return strings.Join(strings.Fields(msg), " ")
}

// Open connects to the database at rawURL (postgres://user@host:port/db?…)
// and applies the migrations it has not seen. Errors name the URL without
// its password.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	shown := Redact(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open store %s: invalid database URL: %s", shown, scrubParse(rawURL, err))
	}
	switch opts.Durability {
	case "", Full:
	case Normal:
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	default:
		return nil, fmt.Errorf("open store: durability %q: want %q or %q", opts.Durability, Full, Normal)
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if cfg.MaxConns < 2 {
		cfg.MaxConns = 2 // a writer and a reader
	}
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if cfg.ConnConfig.ConnectTimeout <= 0 || cfg.ConnConfig.ConnectTimeout > timeout {
		cfg.ConnConfig.ConnectTimeout = timeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %s", shown, scrub(rawURL, err))
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: cannot connect: %s", shown, scrub(rawURL, err))
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %s", shown, scrub(rawURL, err))
	}
	s := &Store{pool: pool, lanes: make([]group, writeLanes)}
	if s.runs, err = s.feedOn(ctx, "stepwise_runs_"); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store %s: %s", shown, scrub(rawURL, err))
	}
	return s, nil
}

// scrubParse words a URL parse error without the connection string the
// driver quotes in it.
func scrubParse(rawURL string, err error) string {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		if inner := errors.Unwrap(pe); inner != nil {
			return scrub(rawURL, inner)
		}
	}
	return scrub(rawURL, err)
}

// Close closes the pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// Pool exposes the connection pool (benchmarks, tests).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Stats are counters of a store's activity since it was opened.
type Stats struct {
	// Commits counts write transactions that committed: a batch of
	// commits, created runs and new versions written together (see
	// group.go), every purge batch.
	Commits int64
	// Writes counts the Commit, CreateRun and PutVersion calls that were
	// written; concurrent ones share a transaction, so Writes may exceed
	// Commits.
	Writes int64
}

// Stats returns the store's counters (atomic loads).
func (s *Store) Stats() Stats {
	return Stats{Commits: s.commits.Load(), Writes: s.writes.Load()}
}

// SQLSTATE codes the store tells apart.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeDeadlock            = "40P01"
)

// sqlState is the SQLSTATE of a server error ("" for any other error).
// unavailable marks err as store.ErrUnavailable when it says the server
// could not be reached or dropped the connection: a network error, a
// connection closed under the call, the server shutting down (class 57P)
// or refusing connections (class 08). Other errors are returned as they are.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	code := sqlState(err)
	var netErr net.Error
	var connErr *pgconn.ConnectError
	switch {
	case code != "":
		if !strings.HasPrefix(code, "08") && !strings.HasPrefix(code, "57P") {
			return err
		}
	case errors.As(err, &netErr), errors.As(err, &connErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, pgconn.ErrConnClosed), pgconn.SafeToRetry(err):
	default:
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
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

func nullNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return fromNanos(*n)
}

// nullable is a time as a nullable column: NULL when zero.
func nullable(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// blob is JSON as a nullable BYTEA column: NULL when empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// blobOrNil is blob for an array element.
func blobOrNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullStringPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Ping implements store.Store: one round trip on a pooled connection.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w: %w", store.ErrUnavailable, err)
	}
	return nil
}

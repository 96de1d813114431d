package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxReadStmts bounds how many distinct read statements stay prepared: the
// read path uses a handful of shapes (a run, its steps, its pauses, a page
// of runs under a few filters); a caller inventing many more runs them
// unprepared rather than growing the cache without end.
const maxReadStmts = 64

// readStmts keeps the read pool's statements prepared, keyed by their SQL.
// Compiling a small query costs more than running it (a quarter of a
// run_get's CPU before this cache), so each is compiled once per read
// connection: a database/sql statement prepared on the pool prepares itself
// again, lazily, on each connection it lands on. Statements are prepared on
// first use rather than when the store opens, so that opening stays cheap.
type readStmts struct {
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

// get returns the prepared form of query on db, preparing it on first use;
// nil when the cache is full or preparing failed (the caller then runs the
// query unprepared, which reports the error if it is the query's).
func (c *readStmts) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	c.mu.RLock()
	st := c.m[query]
	c.mu.RUnlock()
	if st != nil {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[query]; st != nil {
		return st
	}
	if len(c.m) >= maxReadStmts {
		return nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st
}

// close closes the prepared statements.
func (c *readStmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// readQuery runs a query on the read pool, prepared.
func (s *Store) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.reads.get(ctx, s.r, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.r.QueryContext(ctx, query, args...)
}

// readQueryRow runs a single-row query on the read pool, prepared.
func (s *Store) readQueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.reads.get(ctx, s.r, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.r.QueryRowContext(ctx, query, args...)
}

// byKey is the context for a read of one run's records by key (its row,
// steps or pauses): once ctx is found live, the read runs detached from its
// cancellation. Such a read is short and bounded by one run's records
// (tens of microseconds for a run of a few steps), so stopping it midway
// saves little, while a cancellable context costs every query two
// goroutines — database/sql's watch over the rows and the driver's
// interrupt watcher — started, woken and ended around a read cheaper than
// they are (a request's context is always cancellable).
func byKey(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

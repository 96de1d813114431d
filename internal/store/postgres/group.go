package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Group commit, as in store/sqlite (see its group.go): every transaction
// pays fixed costs (BEGIN, COMMIT, the WAL flush the server waits for)
// whatever it carries, so concurrent writes of this process queue here
// (in one of writeLanes lanes) and whoever finds its lane's writer free
// becomes the leader: it takes what is queued and writes it in one
// transaction on a connection of its own, each write inside its own
// savepoint, so that one write's failure (a conflict, a closed pause, a
// missing run; a deadlock's victim is written again) rolls back that write
// alone and is returned to its caller only. Every caller of a batch
// returns after the one COMMIT. A lone write is a batch of one, written at
// once, without a savepoint, in as few round trips as it can (runLone).
//
// A batch carries at most maxBatch writes: each savepoint that writes is a
// subtransaction (two for a commit in one round trip, commit.go), and a
// transaction with more than 64 of them overflows the server's per-backend
// cache of subtransaction ids, which slows every other session's
// snapshots while it lasts.

// maxBatch is the most writes one transaction carries.
const maxBatch = 30

// groupOp is one caller's write waiting in the queue.
type groupOp struct {
	ctx context.Context
	fn  func(context.Context, dbtx) error
	err error
	// lead is set when the previous leader hands the writer to this op.
	lead bool
	// wake is signaled once: the op was written (or failed), or it leads.
	wake chan struct{}
}

// groupOps recycles ops. Each use gets a new wake channel: a channel
// belongs to the goroutines (and, under testing/synctest, the bubble) of
// the call that made it.
var groupOps = sync.Pool{New: func() any { return new(groupOp) }}

// group is the queue of writes and whether a leader is writing: one lane.
type group struct {
	mu    sync.Mutex
	queue []*groupOp
	busy  bool
}

// writeLanes is how many lanes writes are spread over, each with its own
// queue, leader and connection, by the key of what they write (the run,
// the version): one writer leaves the process waiting on round trips while
// the server has cores to spare (64 runs recording effect steps kept a
// third of a core busy). Writes of one key always take the same lane, so
// two lanes never lock the same run and cannot deadlock on runs; a write
// that is a deadlock's victim all the same (a purge, which deletes many
// runs) is written again.
const writeLanes = 3

// lane returns the lane of writes of key.
func (s *Store) lane(key string) *group {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return &s.lanes[h.Sum32()%uint32(len(s.lanes))]
}

// groupTx runs fn in a write transaction shared with whatever other writes
// are queued when the writer becomes free, and returns once that
// transaction committed (nil) or fn's own error (nothing of fn written).
// fn runs with a context that is not canceled: an interrupted statement
// would end the connection and the whole shared transaction. A caller
// whose ctx ends before its turn gets ctx's error and nothing is written.
//
// key names what fn writes (a run's id, a version): writes of one key go
// through one lane (see writeLanes).
func (s *Store) groupTx(ctx context.Context, key string, fn func(context.Context, dbtx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := groupOps.Get().(*groupOp)
	op.ctx, op.fn, op.err, op.lead, op.wake = ctx, fn, nil, false, make(chan struct{}, 1)
	g := s.lane(key)
	g.mu.Lock()
	g.queue = append(g.queue, op)
	if g.busy {
		g.mu.Unlock()
		<-op.wake
		if !op.lead {
			return op.release()
		}
	} else {
		g.busy = true
		g.mu.Unlock()
	}
	// This goroutine leads: write what is queued (its own op first among
	// it, being the queue's head), then hand the writer to the first op
	// still queued.
	g.mu.Lock()
	n := min(len(g.queue), maxBatch)
	batch := make([]*groupOp, n)
	copy(batch, g.queue)
	rest := copy(g.queue, g.queue[n:])
	clear(g.queue[rest:])
	g.queue = g.queue[:rest]
	g.mu.Unlock()
	s.writeBatch(batch, op)
	g.mu.Lock()
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		g.busy = false
	}
	g.mu.Unlock()
	return op.release()
}

// release returns the op to the pool and its error to the caller.
func (op *groupOp) release() error {
	err := op.err
	op.ctx, op.fn, op.err, op.wake = nil, nil, nil, nil
	groupOps.Put(op)
	return err
}

// writeBatch writes batch in one transaction and wakes every op in it but
// self (the leader's own, which its goroutine returns itself).
func (s *Store) writeBatch(batch []*groupOp, self *groupOp) {
	if err := s.runBatch(batch); err != nil {
		for _, op := range batch {
			if op.err == nil {
				op.err = err
			}
		}
	}
	for _, op := range batch {
		if op != self {
			op.wake <- struct{}{}
		}
	}
}

// runBatch is the shared transaction. An error it returns (BEGIN, a
// savepoint statement, COMMIT) means nothing of the batch was written; the
// ops' own errors are in op.err.
func (s *Store) runBatch(batch []*groupOp) error {
	ctx := context.Background()
	if len(batch) == 1 {
		return s.runLone(batch[0])
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	written := 0
	for i, op := range batch {
		if op.err = op.ctx.Err(); op.err != nil {
			continue
		}
		// Each op in a savepoint of its own, opened by its first
		// statements (one round trip for a commit) and never released: a
		// failed op rolls back to it, the others stay. Names are unique,
		// so a rollback can only reach its own op's savepoint.
		// A write chosen as a deadlock's victim (batches written at once
		// may lock two runs in opposite orders) is undone alone, which
		// frees its locks, and written again.
		for attempt := 0; ; attempt++ {
			name := "w" + strconv.Itoa(i) + "_" + strconv.Itoa(attempt)
			sp := &lazyTx{q: tx, first: `SAVEPOINT ` + name}
			op.err = op.fn(context.WithoutCancel(op.ctx), sp)
			if sp.err != nil {
				_ = tx.Rollback(ctx)
				return fmt.Errorf("savepoint: %w", sp.err)
			}
			if op.err == nil {
				written++
				break
			}
			if sp.begun {
				// Undo this op alone; should the connection be gone, this
				// fails and so does the batch.
				if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT `+name); err != nil {
					_ = tx.Rollback(ctx)
					return fmt.Errorf("roll back to savepoint: %w", err)
				}
			}
			if sqlState(op.err) != codeDeadlock || attempt == 2 {
				break
			}
		}
	}
	if written == 0 {
		return tx.Rollback(ctx)
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.commits.Add(1)
	s.writes.Add(int64(written))
	return nil
}

// dbtx is what a write runs its statements through: the transaction of
// its batch.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// runLone writes a batch of one op in a transaction of its own, in one
// round trip fewer than runBatch's: the transaction begins with the op's
// first statements (lazyTx), then one COMMIT. A lone write is what every
// serial step records, so the round trip is a third of its cost.
func (s *Store) runLone(op *groupOp) error {
	ctx := context.Background()
	if op.err = op.ctx.Err(); op.err != nil {
		return nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx := &lazyTx{q: conn, first: `BEGIN`, lone: true}
	op.err = op.fn(context.WithoutCancel(op.ctx), tx)
	for attempt := 0; attempt < 2 && op.err != nil && sqlState(op.err) == codeDeadlock && tx.err == nil; attempt++ {
		// A deadlock's victim (see runBatch): roll back, write again.
		if tx.begun {
			if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
				conn.Conn().Close(ctx)
				return err
			}
		}
		tx = &lazyTx{q: conn, first: `BEGIN`, lone: true}
		op.err = op.fn(context.WithoutCancel(op.ctx), tx)
	}
	switch {
	case tx.err != nil:
		// BEGIN itself failed: nothing was written; the connection is
		// suspect.
		conn.Conn().Close(ctx)
		return tx.err
	case op.err == nil && tx.committed:
		// The op's batch carried the COMMIT (commitOneTrip).
	case !tx.begun:
		return nil // the op sent nothing (or rolled back what it sent)
	case op.err != nil:
		if _, err := conn.Exec(ctx, `ROLLBACK`); err != nil {
			conn.Conn().Close(ctx)
		}
		return nil
	default:
		if _, err := conn.Exec(ctx, `COMMIT`); err != nil {
			conn.Conn().Close(ctx)
			return err
		}
	}
	s.commits.Add(1)
	s.writes.Add(1)
	return nil
}

// lazyTx runs statements through q after first (BEGIN: a transaction;
// SAVEPOINT: an op's savepoint in a shared one), which goes in the same
// batch as a first SendBatch (no round trip of its own), or alone before a
// first Exec or query. Nothing sent: nothing begun.
type lazyTx struct {
	q     dbtx
	first string
	begun bool
	err   error // first's failure
	// lone: the transaction is the op's own (runLone), which a commit may
	// end itself (committed).
	lone, committed bool
}

func (t *lazyTx) begin(ctx context.Context) {
	if !t.begun && t.err == nil {
		t.begun = true
		_, t.err = t.q.Exec(ctx, t.first)
	}
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begin(ctx); t.err != nil {
		return pgconn.CommandTag{}, t.err
	}
	return t.q.Exec(ctx, sql, args...)
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begin(ctx); t.err != nil {
		return nil, t.err
	}
	return t.q.Query(ctx, sql, args...)
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.begin(ctx); t.err != nil {
		return errRow{t.err}
	}
	return t.q.QueryRow(ctx, sql, args...)
}

func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.begun || t.err != nil {
		return t.q.SendBatch(ctx, b)
	}
	t.begun = true
	withFirst := &pgx.Batch{QueuedQueries: append([]*pgx.QueuedQuery{{SQL: t.first}}, b.QueuedQueries...)}
	br := t.q.SendBatch(ctx, withFirst)
	if _, err := br.Exec(); err != nil {
		t.err = err
	}
	return br
}

// errRow is a row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

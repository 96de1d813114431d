package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit. SQLite has one writer, and every transaction pays fixed
// costs (BEGIN, COMMIT, the WAL frames of the pages it dirtied and, with
// Full durability, an fsync) whatever it carries. When the drivers of many
// runs commit at once, they would queue on the writer connection and pay
// those costs one after another. Instead, writes queue here and whoever
// finds the writer free becomes the leader: it takes everything queued at
// that moment and writes it in one transaction, each write inside its own
// savepoint, so that one write's failure (a conflict, a closed pause, a
// missing run) rolls back that write alone and is returned to its caller
// only. Every caller of a batch returns after the one COMMIT: an
// acknowledged write is as durable as if it had committed alone. A lone
// write does not wait for company — it is a batch of one, written at once,
// without a savepoint.

// groupOp is one caller's write waiting in the queue.
type groupOp struct {
	ctx context.Context
	fn  func(context.Context, *sql.Tx) error
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

// group is the queue of writes and whether a leader is writing.
type group struct {
	mu    sync.Mutex
	queue []*groupOp
	spare []*groupOp // the previous batch's slice, reused
	busy  bool
	// stmts holds the transaction-bound forms of the prepared statements
	// for the batch being written (see txStmts).
	stmts atomic.Pointer[txStmts]
	cache map[*sql.Stmt]*sql.Stmt // txStmts.m, reused by each batch
}

// txStmts keeps the forms of prepared statements bound to one shared
// transaction: binding one (Tx.StmtContext) allocates a wrapper on every
// use, and a batch runs the same few statements for each of its writes
// (and three savepoint statements around each). Only the goroutine writing
// the batch reads the map; others see a different tx and bind their own.
type txStmts struct {
	tx *sql.Tx
	m  map[*sql.Stmt]*sql.Stmt
}

// bound returns st bound to tx, binding it once per batch.
func (t *txStmts) bound(ctx context.Context, st *sql.Stmt) *sql.Stmt {
	b, ok := t.m[st]
	if !ok {
		b = t.tx.StmtContext(ctx, st)
		t.m[st] = b
	}
	return b
}

// groupTx runs fn in a write transaction shared with whatever other writes
// are queued when the writer becomes free, and returns once that
// transaction committed (nil) or fn's own error (nothing of fn written).
// fn runs with a context that is not canceled: a statement interrupted
// half-way would roll back the whole shared transaction. A caller whose
// ctx ends before its turn gets ctx's error and nothing is written.
func (s *Store) groupTx(ctx context.Context, fn func(context.Context, *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := groupOps.Get().(*groupOp)
	op.ctx, op.fn, op.err, op.lead, op.wake = ctx, fn, nil, false, make(chan struct{}, 1)
	g := &s.group
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
	// This goroutine leads: write what is queued (its own op among it),
	// then hand the writer to the first op that queued meanwhile.
	g.mu.Lock()
	batch := g.queue
	g.queue = g.spare[:0]
	g.spare = nil
	g.mu.Unlock()
	s.writeBatch(batch, op)
	s.prepareWanted(context.Background()) // the writer is free, and still ours
	clear(batch)
	g.mu.Lock()
	g.spare = batch[:0]
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
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	written := 0
	if len(batch) == 1 {
		op := batch[0]
		if op.err = op.ctx.Err(); op.err == nil {
			op.err = op.fn(context.WithoutCancel(op.ctx), tx)
		}
		if op.err == nil {
			written++
		}
	} else {
		// A fresh txStmts per batch (a writer outside the group may still
		// hold the previous one and read its tx); the map is reused, only
		// batch writers touch it, one at a time.
		if s.group.cache == nil {
			s.group.cache = map[*sql.Stmt]*sql.Stmt{}
		}
		s.group.stmts.Store(&txStmts{tx: tx, m: s.group.cache})
		defer func() {
			s.group.stmts.Store(nil)
			clear(s.group.cache)
		}()
		for _, op := range batch {
			if op.err = op.ctx.Err(); op.err != nil {
				continue
			}
			if _, err := s.exec(ctx, tx, sqlSavepoint); err != nil {
				_ = tx.Rollback()
				return fmt.Errorf("savepoint: %w", err)
			}
			if op.err = op.fn(context.WithoutCancel(op.ctx), tx); op.err != nil {
				// Undo this op alone. Should SQLite have rolled back the
				// whole transaction (an I/O error, a full disk), this
				// fails and so does the batch.
				if _, err := s.exec(ctx, tx, sqlRollbackSavepoint); err != nil {
					_ = tx.Rollback()
					return fmt.Errorf("roll back to savepoint: %w", err)
				}
			} else {
				written++
			}
			if _, err := s.exec(ctx, tx, sqlReleaseSavepoint); err != nil {
				_ = tx.Rollback()
				return fmt.Errorf("release savepoint: %w", err)
			}
		}
	}
	if written == 0 {
		return tx.Rollback()
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.commits.Add(1)
	s.writes.Add(int64(written))
	return nil
}

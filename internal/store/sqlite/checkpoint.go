package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// Checkpoints. SQLite's automatic checkpoint runs inside the commit that
// crosses its threshold (1,000 WAL pages): that commit copies the log into
// the database and, in either durability, fsyncs the database file before
// its caller gets an answer — a latency spike every few hundred steps (it
// set the p99 of run_continue). The writer connection turns the automatic
// checkpoint off and a goroutine of the store checkpoints on its own
// connection instead, after commits, off every caller's path. A PASSIVE
// checkpoint never waits for the writer or for readers: the log keeps
// growing while readers hold old snapshots, as with the automatic one.

// checkpointEvery is how often the checkpointer looks for new commits: at
// most ten checkpoints a second, where the automatic one, under a heavy
// load of small commits, would run after every few hundred.
const checkpointEvery = 100 * time.Millisecond

// checkpointer copies the WAL into the database in the background.
type checkpointer struct {
	db      *sql.DB // one connection of its own
	stop    chan struct{}
	done    chan struct{}
	stopped sync.Once
}

// startCheckpointer starts checkpointing db for s.
func (s *Store) startCheckpointer(db *sql.DB) {
	c := &checkpointer{db: db, stop: make(chan struct{}), done: make(chan struct{})}
	s.ckpt = c
	go func() {
		defer close(c.done)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		var seen int64
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
			}
			n := s.commits.Load()
			if n == seen {
				continue
			}
			if s.checkpoint(context.Background()) {
				seen = n
			}
		}
	}()
}

// checkpoint runs a PASSIVE checkpoint and reports whether it ran.
func (s *Store) checkpoint(ctx context.Context) bool {
	var busy, frames, copied int
	if err := s.ckpt.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		return false
	}
	s.checkpoints.Add(1)
	return true
}

// stopCheckpointer stops the goroutine and closes its connection (once:
// a store may be closed twice).
func (s *Store) stopCheckpointer() error {
	if s.ckpt == nil {
		return nil
	}
	var err error
	s.ckpt.stopped.Do(func() {
		close(s.ckpt.stop)
		<-s.ckpt.done
		err = s.ckpt.db.Close()
	})
	return err
}

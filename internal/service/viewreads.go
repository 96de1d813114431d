package service

import (
	"context"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/cache"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// maxViewReads bounds how many runs keep the rows their last view read;
// maxViewSteps bounds the steps one of them keeps (a long run reads afresh).
const (
	maxViewReads = 256
	maxViewSteps = 64
)

// viewReads keeps what GetRun read of a run besides its row — the recorded
// steps and, for a waiting run, the open pauses — so that a run read again
// unchanged (an agent or a person polling a waiting run) costs one query
// instead of three. Kept rows are used only while the run's row, read
// afresh, shows the revision and update time they were read at: every
// change to a run's steps or pauses (from this process or another) goes
// through a store commit that moves both, so equal values mean nothing
// was recorded since. Runs that may have sub-workflows are never kept:
// their children change without moving the parent's revision. The rows
// are shared between reads and never modified.
type viewReads struct {
	once sync.Once
	m    *cache.LRU[string, viewRows] // the maxViewReads runs read last
}

func (c *viewReads) rows() *cache.LRU[string, viewRows] {
	c.once.Do(func() { c.m = cache.New[string, viewRows](maxViewReads) })
	return c.m
}

// viewRows are the rows read for one revision of a run.
type viewRows struct {
	rev              int64
	created, updated time.Time
	steps            []store.Step
	pauses           []store.Pause // read only when the run is waiting
	// pause is ownPause of pauses, made once: its request decoded, its
	// token signed (the same claims sign to the same token); made again
	// when its token nears its expiry (engine.TokenFresh), as Pauses does.
	pause *engine.Pause
}

// current reports whether rows were read at the run row's revision.
func (r viewRows) current(run store.Run) bool {
	return r.rev == run.Rev && r.updated.Equal(run.UpdatedAt) && r.created.Equal(run.CreatedAt)
}

// get returns the kept rows of run when they are current.
func (c *viewReads) get(run store.Run) (viewRows, bool) {
	r, ok := c.rows().Get(run.ID)
	if !ok || !r.current(run) {
		return viewRows{}, false
	}
	return r, true
}

// keep keeps the rows read for run.
func (c *viewReads) keep(run store.Run, r viewRows) {
	r.rev, r.created, r.updated = run.Rev, run.CreatedAt, run.UpdatedAt
	c.rows().Add(run.ID, r)
}

// drop forgets a run (read and not found).
func (c *viewReads) drop(id string) {
	c.rows().Remove(id)
}

// keepable reports whether a view of run may keep its rows: not while the
// run moves (its revision changes with every step), not for runs with many
// steps, not for runs that may have children (see viewReads).
func (s *Service) keepable(ctx context.Context, run store.Run, steps int) bool {
	if run.Status == store.StatusRunning || run.Status == store.StatusPending || steps > maxViewSteps {
		return false
	}
	return !s.Engine.MayHaveChildren(ctx, run.Version)
}

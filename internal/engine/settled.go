package engine

import (
	"context"

	"stepwise.dev/stepwise/internal/store"
)

// Settled is a run as a commit just left it, waiting on the one pause that
// commit opened: the run's row as the store now holds it (its revision,
// event sequence, status, inputs, outputs and error, from the row the
// driver loaded and every commit it made since; not its update time, which
// the store sets) and that pause's row. A
// caller that needs the run's view right after a Continue (run_continue's
// result) builds it from this instead of reading back what was just
// written. It is a snapshot at the commit: anything later (a cancel, a
// timer) shows on the next read, as it would had the read come first.
type Settled struct {
	Run   store.Run
	Pause store.Pause
}

// settledBy is the run as commit c left it, or nil unless c left it
// waiting on the pause c opened and nothing else: a top-level run without
// groups (whose questions may be open side by side) and without
// sub-workflows (whose pauses a view may show as its own).
func (e *Engine) settledBy(ctx context.Context, rs *runState, c store.Commit) *Settled {
	if c.OpenPause == nil || rs.run.Status != store.StatusWaiting || rs.run.ParentID != "" ||
		hasGroups(rs.wf) || e.mayHaveChildren(ctx, rs.run.Version) {
		return nil
	}
	p := *c.OpenPause
	p.RunID, p.Status = rs.run.ID, store.PauseOpen
	// As the store gives times back: UTC, without a monotonic reading.
	p.ExpiresAt, p.CreatedAt = p.ExpiresAt.UTC().Round(0), p.CreatedAt.UTC().Round(0)
	return &Settled{Run: rs.run, Pause: p}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrInvalidFilter: a purge filter that could select runs that must not be
// deleted (a status that is not final, a negative Keep).
var ErrInvalidFilter = errors.New("invalid purge filter")

// FinishedStatuses are the statuses a run can be purged in.
var FinishedStatuses = []string{StatusSucceeded, StatusFailed, StatusCanceled}

// PurgeFilter selects finished runs to delete with their history. It
// matches top-level runs only: a sub-workflow run goes with its root, and
// a tree is never touched while any run in it is still active.
type PurgeFilter struct {
	// Workflow limits the purge to runs of this workflow ("" = any).
	Workflow string
	// Status limits the purge to these final statuses (empty = all of
	// FinishedStatuses). Any other status makes the filter invalid.
	Status []string
	// FinishedBefore limits the purge to runs that finished strictly
	// before this time (zero = any time).
	FinishedBefore time.Time
	// Keep spares the newest Keep matching runs (by finish time): a
	// retention of "at most N runs" purges with Keep N.
	Keep int
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
}

// Validate checks that the filter selects only finished runs.
func (f PurgeFilter) Validate() error {
	for _, st := range f.Status {
		if !Finished(st) {
			return fmt.Errorf("%w: status %q is not final (only %v runs can be purged)", ErrInvalidFilter, st, FinishedStatuses)
		}
	}
	if f.Keep < 0 {
		return fmt.Errorf("%w: keep %d is negative", ErrInvalidFilter, f.Keep)
	}
	return nil
}

// Statuses returns the statuses the filter selects: Status, or every final
// status when it is empty.
func (f PurgeFilter) Statuses() []string {
	if len(f.Status) == 0 {
		return FinishedStatuses
	}
	return f.Status
}

// PurgeResult counts the records a purge deleted (or, for a dry run, would
// delete).
type PurgeResult struct {
	// Runs counts top-level and sub-workflow runs.
	Runs     int `json:"runs" jsonschema:"runs deleted: top-level runs and their sub-workflow runs"`
	Steps    int `json:"steps"`
	Attempts int `json:"attempts"`
	Events   int `json:"events"`
	Pauses   int `json:"pauses"`
	Answers  int `json:"answers"`
	Timers   int `json:"timers"`
	// Versions counts workflow versions no run refers to any more.
	Versions int `json:"versions" jsonschema:"workflow versions deleted because no remaining run used them"`
}

// Add returns the sum of two results (a purge in several batches, or in
// several passes of a retention policy).
func (r PurgeResult) Add(o PurgeResult) PurgeResult {
	return PurgeResult{Runs: r.Runs + o.Runs, Steps: r.Steps + o.Steps, Attempts: r.Attempts + o.Attempts,
		Events: r.Events + o.Events, Pauses: r.Pauses + o.Pauses, Answers: r.Answers + o.Answers,
		Timers: r.Timers + o.Timers, Versions: r.Versions + o.Versions}
}

// PurgeInBatches is a backend's PurgeRuns: it checks f, counts what a dry
// run would delete (count), or deletes batch by batch (once: at most limit
// top-level runs with their trees in one transaction, reporting how many
// top-level runs it took) until a batch comes back short, adding up what
// each deleted.
func PurgeInBatches(ctx context.Context, f PurgeFilter, limit int,
	count func(context.Context, PurgeFilter) (PurgeResult, error),
	once func(context.Context, PurgeFilter, int) (PurgeResult, int, error)) (PurgeResult, error) {
	if err := f.Validate(); err != nil {
		return PurgeResult{}, fmt.Errorf("purge runs: %w", err)
	}
	if f.DryRun {
		res, err := count(ctx, f)
		if err != nil {
			return res, fmt.Errorf("purge runs (dry run): %w", err)
		}
		return res, nil
	}
	var total PurgeResult
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("purge runs: %w", err)
		}
		res, roots, err := once(ctx, f, limit)
		if err != nil {
			return total, fmt.Errorf("purge runs: %w", err)
		}
		total = total.Add(res)
		if roots < limit {
			return total, nil
		}
	}
}

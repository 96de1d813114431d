package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// CodeFilterInvalid: a purge filter that would select runs that are not
// finished (or is otherwise malformed).
const CodeFilterInvalid = "FILTER_INVALID"

// PurgeFilter selects finished top-level runs to delete with their whole
// history and their sub-workflow runs. The zero filter selects every
// finished run.
type PurgeFilter struct {
	// Workflow limits the purge to runs of this workflow ("" = any).
	Workflow string
	// Status limits it to runs that ended so: succeeded, failed or
	// canceled (empty = all three). Any other status is refused.
	Status []string
	// OlderThan limits it to runs that finished at least this long ago by
	// the service's clock (0 = any time).
	OlderThan time.Duration
	// Keep spares the newest Keep matching runs.
	Keep int
	// DryRun counts what would be purged and deletes nothing.
	DryRun bool
}

// PurgeRuns deletes the finished runs f selects and reports what went (or,
// for a dry run, what would go). A run whose tree still has an unfinished
// run is never touched. A purged run is RUN_NOT_FOUND afterwards.
func (s *Service) PurgeRuns(ctx context.Context, f PurgeFilter) (store.PurgeResult, error) {
	if s.Stateless() {
		return store.PurgeResult{}, NotStateless("purging runs")
	}
	if f.OlderThan < 0 {
		return store.PurgeResult{}, filterInvalid("older_than", fmt.Sprintf("older than %s: the age must not be negative", f.OlderThan), nil)
	}
	sf := store.PurgeFilter{Workflow: f.Workflow, Status: f.Status, Keep: f.Keep, DryRun: f.DryRun}
	if f.OlderThan > 0 {
		sf.FinishedBefore = s.now().Add(-f.OlderThan)
	}
	res, err := s.Store.PurgeRuns(ctx, sf)
	if errors.Is(err, store.ErrInvalidFilter) {
		arg := "status"
		if f.Keep < 0 {
			arg = "keep"
		}
		return res, filterInvalid(arg, err.Error(), err)
	}
	return res, err
}

// filterInvalid is the error of a purge filter; arg names the filter.
func filterInvalid(arg, msg string, err error) error {
	return &engine.Error{Code: CodeFilterInvalid, Category: engine.CategoryValidation, Argument: arg, Message: msg, Err: err,
		Suggestion: "purge selects finished runs only: give status succeeded, failed or canceled (or none), and a positive age"}
}

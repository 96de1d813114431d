package engine

import (
	"context"
	"errors"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/store"
)

// CodeRunBusy: a call read a run and committed a change to it, and the run
// changed in between (another driver, answer or control committed) every
// time it tried. The call changed nothing; it may be made again.
const CodeRunBusy = code.RunBusy

// conflictAttempts bounds how often one call reads a run again and retries
// its commit after a conflict.
const conflictAttempts = 10

// retryConflicts calls op until it returns anything but store.ErrConflict
// (the run's revision moved between op's read and its commit), at most
// conflictAttempts times. Before each new attempt it waits a little longer
// (none before the second, then 5 ms more each time, at most 25 ms),
// returning ctx's error if ctx ends first. The last conflict becomes a
// RUN_BUSY error that still matches store.ErrConflict. op must read the run
// afresh on every call.
func retryConflicts(ctx context.Context, runID, what string, op func() error) error {
	for attempt := 1; ; attempt++ {
		err := op()
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		if attempt >= conflictAttempts {
			return &Error{Code: CodeRunBusy, Category: CategoryConflict, RunID: runID, Retryable: true, Err: err,
				Message:    what + ": the run kept changing while this call tried to change it; nothing was changed",
				Suggestion: "read the run again and repeat the call"}
		}
		wait := time.Duration(min(attempt-1, 5)) * 5 * time.Millisecond
		if wait == 0 {
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

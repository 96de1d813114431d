package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

func TestRetryConflicts(t *testing.T) {
	t.Parallel()
	conflict := fmt.Errorf("commit: %w", store.ErrConflict)
	other := errors.New("disk on fire")
	for _, c := range []struct {
		name      string
		conflicts int   // how many calls conflict first
		then      error // what the next call returns
		calls     int
		code      string
		is        error
	}{
		{"first call succeeds", 0, nil, 1, "", nil},
		{"succeeds after conflicts", 3, nil, 4, "", nil},
		{"another error is returned as is", 2, other, 3, "", other},
		{"the last allowed attempt succeeds", conflictAttempts - 1, nil, conflictAttempts, "", nil},
		{"always conflicting is RUN_BUSY", 1 << 30, nil, conflictAttempts, CodeRunBusy, store.ErrConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := retryConflicts(context.Background(), "run-1", "retry", func() error {
				calls++
				if calls <= c.conflicts {
					return conflict
				}
				return c.then
			})
			if calls != c.calls {
				t.Errorf("op called %d times, want %d", calls, c.calls)
			}
			if CodeOf(err) != c.code {
				t.Errorf("code %q, want %q (%v)", CodeOf(err), c.code, err)
			}
			if c.is == nil && err != nil || c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("err %v, want %v", err, c.is)
			}
			var ee *Error
			if c.code != "" && (!errors.As(err, &ee) || ee.RunID != "run-1" || !ee.Retryable || ee.Category != CategoryConflict) {
				t.Errorf("RUN_BUSY error %+v", ee)
			}
		})
	}
}

// TestRetryConflictsWatchesTheContext: a canceled call stops waiting
// between attempts and returns the context's error.
func TestRetryConflictsWatchesTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := retryConflicts(ctx, "run-1", "cancel", func() error {
		calls++
		if calls == 2 {
			cancel() // the wait before the third attempt sees it
		}
		return store.ErrConflict
	})
	if !errors.Is(err, context.Canceled) || calls != 2 {
		t.Fatalf("err %v after %d calls, want context.Canceled after 2", err, calls)
	}
}

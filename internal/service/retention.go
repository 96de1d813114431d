package service

import (
	"context"
	"errors"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// defaultRetentionEvery is how often a service applies its retention
// policy: history grows by runs, and an hour late on a policy measured in
// days (or in hundreds of runs) changes nothing that matters.
const defaultRetentionEvery = time.Hour

// retentionPolicy is what Options.Retention and Options.MaxRuns ask for.
type retentionPolicy struct {
	olderThan time.Duration
	maxRuns   int
}

func (p retentionPolicy) active() bool { return p.olderThan > 0 || p.maxRuns > 0 }

// startRetention applies the policy now and then every interval until
// Close, in a goroutine of its own.
func (s *Service) startRetention(every time.Duration) {
	if every <= 0 {
		every = defaultRetentionEvery
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.stopRetention = func() { cancel(); <-done }
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			// Failures are logged by ApplyRetention; the next tick tries again.
			_, _ = s.ApplyRetention(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// ApplyRetention applies the service's retention policy once: it purges
// the finished runs that finished longer ago than Options.Retention, then
// all but the newest Options.MaxRuns finished runs — a run goes when
// either limit says so. It logs what it purged. Without a policy it does
// nothing.
func (s *Service) ApplyRetention(ctx context.Context) (store.PurgeResult, error) {
	p := s.retention
	var total store.PurgeResult
	var passes []PurgeFilter
	if p.olderThan > 0 {
		passes = append(passes, PurgeFilter{OlderThan: p.olderThan})
	}
	if p.maxRuns > 0 {
		passes = append(passes, PurgeFilter{Keep: p.maxRuns})
	}
	for _, f := range passes {
		res, err := s.PurgeRuns(ctx, f)
		total = total.Add(res)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				s.log.Warn("retention: purge failed", "retention", p.olderThan, "max_runs", p.maxRuns, "purged_runs", total.Runs, "error", err)
			}
			return total, err
		}
	}
	if total.Runs > 0 {
		s.log.Info("retention: purged finished runs", "runs", total.Runs, "steps", total.Steps, "events", total.Events,
			"versions", total.Versions, "retention", p.olderThan, "max_runs", p.maxRuns)
	}
	return total, nil
}

// Retention is how long a finished run is kept after it finished (0:
// without limit of age; MaxRuns may still purge it).
func (s *Service) Retention() time.Duration { return s.retention.olderThan }

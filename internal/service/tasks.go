package service

import (
	"context"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// Refusal returns the refused answers recorded for the open pause seq of
// a run (see RecordRefusal).
func (s *Service) Refusal(ctx context.Context, runID string, seq int64) (engine.Refusal, error) {
	return s.Engine.Refusal(ctx, runID, seq)
}

// RecordRefusal records, with the run, that an answer to its open pause
// seq was refused and why (problem must hold no secret): every replica,
// and the server after a restart, sees the same count. ok is false when
// the pause is no longer open.
func (s *Service) RecordRefusal(ctx context.Context, runID string, seq int64, problem string) (engine.Refusal, bool, error) {
	return s.Engine.RecordRefusal(ctx, runID, seq, problem)
}

// LastEvent returns a run's last recorded event (a zero Event when it has
// none): where a running run is, at the cost of one row, however many
// steps it has.
func (s *Service) LastEvent(ctx context.Context, runID string) (store.Event, error) {
	run, err := s.Store.GetRun(ctx, runID)
	if err != nil {
		return store.Event{}, runNotFound(runID, err)
	}
	if run.EventSeq == 0 {
		return store.Event{}, nil
	}
	evs, err := s.Store.Events(ctx, runID, run.EventSeq-1, 1)
	if err != nil || len(evs) == 0 {
		return store.Event{}, err
	}
	return evs[0], nil
}

// OpenPauses returns every open pause of a waiting run, its sub-workflow
// runs' included (a view shows the first only): the questions and agent
// steps of parallel branches wait together.
func (s *Service) OpenPauses(ctx context.Context, runID string) ([]engine.Pause, error) {
	run, err := s.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, runNotFound(runID, err)
	}
	if run.Status != store.StatusWaiting {
		return nil, nil
	}
	kids, err := s.Engine.Children(ctx, run)
	if err == nil && len(kids) < engine.MaxChildren {
		return s.Engine.PausesWith(ctx, run.ID, kids)
	}
	return s.Engine.Pauses(ctx, run.ID)
}

// Children returns the ids of a run's sub-workflow runs.
func (s *Service) Children(ctx context.Context, runID string) ([]string, error) {
	run, err := s.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, runNotFound(runID, err)
	}
	kids, err := s.Engine.Children(ctx, run)
	ids := make([]string, len(kids))
	for i, k := range kids {
		ids[i] = k.ID
	}
	return ids, err
}

package service

import "context"

// RewindRun starts a new run from a top-level question (or agent step) of
// a run, offering the run's answers as defaults; the run is canceled if
// it was not finished. It returns the new run's id.
func (s *Service) RewindRun(ctx context.Context, runID, toStep string) (string, error) {
	if err := s.checkRunPolicies(ctx, runID); err != nil {
		return "", err
	}
	return s.Engine.RewindRun(ctx, runID, toStep)
}

// RestartRun starts a run over with the same inputs, offering its answers
// as defaults; the run is canceled if it was not finished. It returns the
// new run's id.
func (s *Service) RestartRun(ctx context.Context, runID string) (string, error) {
	if err := s.checkRunPolicies(ctx, runID); err != nil {
		return "", err
	}
	return s.Engine.RestartRun(ctx, runID)
}

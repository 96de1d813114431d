package service

import (
	"context"

	"stepwise.dev/stepwise/engine"
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

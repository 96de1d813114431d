package service

import "context"

// TokenBelongsTo reports whether a pause token was signed for runID or for
// one of its sub-workflow runs (a child's pause shows on its ancestors).
// A token that is not authentic belongs to no run: false (Continue says
// what is wrong with it).
func (s *Service) TokenBelongsTo(ctx context.Context, tok, runID string) bool {
	id, ok := s.Engine.TokenRun(tok)
	for range 16 { // nesting is bounded well below this
		if !ok || id == runID {
			return ok
		}
		run, err := s.Store.GetRun(ctx, id)
		if err != nil || run.ParentID == "" {
			return false
		}
		id = run.ParentID
	}
	return false
}

// TokenAuthentic reports whether tok was signed with this server's key,
// expired or not.
func (s *Service) TokenAuthentic(tok string) bool {
	_, ok := s.Engine.TokenRun(tok)
	return ok
}

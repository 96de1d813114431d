package service

import (
	"context"

	"stepwise.dev/stepwise/internal/workflow"
)

// PlannedSteps is how many steps a run of runID records when it runs to
// the end — every step, nested ones included, each once — or 0 when that
// is not known beforehand: its workflow jumps (switch), loops (repeat,
// foreach) or the run cannot be read.
func (s *Service) PlannedSteps(ctx context.Context, runID string) int {
	l, err := s.Definition(ctx, runID)
	if err != nil {
		return 0
	}
	n, ok := countSteps(l.Workflow.Steps)
	if !ok {
		return 0
	}
	return n
}

func countSteps(steps []*workflow.Step) (int, bool) {
	n := 0
	for _, st := range steps {
		if st.Switch != nil || st.Foreach != nil || st.Repeat != nil {
			return 0, false
		}
		n++
		for _, group := range [][]*workflow.Step{st.Parallel, st.Steps} {
			k, ok := countSteps(group)
			if !ok {
				return 0, false
			}
			n += k
		}
	}
	return n, true
}

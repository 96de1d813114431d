package service

import (
	"fmt"
	"slices"
	"strings"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/workflow"
)

// maxClosest bounds the names a not-found error suggests.
const maxClosest = 3

// closestNames returns up to maxClosest of names near name, closest first:
// those within a few edits (a third of the longer name, at least 2) or that
// contain it or are contained in it.
func closestNames(name string, names []string) []string {
	type scored struct {
		name string
		d    int
	}
	var near []scored
	for _, n := range names {
		if n == name {
			continue
		}
		d := workflow.EditDistance(name, n)
		limit := max(2, max(len(name), len(n))/3)
		if d > limit && (len(name) < 3 || !strings.Contains(n, name) && !strings.Contains(name, n)) {
			continue
		}
		near = append(near, scored{n, d})
	}
	slices.SortStableFunc(near, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, min(len(near), maxClosest))
	for _, s := range near[:min(len(near), maxClosest)] {
		out = append(out, s.name)
	}
	return out
}

// workflowNotFound is the error of a library name with no workflow, with
// the closest names among the kinds given (the saved workflows when none
// is). msg "" says the default.
func (s *Service) workflowNotFound(name, msg string, err error, kinds ...library.Kind) *engine.Error {
	if msg == "" {
		msg = fmt.Sprintf("no workflow %q in the library", name)
	}
	e := &engine.Error{Code: CodeNotFound, Category: engine.CategoryNotFound, Workflow: name, Name: name,
		Message: msg, Err: err, Suggestion: "list the library and use a name from it"}
	if s.Library != nil {
		if len(kinds) == 0 {
			kinds = []library.Kind{library.Saved}
		}
		var names []string
		for _, k := range kinds {
			if ns, lerr := s.Library.Names(k); lerr == nil {
				names = append(names, ns...)
			}
		}
		slices.Sort(names)
		e.Closest = closestNames(name, slices.Compact(names))
	}
	if len(e.Closest) > 0 {
		e.Message += "; did you mean " + strings.Join(e.Closest, ", ") + "?"
	}
	return e
}

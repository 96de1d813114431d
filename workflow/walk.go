package workflow

import "sort"

// Flatten lists steps with everything nested in them (parallel branches,
// foreach bodies), depth first, in document order.
func Flatten(steps []*Step) []*Step {
	var out []*Step
	for _, s := range steps {
		if s == nil {
			continue
		}
		out = append(out, s)
		out = append(out, Flatten(s.Parallel)...)
		out = append(out, Flatten(s.Steps)...)
	}
	return out
}

// Step returns the step with the given id, at any depth, or nil.
func (w *Workflow) Step(id string) *Step {
	for _, s := range Flatten(w.Steps) {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// InputNames lists the declared inputs in the order they were written
// (sorted when that order is unknown).
func (w *Workflow) InputNames() []string {
	if len(w.InputOrder) == len(w.Inputs) {
		return w.InputOrder
	}
	names := make([]string, 0, len(w.Inputs))
	for n := range w.Inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// HasSecret reports whether the question's answer (or any field of the
// form) is secret.
func (a *Ask) HasSecret() bool {
	if a.Secret {
		return true
	}
	for _, f := range a.Fields {
		if f != nil && f.Secret {
			return true
		}
	}
	return false
}

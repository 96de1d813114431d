package workflow

import (
	"fmt"
	"sort"
)

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

// EnvUse is a place a workflow declares an environment variable it reads.
type EnvUse struct {
	Name string
	// Path is the JSON pointer of the declaration.
	Path string
}

// EnvUses lists the environment variables the workflow may read — its env
// list, its inputs' env and its questions' (and their fields') env — in
// the order of the document.
func (w *Workflow) EnvUses() []EnvUse {
	var out []EnvUse
	for i, name := range w.Env {
		out = append(out, EnvUse{Name: name, Path: fmt.Sprintf("/env/%d", i)})
	}
	for _, name := range w.InputNames() {
		if in := w.Inputs[name]; in.Env != "" {
			out = append(out, EnvUse{Name: in.Env, Path: Pointer("inputs", name, "env")})
		}
	}
	for _, s := range Flatten(w.Steps) {
		if s.Ask == nil {
			continue
		}
		if s.Ask.Env != "" {
			out = append(out, EnvUse{Name: s.Ask.Env, Path: s.Path + "/ask/env"})
		}
		for i, f := range s.Ask.Fields {
			if f != nil && f.Env != "" {
				out = append(out, EnvUse{Name: f.Env, Path: fmt.Sprintf("%s/ask/fields/%d/env", s.Path, i)})
			}
		}
	}
	return out
}

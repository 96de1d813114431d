package workflow

import (
	"strings"
	"sync"

	"stepwise.dev/stepwise/expr"
)

// Secrets is where secret values flow in a workflow, decided from its
// definition alone, so that the engine (which seals and masks) and every
// view (which shows ***) agree. Its rules (WORKFLOWS.md, section 16):
//
//   - The sources are the inputs and questions (or form fields) marked
//     secret, and the environment variables they are read from.
//   - An expression is secret when it reads a secret value: a secret input,
//     a secret answer, the output of a secret step, the item of a foreach
//     over secret items, or a whole map that holds one (inputs, steps,
//     steps.x). A reference inside declassify(…) does not count.
//   - A step's output is secret when the step computes data from its
//     arguments — transform, log, a sub-workflow — and one of its `with`
//     templates is secret, and a group's (parallel, foreach) when the
//     output of a step inside it is. Any other action's output is not: a credential
//     sent in a header does not make the response secret (the run's
//     masker still hides the secret values, and what secret expressions
//     rendered, wherever they show).
//   - A run output is secret when its template is.
//
// A Secrets is safe for concurrent use.
type Secrets struct {
	inputs  map[string]bool
	env     map[string]bool
	answers map[string]*Ask // questions with a secret answer, by step id
	outputs map[string]bool // steps whose output is secret
	items   bool            // some foreach iterates over secret items
	run     map[string]bool // run outputs that are secret
	none    bool            // nothing in the workflow is secret
	memo    sync.Map        // expression source -> bool
}

// DataActions are the actions whose output is computed from their `with`:
// a secret argument makes their output secret.
var DataActions = map[string]bool{"transform": true, "log": true}

// Secrets returns the workflow's secret flow, computed once.
func (w *Workflow) Secrets() *Secrets {
	if s := w.secrets.Load(); s != nil {
		return s
	}
	s := analyzeSecrets(w)
	w.secrets.CompareAndSwap(nil, s)
	return w.secrets.Load()
}

// SecretsWith is Secrets with more inputs secret than the workflow marks:
// those a run was given values computed from secrets (a sub-workflow
// called with them). It is computed anew on every call.
func (w *Workflow) SecretsWith(inputs []string) *Secrets {
	if len(inputs) == 0 {
		return w.Secrets()
	}
	return analyzeSecrets(w, inputs...)
}

func analyzeSecrets(w *Workflow, extra ...string) *Secrets {
	s := &Secrets{inputs: map[string]bool{}, env: map[string]bool{}, answers: map[string]*Ask{},
		outputs: map[string]bool{}, run: map[string]bool{}}
	for _, name := range extra {
		s.inputs[name] = true
	}
	for name, in := range w.Inputs {
		if in != nil && in.Secret {
			s.inputs[name] = true
			if in.Env != "" {
				s.env[in.Env] = true
			}
		}
	}
	steps := Flatten(w.Steps)
	for _, st := range steps {
		a := st.Ask
		if a == nil || !a.HasSecret() {
			continue
		}
		s.answers[st.ID] = a
		if a.Secret && a.Env != "" {
			s.env[a.Env] = true
		}
		for _, f := range a.Fields {
			if f != nil && (f.Secret || a.Secret) && f.Env != "" {
				s.env[f.Env] = true
			}
		}
	}
	if len(s.inputs) == 0 && len(s.answers) == 0 {
		s.none = true
		return s
	}
	// A step's output can make later (and, through goto, earlier) steps
	// secret: go round until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, st := range steps {
			if !s.items && st.Foreach != nil && s.value(st.Foreach) {
				s.items, changed = true, true
			}
			if s.outputs[st.ID] {
				continue
			}
			if (DataActions[st.Uses] || st.Workflow != "") && s.value(st.With) {
				s.outputs[st.ID], changed = true, true
				continue
			}
			// A group's output holds the outputs of the steps inside.
			for _, in := range Flatten(append(append([]*Step{}, st.Parallel...), st.Steps...)) {
				if s.outputs[in.ID] {
					s.outputs[st.ID], changed = true, true
					break
				}
			}
		}
		if changed {
			s.memo.Clear() // what an expression reads may have become secret
		}
	}
	for name, v := range w.Outputs {
		if s.value(v) {
			s.run[name] = true
		}
	}
	return s
}

// None reports whether the workflow has no secret at all.
func (s *Secrets) None() bool { return s.none }

// Input reports whether the input of that name is secret.
func (s *Secrets) Input(name string) bool { return s.inputs[name] }

// StepOutput reports whether the output of the step is secret.
func (s *Secrets) StepOutput(id string) bool { return s.outputs[id] }

// RunOutput reports whether the run output of that name is secret.
func (s *Secrets) RunOutput(name string) bool { return s.run[name] }

// HasRunOutputs reports whether any run output is secret.
func (s *Secrets) HasRunOutputs() bool { return len(s.run) > 0 }

// Value reports whether any template inside v (a string, or maps and
// lists of them) is secret.
func (s *Secrets) Value(v any) bool {
	if s.none {
		return false
	}
	return s.value(v)
}

func (s *Secrets) value(v any) bool {
	switch x := v.(type) {
	case string:
		return s.Template(x)
	case map[string]any:
		for _, e := range x {
			if s.value(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if s.value(e) {
				return true
			}
		}
	}
	return false
}

// Template reports whether a template reads a secret value.
func (s *Secrets) Template(t string) bool {
	if s.none || !strings.Contains(t, "${{") {
		return false
	}
	segs, err := expr.Scan(t)
	if err != nil {
		return false
	}
	for _, sg := range segs {
		if sg.Expr && s.Expr(sg.Text) {
			return true
		}
	}
	return false
}

// Expr reports whether an expression reads a secret value. One that does
// not parse counts as secret (it is never evaluated).
func (s *Secrets) Expr(src string) bool {
	if s.none {
		return false
	}
	if v, ok := s.memo.Load(src); ok {
		return v.(bool)
	}
	secret := true
	if a, err := expr.Analyze(src); err == nil {
		secret = false
		for _, r := range a.Refs {
			if !r.Declassified && s.ref(r) {
				secret = true
				break
			}
		}
	}
	s.memo.Store(src, secret)
	return secret
}

// ref reports whether a reference reads a secret value.
func (s *Secrets) ref(r expr.Ref) bool {
	switch r.Root {
	case "inputs":
		if len(r.Path) == 0 {
			return len(s.inputs) > 0
		}
		return s.inputs[r.Path[0]]
	case "env":
		if len(r.Path) == 0 {
			return len(s.env) > 0
		}
		return s.env[r.Path[0]]
	case "steps":
		if len(r.Path) == 0 {
			return len(s.answers) > 0 || len(s.outputs) > 0
		}
		id := r.Path[0]
		if len(r.Path) == 1 {
			return s.answers[id] != nil || s.outputs[id]
		}
		switch r.Path[1] {
		case "output":
			return s.outputs[id]
		case "answer":
			a := s.answers[id]
			if a == nil {
				return false
			}
			if a.Secret || len(r.Path) == 2 {
				return true
			}
			for _, f := range a.Fields {
				if f != nil && f.Name == r.Path[2] {
					return f.Secret
				}
			}
			return true
		}
		return false // status, error (masked), attempts
	case "item":
		return s.items
	case "index", "run", "output":
		// A foreach's position, the run's own fields (its error is
		// masked), the output of choices_from's action.
		return false
	}
	return true // a name the checker refuses: never evaluated
}

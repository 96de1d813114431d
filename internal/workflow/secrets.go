package workflow

import (
	"strings"
	"sync"

	"stepwise.dev/stepwise/internal/expr"
)

// Secrets is where secret values flow in a workflow, decided from its
// definition alone, so that the engine (which seals and masks) and every
// view (which shows ***) agree. Its rules (WORKFLOWS.md, "Secrets follow
// data"):
//
//   - The sources are the inputs and questions (or form fields) marked
//     secret, the environment variables they are read from, and the
//     questions whose auto or default reads a secret.
//   - An expression is secret when it reads a secret value: a secret input,
//     a secret answer, a secret part of a step's output, the item of a
//     foreach over secret items, or a whole map that holds one (inputs,
//     steps, steps.x). A reference inside declassify(…) does not count.
//   - A step's output is secret when the step computes data from its
//     arguments and they are: a transform's value and a log's message, as
//     precisely as they are written (the members of a map written out
//     apart; one plain reference to a step's output passes its secret parts
//     on; any other secret template, or a list holding one, as a whole); a
//     sub-workflow's as a whole when one of its `with` templates is secret;
//     a parallel group's by branch, a foreach's as a whole when a step
//     inside has a secret output. Any other action's output is not: a
//     credential sent in a header does not make the response secret (the
//     run's masker still hides the secret values, and what secret
//     expressions rendered, wherever they show).
//   - A run output is secret as its template is (the same precision).
//
// A Shape says which parts of a value are secret. A Secrets is safe for
// concurrent use.
type Secrets struct {
	inputs  map[string]bool
	env     map[string]bool
	answers map[string]*Ask   // questions with a secret answer, by step id
	derived map[string]bool   // questions answered from a secret (auto, default)
	outputs map[string]*Shape // the secret parts of step outputs
	items   bool              // some foreach iterates over secret items
	run     map[string]*Shape // the secret parts of run outputs
	none    bool              // nothing in the workflow is secret
	memo    sync.Map          // expression source -> *Shape
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
		derived: map[string]bool{}, outputs: map[string]*Shape{}, run: map[string]*Shape{}}
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
	// Children before their group, earlier steps before later ones: the
	// order in which outputs can be read, so one round settles nearly all.
	steps := postOrder(w.Steps, nil)
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
	// secret: go round until nothing changes. Shapes only grow; a loop of
	// steps passing each other's outputs on could grow them for ever, so
	// after enough rounds what still changes becomes wholly secret.
	rounds := 0
	for changed := true; changed; rounds++ {
		changed = false
		for _, st := range steps {
			if !s.items && st.Foreach != nil && s.value(st.Foreach) {
				s.items, changed = true, true
			}
			if a := st.Ask; a != nil && s.answers[st.ID] == nil && !s.derived[st.ID] && s.answeredFromSecret(a) {
				s.derived[st.ID], changed = true, true
			}
			sh := s.stepShape(st)
			if rounds > maxRounds && sh != nil {
				sh = allSecret
			}
			if !sh.equal(s.outputs[st.ID]) {
				s.outputs[st.ID], changed = sh, true
			}
		}
		if changed {
			s.memo.Clear() // what an expression reads may have become secret
		}
	}
	for name, v := range w.Outputs {
		if sh := s.shapeOf(v); sh != nil {
			s.run[name] = sh
		}
	}
	return s
}

// maxRounds bounds the rounds of the analysis that keep shapes apart;
// after them what still changes becomes wholly secret (which settles).
const maxRounds = 8

// postOrder lists steps with what is nested in them, each group after its
// children.
func postOrder(steps []*Step, out []*Step) []*Step {
	for _, s := range steps {
		if s == nil {
			continue
		}
		out = postOrder(s.Parallel, out)
		out = postOrder(s.Steps, out)
		out = append(out, s)
	}
	return out
}

// answeredFromSecret reports whether a question not marked secret may be
// answered with a value computed from a secret: its auto or default (or a
// form field's) reads one.
func (s *Secrets) answeredFromSecret(a *Ask) bool {
	if s.value(a.Default) {
		return true
	}
	if a.Auto != "" {
		if src, _, err := expr.Condition(string(a.Auto)); err == nil && s.Expr(src) {
			return true
		}
	}
	for _, f := range a.Fields {
		if f != nil && s.answeredFromSecret(&f.Ask) {
			return true
		}
	}
	return false
}

// stepShape is the secret part of a step's output as the outputs known so
// far make it.
func (s *Secrets) stepShape(st *Step) *Shape {
	switch {
	case st.Uses == "transform":
		return s.shapeOf(st.With["value"])
	case st.Uses == "log":
		if s.value(st.With["message"]) {
			return fields(map[string]*Shape{"message": allSecret})
		}
		return nil
	case st.Workflow != "":
		if s.value(st.With) {
			return allSecret
		}
		return nil
	case st.Parallel != nil:
		// {branch id: its output}
		f := map[string]*Shape{}
		for _, b := range st.Parallel {
			if b != nil && s.outputs[b.ID] != nil {
				f[b.ID] = s.outputs[b.ID]
			}
		}
		return fields(f)
	case st.Steps != nil:
		// A body step's own group is secret when a step inside it is.
		for _, in := range st.Steps {
			if in != nil && s.outputs[in.ID] != nil {
				return allSecret
			}
		}
	}
	return nil
}

// shapeOf is the secret part of what a template value renders to: a map
// written out keeps its secret keys apart, a template that reads a secret
// is secret as a whole (or, when it is one reference to a step's output,
// as that output's part), and a list with a secret element is secret.
func (s *Secrets) shapeOf(v any) *Shape {
	switch x := v.(type) {
	case string:
		if !s.Template(x) {
			return nil
		}
		if sh := s.passedOn(x); sh != nil {
			return sh
		}
		return allSecret
	case map[string]any:
		f := map[string]*Shape{}
		for k, e := range x {
			if es := s.shapeOf(e); es != nil {
				f[k] = es
			}
		}
		return fields(f)
	case []any:
		if s.value(x) {
			return allSecret
		}
	}
	return nil
}

// passedOn is the shape of a template that is exactly one expression
// (ExprShape); nil for any other template.
func (s *Secrets) passedOn(t string) *Shape {
	segs, err := expr.Scan(t)
	if err != nil {
		return nil
	}
	one, ok := expr.Single(segs)
	if !ok {
		return nil
	}
	return s.ExprShape(one.Text)
}

// None reports whether the workflow has no secret at all.
func (s *Secrets) None() bool { return s.none }

// Input reports whether the input of that name is secret.
func (s *Secrets) Input(name string) bool { return s.inputs[name] }

// Answer reports whether the answer of the question is secret: the
// question (or a field of its form) is marked secret, or it may be
// answered with a value computed from a secret (its auto or default reads
// one), which is stored sealed too.
func (s *Secrets) Answer(id string) bool { return s.answers[id] != nil || s.derived[id] }

// StepOutput reports whether the output of the step is secret, as a
// whole or in part (OutputShape).
func (s *Secrets) StepOutput(id string) bool { return s.outputs[id] != nil }

// OutputShape is the secret part of the step's output, nil for none.
func (s *Secrets) OutputShape(id string) *Shape { return s.outputs[id] }

// RunOutput reports whether the run output of that name is secret, as a
// whole or in part (RunOutputShape).
func (s *Secrets) RunOutput(name string) bool { return s.run[name] != nil }

// RunOutputShape is the secret part of the run output of that name, nil
// for none.
func (s *Secrets) RunOutputShape(name string) *Shape { return s.run[name] }

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
func (s *Secrets) Expr(src string) bool { return s.ExprShape(src) != nil }

// ExprShape is the secret part of an expression's value: nil when it reads
// no secret; the part of a step's output it is, when it is one plain
// reference to it (steps.form.output, steps.form.output.auth); else all
// of it.
func (s *Secrets) ExprShape(src string) *Shape {
	if s.none {
		return nil
	}
	if v, ok := s.memo.Load(src); ok {
		return v.(*Shape)
	}
	sh := allSecret
	if a, err := expr.Analyze(src); err == nil {
		sh = nil
		for _, r := range a.Refs {
			if !r.Declassified && s.ref(r) {
				sh = allSecret
				break
			}
		}
		if sh != nil && len(a.Refs) == 1 && len(a.Calls) == 0 {
			r := a.Refs[0]
			if r.Root == "steps" && len(r.Path) >= 2 && r.Path[1] == "output" && strings.TrimSpace(src) == "steps."+strings.Join(r.Path, ".") {
				sh = s.outputs[r.Path[0]].at(r.Path[2:])
			}
		}
	}
	s.memo.Store(src, sh)
	return sh
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
			return len(s.answers) > 0 || len(s.derived) > 0 || s.anyOutput()
		}
		id := r.Path[0]
		if len(r.Path) == 1 {
			return s.Answer(id) || s.outputs[id] != nil
		}
		switch r.Path[1] {
		case "output":
			return s.outputs[id].at(r.Path[2:]) != nil
		case "answer":
			if s.derived[id] {
				return true
			}
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

func (s *Secrets) anyOutput() bool {
	for _, sh := range s.outputs {
		if sh != nil {
			return true
		}
	}
	return false
}

// Shape says which parts of a value are secret: all of it, or the parts
// under some keys of a map (each with its own shape). A nil *Shape is
// nothing secret.
type Shape struct {
	// All: the whole value is secret.
	All bool
	// Fields are the secret parts of a map's members, by key.
	Fields map[string]*Shape
	// depth is how deep Fields nest (0 for All).
	depth int
}

var allSecret = &Shape{All: true}

// maxShapeDepth bounds how deep a shape keeps members apart: deeper, the
// member is secret as a whole. Shapes are passed on from step to step and
// nest one level more at each; without a bound a chain of steps would
// build shapes that cost time exponential in its length to compare.
const maxShapeDepth = 8

// fields makes the shape of a map whose secret members have the given
// shapes: nil for none, wholly secret when it would nest too deep.
func fields(f map[string]*Shape) *Shape {
	if len(f) == 0 {
		return nil
	}
	d := 0
	for _, sh := range f {
		d = max(d, sh.depth)
	}
	if d+1 > maxShapeDepth {
		return allSecret
	}
	return &Shape{Fields: f, depth: d + 1}
}

// at is the shape of the part at path (member names); a part of a wholly
// secret value is wholly secret.
func (sh *Shape) at(path []string) *Shape {
	for _, p := range path {
		if sh == nil || sh.All {
			return sh
		}
		sh = sh.Fields[p]
	}
	return sh
}

func (sh *Shape) equal(o *Shape) bool {
	if sh == o {
		return true
	}
	if sh == nil || o == nil || sh.depth != o.depth {
		return false
	}
	if sh.All || o.All {
		return sh.All == o.All
	}
	if len(sh.Fields) != len(o.Fields) {
		return false
	}
	for k, f := range sh.Fields {
		if !f.equal(o.Fields[k]) {
			return false
		}
	}
	return true
}

// Apply returns v with each secret part replaced by what part returns for
// it, and every other part by what other returns (nil keeps it); maps are
// copied, v is not changed. A part the value does not have is skipped.
func (sh *Shape) Apply(v any, part func(any) any, other func(any) any) any {
	switch {
	case sh == nil:
		if other == nil {
			return v
		}
		return other(v)
	case sh.All:
		return part(v)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return part(v) // not the map the workflow wrote: all of it
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = sh.Fields[k].Apply(e, part, other)
	}
	return out
}

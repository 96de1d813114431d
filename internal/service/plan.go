package service

import (
	"context"
	"errors"
	"fmt"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/home"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/workflow"
)

// PlanRequest names a workflow to plan and the inputs a run of it would be
// given. Exactly one of Name, Content and Ref is set.
type PlanRequest struct {
	// Name is a library workflow's name (never a path).
	Name string
	// Content is a workflow's text, YAML or JSON.
	Content []byte
	// Ref is a workflow file's path or a library name, as the CLI takes it.
	Ref string
	// Inputs are input values as a run would be started with.
	Inputs map[string]any
	// TextInputs are input values written as text (the CLI's -i
	// name=value): each is typed by its declaration, as run does.
	TextInputs map[string]string
}

// Plan is what a run of a workflow would do with the inputs given so far,
// worked out without starting it: nothing is recorded.
type Plan struct {
	// Valid reports whether the workflow has no violations; when it has,
	// Violations lists them and there are no inputs or steps.
	Valid   bool   `json:"valid"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Draft: the name was not in the library and this is its draft.
	Draft bool `json:"draft,omitempty"`
	// Ready reports whether a run would start now: the workflow is valid,
	// this engine executes it, and every input resolves to a valid value.
	Ready bool `json:"ready"`
	// Inputs lists every declared input in written order.
	Inputs []PlanInput `json:"inputs,omitempty"`
	// Missing names the required inputs that have no value.
	Missing []string `json:"missing,omitempty"`
	// UnknownInputs names the given inputs the workflow does not declare.
	UnknownInputs []string `json:"unknown_inputs,omitempty"`
	// Steps lists every step in document order, nested ones after the
	// step holding them.
	Steps []PlanStep `json:"steps,omitempty"`
	// Violations are the workflow's violations when it is invalid, else
	// what keeps the run from starting (inputs, unsupported features).
	Violations []workflow.Violation `json:"violations"`
}

// PlanInput is one declared input as a run would receive it.
type PlanInput struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Secret      bool   `json:"secret,omitempty"`
	Description string `json:"description,omitempty"`
	// Source is where the value comes from: given, env (the input's env
	// variable), default, none (optional and left null) or missing.
	Source string `json:"source"`
	// Env names the environment variable the value was read from.
	Env string `json:"env,omitempty"`
	// Value is the value (*** for a secret); absent when there is none.
	Value any `json:"value,omitempty"`
	// Valid reports whether the value satisfies the declaration.
	Valid bool `json:"valid"`
	// Problems say what is wrong with it.
	Problems []string `json:"problems,omitempty"`
}

// Plan resolves a workflow's inputs, checks them as a start would, and
// works out its steps: which run, which are skipped, which are decided
// at run time, and their arguments rendered with what is known. An invalid
// workflow is a plan with Valid false, not an error; errors are a workflow
// that cannot be found or read (an unsafe name is a SECURITY error).
func (s *Service) Plan(_ context.Context, req PlanRequest) (*Plan, error) {
	data, dir, draft, err := s.planSource(req)
	if err != nil {
		return nil, err
	}
	res := s.check(data, dir)
	p := &Plan{Valid: res.Valid(), Version: res.Version, Draft: draft, Violations: []workflow.Violation{}}
	if res.Workflow != nil {
		p.Name = res.Workflow.Name
	}
	if !p.Valid {
		p.Violations = res.Violations
		return p, nil
	}
	wf := res.Workflow
	given := TypedInputs(wf, req.Inputs, req.TextInputs)
	resolved := s.Engine.ResolveInputs(wf, given)
	mask := s.Engine.InputSecrets(wf, given)
	p.Violations = append(p.Violations, engine.MaskViolations(mask, resolved.Violations)...)
	var unsupported *engine.Error
	if errors.As(engine.CheckSupported(wf), &unsupported) {
		p.Violations = append(p.Violations, workflow.Violation{Rule: "unsupported", Message: unsupported.Message})
	}
	// A start would be refused by the shell policy: the plan says so.
	shell, env := s.policyRefusals(wf, dir)
	var refused *engine.Error
	if errors.As(shell, &refused) {
		p.Violations = append(p.Violations, workflow.Violation{Rule: "shell-not-allowed", Message: refused.Message + " (" + refused.Code + ")", Hint: refused.Suggestion})
	}
	// So would a variable the environment policy does not let it read.
	if errors.As(env, &refused) {
		for _, v := range refused.Violations {
			v.Hint = refused.Suggestion
			p.Violations = append(p.Violations, v)
		}
	}
	p.Inputs, p.Missing = planInputs(wf, given, resolved, p.Violations, mask)
	p.UnknownInputs = resolved.Unknown
	p.Steps = newStepPlanner(wf, resolved.Values, s.Engine.EnvValues(wf), mask, s.Engine.ActionInputProblem).plan()
	p.Ready = len(p.Violations) == 0
	return p, nil
}

// planSource reads the workflow a request names and the directory its
// sub-workflows are looked up next to; draft reports a name found only in
// the drafts.
func (s *Service) planSource(req PlanRequest) (data []byte, dir string, draft bool, err error) {
	set := 0
	for _, given := range []bool{req.Name != "", req.Content != nil, req.Ref != ""} {
		if given {
			set++
		}
	}
	if set != 1 {
		return nil, "", false, errors.New("plan: name exactly one workflow (a library name, content or a file)")
	}
	if req.Content != nil {
		return req.Content, "", false, nil
	}
	var loc located
	if req.Name != "" || home.ValidName(req.Ref) {
		loc, draft, err = s.findRunnable(req.Name + req.Ref)
	} else {
		loc.path, err = s.findRef(req.Ref)
	}
	if err != nil {
		return nil, "", false, err
	}
	data, err = loc.read()
	if err != nil {
		return nil, "", false, fmt.Errorf("read workflow %s: %w", loc.path, err)
	}
	return data, checkDirOf(loc), draft, nil
}

// TypedInputs merges given values with text values typed by their
// declarations (the CLI's -i name=value). Text that does not parse is
// passed on as text, so the engine's checks report it like any value of
// the wrong type, together with every other problem of the inputs; a
// secret's $NAME reference stays a reference.
func TypedInputs(wf *workflow.Workflow, values map[string]any, text map[string]string) map[string]any {
	out := make(map[string]any, len(values)+len(text))
	for k, v := range values {
		out[k] = v
	}
	for k, t := range text {
		in := wf.Inputs[k]
		if in == nil || (in.Secret && secret.IsEnvRef(t)) {
			out[k] = t
			continue
		}
		if typed, err := workflow.ParseText(t, in.Type); err == nil {
			out[k] = typed
		} else {
			out[k] = t
		}
	}
	return out
}

// planInputs describes each declared input: its source, its value (secrets
// masked) and its problems. It returns them with the names of the required
// inputs that have no value.
func planInputs(wf *workflow.Workflow, given map[string]any, r engine.InputResolution, vs []workflow.Violation, mask *secret.Masker) ([]PlanInput, []string) {
	var out []PlanInput
	var missing []string
	for _, name := range wf.InputNames() {
		in := wf.Inputs[name]
		pi := PlanInput{Name: name, Type: in.Type, Required: in.IsRequired(), Secret: in.Secret, Description: in.Description,
			Source: r.Sources[name], Env: r.FromEnv[name]}
		v, valid := r.Values[name]
		if !valid && pi.Source == engine.SourceGiven {
			v = given[name]
		}
		pi.Valid = valid
		switch {
		case in.Secret && v != nil:
			pi.Value = secret.Redacted
		default:
			pi.Value = mask.MaskValue(v)
		}
		path := workflow.Pointer("inputs", name)
		for _, v := range vs {
			if v.Path == path {
				pi.Problems = append(pi.Problems, v.Message)
			}
		}
		if pi.Source == engine.SourceMissing {
			missing = append(missing, name)
		}
		out = append(out, pi)
	}
	return out, missing
}

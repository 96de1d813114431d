package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Resolver lets validation check names that live outside the workflow:
// actions of the registry and workflows of the library. Each method reports
// whether the name exists and, when it does not, may offer similar names
// for the hint.
type Resolver interface {
	HasAction(name string) (ok bool, similar []string)
	HasWorkflow(name string) (ok bool, similar []string)
}

// ActionInputs is implemented by resolvers that know the `with` keys of
// actions (from their input schemas): keys declared, keys required, and
// closed when other keys are refused. ok is false for an action without a
// schema.
type ActionInputs interface {
	InputKeys(action string) (keys, required []string, closed, ok bool)
}

// Options tune validation.
type Options struct {
	// Resolver, when set, checks `uses` and `workflow` references.
	Resolver Resolver
}

// Result is the outcome of checking one document.
type Result struct {
	// Workflow is the decoded definition; nil when the document could not
	// be parsed. It may be partial when there are violations.
	Workflow *Workflow
	// Version is the sha256 of the canonical form ("" when unparsable).
	Version string
	// Violations lists every problem, ordered by position.
	Violations []Violation
	// Warnings are findings that do not make the workflow invalid (such as
	// RuleSecretName), ordered by position.
	Warnings []Violation
	// Source is the parsed document with positions.
	Source *Source
}

// Valid reports whether the document has no violations.
func (r *Result) Valid() bool { return len(r.Violations) == 0 }

// Check parses and validates a workflow document (YAML or JSON), reporting
// every violation it finds.
func Check(data []byte, opts Options) *Result {
	src, vs := Parse(data)
	if src == nil {
		return &Result{Violations: vs}
	}
	res := &Result{Source: src}
	// The schema pass and the decode + semantic pass are independent (the
	// decoder tolerates wrongly typed values), so they run side by side.
	var schemaVs []Violation
	done := make(chan struct{})
	go func() {
		defer close(done)
		schemaVs = schemaCheck(src)
	}()
	res.Version, _ = VersionOf(src.Value)
	wf := decode(src)
	res.Workflow = wf
	if wf != nil {
		c := newChecker(src, wf, opts)
		c.run()
		vs = append(vs, c.out...)
		res.Warnings = secretWarnings(src, wf)
	}
	<-done
	vs = append(vs, schemaVs...)
	res.Violations = dedupe(vs)
	sortViolations(res.Violations)
	return res
}

// ValidationError is returned by Load for an invalid workflow.
type ValidationError struct {
	Violations []Violation
}

func (e *ValidationError) Error() string {
	if len(e.Violations) == 0 {
		return "invalid workflow"
	}
	first := e.Violations[0]
	msg := fmt.Sprintf("invalid workflow: %s", first.String())
	if n := len(e.Violations) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more)", n)
	}
	return msg
}

// Load parses and validates a workflow, returning it with its version, or a
// *ValidationError listing every violation.
func Load(data []byte, opts Options) (*Workflow, string, error) {
	res := Check(data, opts)
	if !res.Valid() {
		return nil, "", &ValidationError{Violations: res.Violations}
	}
	return res.Workflow, res.Version, nil
}

// decode turns the plain value into typed structs. Values of the wrong
// type are left at their zero value (encoding/json skips them and goes on),
// so that one bad field does not hide the semantic problems of the rest;
// the schema pass reports them.
func decode(src *Source) *Workflow {
	root, ok := src.Value.(map[string]any)
	if !ok {
		return nil
	}
	data, err := json.Marshal(root)
	if err != nil {
		return nil
	}
	var wf Workflow
	var typeErr *json.UnmarshalTypeError
	if err := json.Unmarshal(data, &wf); err != nil && !errors.As(err, &typeErr) {
		wf = Workflow{}
	}
	v := any(root)
	wf.InputOrder = src.Keys("/inputs")
	for name, in := range wf.Inputs {
		if in == nil {
			delete(wf.Inputs, name)
			continue
		}
		if m, ok := lookup(v, Pointer("inputs", name)).(map[string]any); ok {
			_, in.HasDefault = m["default"]
		}
	}
	setPaths(wf.Steps, "/steps")
	for i, h := range wf.OnSuccess {
		if h != nil {
			h.Path = "/on_success/" + strconv.Itoa(i)
		}
	}
	for i, h := range wf.OnFailure {
		if h != nil {
			h.Path = "/on_failure/" + strconv.Itoa(i)
		}
	}
	return &wf
}

func setPaths(steps []*Step, base string) {
	for i, s := range steps {
		if s == nil {
			continue
		}
		s.Path = base + "/" + strconv.Itoa(i)
		setPaths(s.Parallel, s.Path+"/parallel")
		setPaths(s.Steps, s.Path+"/steps")
	}
}

func dedupe(vs []Violation) []Violation {
	seen := make(map[string]bool, len(vs))
	out := vs[:0]
	for _, v := range vs {
		k := v.Path + "\x00" + v.Rule + "\x00" + v.Message
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, v)
	}
	return out
}

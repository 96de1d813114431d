package workflow

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Resolver lets validation check names that live outside the workflow:
// actions of the registry and workflows of the library. Each method reports
// whether the name exists and, when it does not, may offer similar names
// for the hint.
type Resolver interface {
	HasAction(name string) (ok bool, similar []string)
	HasWorkflow(name string) (ok bool, similar []string)
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
	res.Version, _ = VersionOf(src.Value)
	schemaVs, prune := schemaCheck(src)
	vs = append(vs, schemaVs...)
	wf := decode(src, prune)
	res.Workflow = wf
	if wf != nil {
		c := newChecker(src, wf, opts)
		c.run()
		vs = append(vs, c.out...)
	}
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

// decode turns the plain value into typed structs. Values of the wrong type
// (listed in prune) are dropped first so that one bad field does not hide
// the semantic problems of the rest.
func decode(src *Source, prune []string) *Workflow {
	root, ok := src.Value.(map[string]any)
	if !ok {
		return nil
	}
	var v any = root
	if len(prune) > 0 {
		v = deepCopy(root)
		for _, p := range prune {
			v = removeAt(v, p)
		}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var wf Workflow
	if err := json.Unmarshal(data, &wf); err != nil {
		// The schema should have caught every mismatch; fall back to an
		// empty definition rather than hiding all other checks.
		wf = Workflow{}
	}
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

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// removeAt deletes the value at ptr (map member) or nulls it (list item).
func removeAt(root any, ptr string) any {
	if ptr == "" {
		return nil
	}
	parent := lookup(root, parentPointer(ptr))
	key := ptr[strings.LastIndexByte(ptr, '/')+1:]
	key = strings.ReplaceAll(strings.ReplaceAll(key, "~1", "/"), "~0", "~")
	switch p := parent.(type) {
	case map[string]any:
		delete(p, key)
	case []any:
		if i, err := strconv.Atoi(key); err == nil && i >= 0 && i < len(p) {
			p[i] = nil
		}
	}
	return root
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

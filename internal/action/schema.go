package action

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"stepwise.dev/stepwise/internal/cache"
	"stepwise.dev/stepwise/internal/schema"
	"stepwise.dev/stepwise/internal/workflow"
)

// Described is implemented by actions that declare the JSON Schemas of
// their input (a step's `with`) and output. The registry validates every
// input against it before the action runs, and validation of workflows
// uses it to catch misspelled `with` keys.
type Described interface {
	InputSchema() map[string]any
	OutputSchema() map[string]any
}

// Info describes an action for people and agents (action_get).
type Info struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	Safety       string         `json:"safety"`
	InputSchema  map[string]any `json:"input_schema,omitempty"`
	OutputSchema map[string]any `json:"output_schema,omitempty"`
}

// InfoOf describes a.
func InfoOf(a Action) Info {
	info := Info{Name: a.Name(), Description: a.Description(), Safety: a.Safety()}
	if d, ok := a.(Described); ok {
		info.InputSchema, info.OutputSchema = d.InputSchema(), d.OutputSchema()
	}
	return info
}

// schemaCache holds compiled input schemas by action name, the
// maxSchemas most recently used (catalogs can register thousands of
// operations). An action that is replaced (Register) drops its entry.
type schemaCache struct {
	mu       sync.Mutex // one compile per action at a time
	compiled *cache.LRU[string, compiledSchema]
}

// maxSchemas bounds the compiled input schemas kept.
var maxSchemas = 4096 // a variable for tests

// compiledSchema is an action's compiled input schema and whether an empty
// object passes it. Validation depends on nothing but the schema and the
// value, so the empty object's verdict is computed once: steps without
// `with` (most no-op and many plain steps) then skip the validator, which
// allocates even for an empty object.
type compiledSchema struct {
	schema  *schema.Schema
	emptyOK bool
}

func (c *schemaCache) get(a Action) (compiledSchema, error) {
	d, ok := a.(Described)
	if !ok {
		return compiledSchema{}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Looked up before building the schema: every step of every run
	// checks its input here, and building the schema's map allocates.
	if c.compiled == nil {
		c.compiled = cache.New[string, compiledSchema](maxSchemas)
	}
	if s, ok := c.compiled.Get(a.Name()); ok {
		return s, nil // a nil schema for an action without an input schema
	}
	doc := d.InputSchema()
	if doc == nil {
		c.compiled.Add(a.Name(), compiledSchema{})
		return compiledSchema{}, nil
	}
	s, err := schema.Compile(doc)
	if err != nil {
		return compiledSchema{}, fmt.Errorf("input schema of %s: %w", a.Name(), err)
	}
	cs := compiledSchema{schema: s, emptyOK: s.Validate(map[string]any{}) == nil}
	c.compiled.Add(a.Name(), cs)
	return cs, nil
}

func (c *schemaCache) drop(name string) {
	c.mu.Lock()
	if c.compiled != nil {
		c.compiled.Remove(name)
	}
	c.mu.Unlock()
}

// CheckInput validates a step's rendered input against the action's input
// schema; every failing leaf is one violation with its path under `with`.
func (r *Registry) CheckInput(a Action, input map[string]any) []workflow.Violation {
	cs, err := r.schemas.get(a)
	if err != nil {
		return []workflow.Violation{{Rule: "action-schema", Message: err.Error()}}
	}
	if cs.schema == nil || (len(input) == 0 && cs.emptyOK) {
		return nil
	}
	err = cs.schema.Validate(toJSONModel(input))
	if err == nil {
		return nil
	}
	var ve *schema.Error
	if !errors.As(err, &ve) {
		return []workflow.Violation{{Rule: "with", Message: err.Error()}}
	}
	var vs []workflow.Violation
	for _, l := range ve.Leaves() {
		ptr := workflow.Pointer(l.InstanceLocation...)
		msg := "with" + strings.ReplaceAll(ptr, "/", ".") + ": " + l.Message
		if got, ok := scalarAt(input, l.InstanceLocation); ok && !mentions(l) {
			msg += fmt.Sprintf(" (got %s)", got)
		}
		vs = append(vs, workflow.Violation{Path: "/with" + ptr, Rule: "with", Message: msg})
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Path < vs[j].Path })
	return vs
}

// InputKeys reports the `with` keys an action declares and which are
// required; closed is true when other keys are refused (the schema says
// additionalProperties: false). ok is false for actions without a schema.
func (r *Registry) InputKeys(name string) (keys, required []string, closed, ok bool) {
	a, found := r.Get(name)
	if !found {
		return nil, nil, false, false
	}
	d, isDescribed := a.(Described)
	if !isDescribed || d.InputSchema() == nil {
		return nil, nil, false, false
	}
	s := d.InputSchema()
	if props, _ := s["properties"].(map[string]any); props != nil {
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
	}
	switch req := s["required"].(type) {
	case []string:
		required = append(required, req...)
	case []any:
		for _, k := range req {
			if ks, ok := k.(string); ok {
				required = append(required, ks)
			}
		}
	}
	closed = s["additionalProperties"] == false
	return keys, required, closed, true
}

// mentions reports whether a failure's message already quotes the value
// (the validator's messages say "not X" for types, enums and bounds).
func mentions(l *schema.Error) bool {
	switch l.Keyword {
	case "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		return true
	}
	return false
}

// scalarAt returns the scalar at a path of the input, quoted, for
// messages.
func scalarAt(v any, path []string) (string, bool) {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false // list items: the message names the index already
		}
		v = m[p]
	}
	switch x := v.(type) {
	case string:
		if len(x) > 60 {
			x = x[:60] + "…"
		}
		return fmt.Sprintf("%q", x), true
	case bool, int, int64, float64:
		return fmt.Sprint(x), true
	}
	return "", false
}

// toJSONModel turns Go values (ints, typed slices and maps an expression
// may produce) into the JSON data model the validator expects.
func toJSONModel(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = toJSONModel(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toJSONModel(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case float32:
		return float64(x)
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out
	}
	return v
}

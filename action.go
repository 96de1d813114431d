package stepwise

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/ident"
)

// Action is an action written in Go: workflow steps call it by Name in
// `uses:`, with their `with` as its input.
type Action struct {
	// Name is what steps write in `uses:`: lower-case letters, digits, _
	// and -, in parts separated by dots (myapp.greet).
	Name string
	// Description says what it does, for people and agents.
	Description string
	// Safety is code.ReadOnly, code.Mutating (""), or code.Destructive.
	Safety string
	// InputSchema is the JSON Schema of its input (nil: any object). An
	// input that does not fit it fails the step before Run is called, and
	// workflows naming a `with` key it does not declare are refused when
	// it has additionalProperties: false.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of its output (nil: not described).
	OutputSchema json.RawMessage
	// Run executes the action. Its result must encode as JSON; the step's
	// output is that JSON. An error fails the attempt with its message:
	// the step's retry policy tries again unless it is Permanent.
	Run func(ctx context.Context, call Call) (any, error)

	// err is why NewAction could not derive the schemas.
	err error
}

// Call is one invocation of an action.
type Call struct {
	// Input is the step's rendered `with`, already valid for InputSchema.
	Input map[string]any
	// IdempotencyKey names one execution of the step: the same for every
	// retry and for a re-execution after a crash (a step may run more than
	// once), so that the callee can recognize a repeated request.
	IdempotencyKey string
	// Attempt counts the tries of this execution, from 1.
	Attempt int
	// Logger receives the action's log lines, tied to the run and step.
	Logger *slog.Logger
}

// Permanent marks an action's error as one that trying again cannot fix
// (bad input, a refusal): the step fails at once, whatever its retry
// policy says. Other errors are retried as the step's `retry` allows.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &action.Error{Err: err}
}

// NewAction returns an action whose input and output schemas are derived
// from the Go types In and Out (google/jsonschema-go: field names from
// json tags, descriptions from jsonschema tags; a struct accepts no other
// keys). Run receives the input decoded into In.
func NewAction[In, Out any](name, description string, run func(ctx context.Context, in In) (Out, error)) Action {
	a := Action{Name: name, Description: description}
	a.InputSchema, a.err = schemaFor[In]()
	if a.err == nil {
		a.OutputSchema, a.err = schemaFor[Out]()
	}
	a.Run = func(ctx context.Context, call Call) (any, error) {
		var in In
		data, err := json.Marshal(call.Input)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &in); err != nil {
			return nil, fmt.Errorf("%s: input: %w", name, err)
		}
		return run(ctx, in)
	}
	return a
}

func schemaFor[T any]() (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// RegisterAction makes a available to workflows. Register actions before
// starting runs that use them: a workflow naming an unknown action is
// refused. A name already taken (a built-in, a catalog's operation, an
// earlier registration) is refused with code.ActionExists, an invalid
// name or schema with code.ArgumentsInvalid; nothing is registered then.
func (e *Engine) RegisterAction(a Action) error {
	if a.err != nil {
		return &Error{Code: code.ArgumentsInvalid, Message: fmt.Sprintf("action %s: cannot derive its schemas: %v", a.Name, a.err), err: a.err}
	}
	if !validActionName(a.Name) {
		return &Error{Code: code.ArgumentsInvalid, Message: fmt.Sprintf("action name %q: use lower-case letters, digits, _ and -, in parts separated by dots", a.Name)}
	}
	if a.Run == nil {
		return &Error{Code: code.ArgumentsInvalid, Message: "action " + a.Name + " has no Run function"}
	}
	switch a.Safety {
	case "":
		a.Safety = code.Mutating
	case code.ReadOnly, code.Mutating, code.Destructive:
	default:
		return &Error{Code: code.ArgumentsInvalid, Message: fmt.Sprintf("action %s: safety %q: use %s, %s or %s", a.Name, a.Safety, code.ReadOnly, code.Mutating, code.Destructive)}
	}
	ga := &goAction{a: a}
	var err error
	if ga.in, err = schemaMap(a.InputSchema); err != nil {
		return &Error{Code: code.ArgumentsInvalid, Message: fmt.Sprintf("action %s: input schema: %v", a.Name, err), err: err}
	}
	if ga.out, err = schemaMap(a.OutputSchema); err != nil {
		return &Error{Code: code.ArgumentsInvalid, Message: fmt.Sprintf("action %s: output schema: %v", a.Name, err), err: err}
	}
	reg := e.svc.Actions
	e.regMu.Lock()
	defer e.regMu.Unlock()
	if _, taken := reg.Get(a.Name); taken {
		return &Error{Code: code.ActionExists, Message: "an action named " + a.Name + " exists already",
			Suggestion: "give the action another name"}
	}
	reg.Register(ga)
	// The registry compiles the schema on first use: compile it now, so
	// that a schema it cannot use is refused here, not at a step.
	for _, v := range reg.CheckInput(ga, map[string]any{}) {
		if v.Rule == "action-schema" {
			reg.Unregister(a.Name)
			return &Error{Code: code.ArgumentsInvalid, Message: v.Message}
		}
	}
	return nil
}

func validActionName(name string) bool {
	for part := range strings.SplitSeq(name, ".") {
		if !ident.Library.Valid(part) {
			return false
		}
	}
	return name != ""
}

// schemaMap decodes a schema; nil stays nil, and a schema must be an
// object.
func schemaMap(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}

// goAction adapts an Action to the engine's action.Action (and
// action.Described).
type goAction struct {
	a       Action
	in, out map[string]any
}

func (g *goAction) Name() string                 { return g.a.Name }
func (g *goAction) Description() string          { return g.a.Description }
func (g *goAction) Safety() string               { return g.a.Safety }
func (g *goAction) InputSchema() map[string]any  { return g.in }
func (g *goAction) OutputSchema() map[string]any { return g.out }

// Run calls the Go function and gives its result the JSON form the
// engine's expressions read (maps, slices, float64 …).
func (g *goAction) Run(ctx context.Context, c action.Call) (any, error) {
	out, err := g.a.Run(ctx, Call{Input: c.Input, IdempotencyKey: c.IdempotencyKey, Attempt: c.Attempt, Logger: c.Logger})
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: output: %w", g.a.Name, err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: output: %w", g.a.Name, err)
	}
	return v, nil
}

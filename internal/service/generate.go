package service

import (
	"encoding/json"
	"fmt"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/generate"
)

// Generated is a workflow written from a schema, with its validation.
type Generated struct {
	Content string `json:"content"`
	Validation
}

// Error codes of the service's own checks.
const (
	// CodeActionNotFound: an action name no action has.
	CodeActionNotFound = code.ActionNotFound
	// CodeActionUndescribed: an action without an input schema to
	// generate a question flow from.
	CodeActionUndescribed = "ACTION_UNDESCRIBED"
	// CodeSchemaUnsupported: a schema that is not an object with
	// properties.
	CodeSchemaUnsupported = "SCHEMA_UNSUPPORTED"
	// CodeArgumentsInvalid: an argument that is not what the call takes.
	CodeArgumentsInvalid = code.ArgumentsInvalid
	// CodePatternInvalid: a workflow list pattern that is not a glob.
	CodePatternInvalid = "PATTERN_INVALID"
)

// GenerateWorkflow writes a question flow from a JSON Schema object, or —
// when action is given — from that action's input schema, followed by the
// step that calls it. The result is validated (it is meant to be valid;
// violations are returned, not hidden).
func (s *Service) GenerateWorkflow(schema []byte, actionName string, o generate.Options) (*Generated, error) {
	if (len(schema) == 0) == (actionName == "") {
		return nil, &engine.Error{Code: CodeArgumentsInvalid, Category: engine.CategoryValidation, Argument: "schema",
			Message: "give a JSON Schema or an action, not both or neither", Suggestion: "give exactly one of them"}
	}
	if actionName != "" {
		a, ok := s.Actions.Get(actionName)
		if !ok {
			return nil, &engine.Error{Code: CodeActionNotFound, Category: engine.CategoryNotFound, Name: actionName, Argument: "action",
				Message: fmt.Sprintf("no action named %q", actionName), Closest: closestNames(actionName, s.Actions.Names()),
				Suggestion: "search the actions and use a name from the results"}
		}
		info := action.InfoOf(a)
		if info.InputSchema == nil {
			return nil, &engine.Error{Code: CodeActionUndescribed, Category: engine.CategoryValidation, Name: actionName, Argument: "action",
				Message:    fmt.Sprintf("action %q declares no input schema to ask from", actionName),
				Suggestion: "generate from a JSON Schema of the inputs instead"}
		}
		b, err := json.Marshal(info.InputSchema)
		if err != nil {
			return nil, err
		}
		schema, o.Action = b, actionName
		if o.Description == "" {
			o.Description = info.Description
		}
	}
	if o.Name == "" {
		o.Name = "generated"
	}
	if err := s.CheckWorkflowName(o.Name); err != nil {
		return nil, err
	}
	content, err := generate.FromSchema(schema, o)
	if err != nil {
		return nil, &engine.Error{Code: CodeSchemaUnsupported, Category: engine.CategoryValidation, Argument: "schema", Message: err.Error(),
			Suggestion: "give an object schema with properties"}
	}
	return &Generated{Content: string(content), Validation: s.ValidateContent(content)}, nil
}

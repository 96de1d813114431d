package service

import (
	"encoding/json"
	"fmt"

	"stepwise.dev/stepwise/action"
	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/generate"
)

// Generated is a workflow written from a schema, with its validation.
type Generated struct {
	Content string `json:"content"`
	Validation
}

// CodeActionNotFound is the error of an action name no action has.
const CodeActionNotFound = "ACTION_NOT_FOUND"

// GenerateWorkflow writes a question flow from a JSON Schema object, or —
// when action is given — from that action's input schema, followed by the
// step that calls it. The result is validated (it is meant to be valid;
// violations are returned, not hidden).
func (s *Service) GenerateWorkflow(schema []byte, actionName string, o generate.Options) (*Generated, error) {
	if (len(schema) == 0) == (actionName == "") {
		return nil, &engine.Error{Code: "ARGUMENTS_INVALID", Category: engine.CategoryValidation, Argument: "schema",
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
			return nil, &engine.Error{Code: "ACTION_UNDESCRIBED", Category: engine.CategoryValidation, Name: actionName, Argument: "action",
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
		return nil, &engine.Error{Code: "SCHEMA_UNSUPPORTED", Category: engine.CategoryValidation, Argument: "schema", Message: err.Error(),
			Suggestion: "give an object schema with properties"}
	}
	return &Generated{Content: string(content), Validation: s.ValidateContent(content)}, nil
}

package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/action"
	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/service"
)

// ActionGetIn are action_get's arguments.
type ActionGetIn struct {
	Name string `json:"name" jsonschema:"the action's name, as steps write it in uses:"`
}

// ActionGetOut is action_get's result.
type ActionGetOut struct {
	action.Info
}

// Summary implements summarizer.
func (o ActionGetOut) Summary() string {
	return fmt.Sprintf("Action %s (%s): %s", o.Name, o.Safety, o.Description)
}

const uriActions = "stepwise://actions"

func (s *Server) addActionTools() {
	addTool(s, &mcp.Tool{Name: "action_get", Title: "Describe an action",
		Description: "One action a `uses:` step can call: its description, safety tier (read-only, mutating, destructive) and the JSON Schemas of its input (the step's `with`) and output (what steps.<id>.output holds). Find actions with action_search.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in ActionGetIn) (ActionGetOut, error) {
			a, ok := s.svc.Actions.Get(in.Name)
			if !ok {
				return ActionGetOut{}, &engine.Error{Code: service.CodeActionNotFound, Category: engine.CategoryNotFound, Name: in.Name, Argument: "name",
					Message: fmt.Sprintf("no action named %q", in.Name), Suggestion: "find actions with action_search, or read " + uriActions}
			}
			return ActionGetOut{action.InfoOf(a)}, nil
		})
	s.mcp.AddResource(&mcp.Resource{URI: uriActions, Name: "actions", Title: "Actions",
		Description: "Every action steps can call (uses:), with description, safety tier and input/output schemas.", MIMEType: "application/json"},
		func(_ context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return jsonResource(uriActions, map[string]any{"actions": s.svc.Actions.Infos()})
		})
}

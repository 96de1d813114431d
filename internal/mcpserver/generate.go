package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/generate"
	"stepwise.dev/stepwise/internal/service"
)

// WorkflowGenerateIn are workflow_generate's arguments.
type WorkflowGenerateIn struct {
	Schema json.RawMessage `json:"schema,omitempty" jsonschema:"a JSON Schema object; or action"`
	Action string          `json:"action,omitempty" jsonschema:"an action whose input schema becomes the questions; or schema"`
	Name   string          `json:"name,omitempty" jsonschema:"default generated"`
	Title  string          `json:"title,omitempty"`
}

// WorkflowGenerateOut is workflow_generate's result.
type WorkflowGenerateOut struct {
	*service.Generated
}

// Summary implements summarizer.
func (o WorkflowGenerateOut) Summary() string {
	if o.Generated == nil {
		return ""
	}
	if o.Valid {
		return fmt.Sprintf("Generated %s (valid). Review it, then workflow_save {content} or run it with run_start {definition}.", o.Name)
	}
	return fmt.Sprintf("Generated %s with %d violations to fix.", o.Name, len(o.Violations))
}

func (s *Server) addGenerateTool() {
	addTool(s, &mcp.Tool{Name: "workflow_generate", Title: "Generate a question flow",
		Description: "Write a question flow: one question per property of a JSON Schema object (or of an action's input, then calling the action); the answers come back as one object. Returns {content, valid, violations}; saves nothing.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in WorkflowGenerateIn) (WorkflowGenerateOut, error) {
			g, err := s.svc.GenerateWorkflow(in.Schema, in.Action, generate.Options{Name: in.Name, Title: in.Title})
			return WorkflowGenerateOut{g}, err
		})
}

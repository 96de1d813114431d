package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// ActionSearchIn are action_search's arguments.
type ActionSearchIn struct {
	Query string `json:"query" jsonschema:"what to do, in words (back up a postgres database), or a name or its start; empty lists all"`
	// IncludeWorkflows is a pointer so that leaving it out means true.
	IncludeWorkflows *bool `json:"include_workflows,omitempty" jsonschema:"default true"`
	Limit            int   `json:"limit,omitempty" jsonschema:"default 10, max 100"`
}

// ActionSearchOut is action_search's result.
type ActionSearchOut struct {
	Results []service.SearchResult `json:"results"`
}

// Summary implements summarizer.
func (o ActionSearchOut) Summary() string {
	if len(o.Results) == 0 {
		return "Nothing matches: try other or fewer words, or an empty query to list everything."
	}
	items := make([]string, 0, len(o.Results))
	for _, r := range o.Results {
		item := r.Kind + " " + r.Name
		if r.Safety != "" {
			item += " (" + r.Safety + ")"
		}
		items = append(items, item)
	}
	if len(items) == 1 {
		return "1 result: " + items[0] + "."
	}
	return fmt.Sprintf("%d results, best first: %s.", len(o.Results), strings.Join(items, ", "))
}

func (s *Server) addSearchTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	addTool(s, &mcp.Tool{Name: "action_search", Title: "Search actions and workflows", Annotations: readOnly,
		Description: "Find actions a step can use (uses: NAME) and library workflows (run with run_start) by words or name; search before writing a workflow. Returns {results: [{kind, name, title?, description, tags?, score, safety?, inputs?, valid?}]}, best first; action_get NAME gives an action's schemas."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ActionSearchIn) (ActionSearchOut, error) {
			include := in.IncludeWorkflows == nil || *in.IncludeWorkflows
			rs, err := s.svc.SearchActions(ctx, in.Query, include, in.Limit)
			return ActionSearchOut{Results: rs}, err
		})
}

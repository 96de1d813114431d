package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/service"
)

// ActionSearchIn are action_search's arguments.
type ActionSearchIn struct {
	Query string `json:"query" jsonschema:"what you want done or are looking for, in words (back up a postgres database), or a name or the start of one; empty lists everything by name"`
	// IncludeWorkflows is a pointer so that leaving it out means true.
	IncludeWorkflows *bool `json:"include_workflows,omitempty" jsonschema:"also search the library's workflows (default true); false for actions only"`
	Limit            int   `json:"limit,omitempty" jsonschema:"how many results, best first (default 10, at most 100)"`
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
		Description: "Find what can do a task: the actions a workflow step can use (uses: NAME; each with its safety tier: read-only, mutating or destructive) " +
			"and, unless include_workflows is false, the library's workflows (each with its inputs; run one with run_start {workflow: NAME}). " +
			"Use it before writing a workflow, to learn which actions exist (action_get NAME then gives the schema of what a step passes in with:), and to find an existing workflow instead of writing one. " +
			"Describe the task in words or give a name: matches on name count most, then title, tags and description; plurals, other word forms, prefixes and one-letter typos still match. " +
			"Returns {results: [{kind, name, title?, description, tags?, score, safety? (actions), inputs? and valid (workflows)}]}, best first. An empty query lists everything by name."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ActionSearchIn) (ActionSearchOut, error) {
			include := in.IncludeWorkflows == nil || *in.IncludeWorkflows
			rs, err := s.svc.SearchActions(ctx, in.Query, include, in.Limit)
			return ActionSearchOut{Results: rs}, err
		})
}

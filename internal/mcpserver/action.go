package mcpserver

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/clip"
	"stepwise.dev/stepwise/internal/service"
)

// ActionGetIn are action_get's arguments.
type ActionGetIn struct {
	Name string `json:"name" jsonschema:"as uses: writes it"`
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
		Description: "An action's description, safety tier and JSON Schemas of its input (a uses: step's with:) and output (steps.<id>.output).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in ActionGetIn) (ActionGetOut, error) {
			a, ok := s.svc.Actions.Get(in.Name)
			if !ok {
				return ActionGetOut{}, &service.Error{Code: service.CodeActionNotFound, Category: code.CategoryNotFound, Name: in.Name, Argument: "name",
					Message: fmt.Sprintf("no action named %q", clip.Value(in.Name)), Suggestion: "find actions with action_search, or read " + uriActions}
			}
			return ActionGetOut{action.InfoOf(a)}, nil
		})
	s.addResource(&mcp.Resource{URI: uriActions, Name: "actions", Title: "Actions",
		Description: "Every action steps can call (uses:), by name, a page at a time: name, safety tier, the start of its description and the URI of its schemas (" + uriActions + "/{name}, as action_get returns them); next is the URI of the following page.", MIMEType: "application/json"},
		s.readActions)
	s.addResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriActions + "{?cursor}", Name: "actions-page", Title: "A page of actions",
		Description: "The actions after cursor (the next URI of the previous page).", MIMEType: "application/json"},
		s.readActions)
	s.addResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriActions + "/{name}", Name: "action", Title: "An action",
		Description: "One action: description, safety tier and the JSON Schemas of its input and output (as action_get returns it).", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			name := strings.TrimPrefix(req.Params.URI, uriActions+"/")
			if n, err := url.PathUnescape(name); err == nil {
				name = n
			}
			a, ok := s.svc.Actions.Get(name)
			if !ok {
				return nil, mcp.ResourceNotFoundError(clip.Value(req.Params.URI))
			}
			return jsonResource(req.Params.URI, action.InfoOf(a))
		})
}

// actionsPage bounds a page of stepwise://actions: in entries, and in
// bytes through the description's length.
const (
	actionsPage        = 200
	actionsDescription = 160
)

// ActionLine is one action in the pages of stepwise://actions.
type ActionLine struct {
	Name        string `json:"name"`
	Safety      string `json:"safety"`
	Description string `json:"description"`
	// URI is the action's own resource, with its schemas.
	URI string `json:"uri"`
}

// readActions reads a page of stepwise://actions: the actions named after
// the cursor, in name order.
func (s *Server) readActions(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	after := ""
	if _, query, ok := strings.Cut(req.Params.URI, "?"); ok {
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, mcp.ResourceNotFoundError(clip.Value(req.Params.URI))
		}
		after = q.Get("cursor")
	}
	names := s.svc.Actions.Names()
	from := sort.SearchStrings(names, after)
	if from < len(names) && names[from] == after {
		from++
	}
	page := struct {
		Actions []ActionLine `json:"actions"`
		Total   int          `json:"total"`
		Next    string       `json:"next,omitempty"`
	}{Actions: []ActionLine{}, Total: len(names)}
	for _, n := range names[from:] {
		if len(page.Actions) == actionsPage {
			page.Next = uriActions + "?cursor=" + url.QueryEscape(page.Actions[len(page.Actions)-1].Name)
			break
		}
		a, ok := s.svc.Actions.Get(n)
		if !ok {
			continue
		}
		page.Actions = append(page.Actions, ActionLine{Name: n, Safety: a.Safety(),
			Description: clip.Text(a.Description(), actionsDescription), URI: uriActions + "/" + url.PathEscape(n)})
	}
	return jsonResource(req.Params.URI, page)
}

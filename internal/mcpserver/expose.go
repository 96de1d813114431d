package mcpserver

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// exposedPrefix starts the names of the tools that run one library
// workflow each (--expose-workflows).
const exposedPrefix = "wf_"

// syncExposed makes the wf_<name> tools match the library's valid
// workflows: new ones added, changed ones replaced, removed ones dropped.
func (s *Server) syncExposed(ws []service.WorkflowSummary) {
	want := map[string]service.WorkflowSummary{}
	for _, w := range ws {
		if w.Valid {
			want[exposedPrefix+w.Name] = w
		}
	}
	s.exposedMu.Lock()
	defer s.exposedMu.Unlock()
	var gone []string
	for name := range s.exposed {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(s.exposed, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		if s.exposed[name] == w.Version {
			continue
		}
		s.exposed[name] = w.Version
		s.mcp.AddTool(exposedTool(name, w), s.toolHandler(name, s.runExposed(w.Name)))
	}
}

// exposedTool describes a workflow as a tool whose arguments are its
// declared inputs (plus wait_seconds, unless an input has that name).
func exposedTool(name string, w service.WorkflowSummary) *mcp.Tool {
	props := map[string]any{}
	var required []string
	for _, in := range w.Inputs {
		p := map[string]any{"type": in.Type}
		desc := in.Description
		if in.Secret {
			desc += " (secret: pass \"$NAME\", an environment variable of the server, never the value)"
		}
		if desc != "" {
			p["description"] = desc
		}
		if len(in.Enum) > 0 {
			p["enum"] = in.Enum
		}
		if in.Default != nil {
			p["default"] = in.Default
		}
		props[in.Name] = p
		if in.Required && in.Env == "" {
			required = append(required, in.Name)
		}
	}
	if _, taken := props["wait_seconds"]; !taken {
		props["wait_seconds"] = map[string]any{"type": "number", "minimum": 0, "description": "how long to wait for the run to finish or pause (default 20, max 300)"}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	desc := "Run the workflow " + w.Name
	if w.Title != "" {
		desc += " — " + w.Title
	}
	desc += "."
	if w.Description != "" {
		desc += " " + w.Description
	}
	desc += " Returns the run shape, as run_start; answer a pause with run_continue."
	return &mcp.Tool{Name: name, Title: w.Title, Description: desc, InputSchema: schema,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}, Meta: runAppToolMeta()}
}

// runExposed starts a run of a library workflow from a wf_ tool call.
func (s *Server) runExposed(name string) func(context.Context, *mcp.CallToolRequest) (any, error) {
	return func(ctx context.Context, req *mcp.CallToolRequest) (any, error) {
		args := map[string]any{}
		if len(req.Params.Arguments) > 0 && string(req.Params.Arguments) != "null" {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, argumentsError("", "the arguments must be an object of the workflow's inputs")
			}
		}
		var waitArg *float64
		l, err := s.svc.LoadLibraryWorkflow(name)
		if err != nil {
			return nil, err
		}
		if _, isInput := l.Workflow.Inputs["wait_seconds"]; !isInput {
			if w, ok := args["wait_seconds"]; ok {
				f, ok := w.(float64)
				if !ok {
					return nil, argumentsError("wait_seconds", "wait_seconds must be a number")
				}
				waitArg = &f
				delete(args, "wait_seconds")
			}
		}
		wait, err := s.waitFor(waitArg, s.opts.DefaultWait)
		if err != nil {
			return nil, err
		}
		if req.Params.RequestState != "" {
			return s.resumeElicitation(ctx, req, wait)
		}
		sub := s.svc.Subscribe()
		defer sub.Close()
		id, err := s.svc.StartRun(ctx, l, args, false)
		if err != nil {
			return nil, err
		}
		if ok, err := s.asTask(ctx, req, id); ok || err != nil {
			return nil, err
		}
		return s.await(ctx, req, sub, id, wait, true)
	}
}

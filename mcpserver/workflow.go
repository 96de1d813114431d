package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/service"
)

// WorkflowListIn are workflow_list's arguments.
type WorkflowListIn struct {
	Pattern       string `json:"pattern,omitempty" jsonschema:"a glob on names (deploy-*) or a word to find in name, title or description"`
	Tag           string `json:"tag,omitempty" jsonschema:"only workflows with this tag"`
	IncludeDrafts bool   `json:"include_drafts,omitempty" jsonschema:"list drafts too (draft: true; they may be invalid)"`
}

// WorkflowListOut is workflow_list's result.
type WorkflowListOut struct {
	Workflows []service.WorkflowSummary `json:"workflows"`
}

// Summary implements summarizer.
func (o WorkflowListOut) Summary() string {
	names := make([]string, 0, len(o.Workflows))
	for _, w := range o.Workflows {
		names = append(names, w.Name)
	}
	if len(names) == 0 {
		return "No workflows in the library. Author one (read stepwise://docs/workflows) and run it with run_start {definition}."
	}
	return fmt.Sprintf("%d workflows: %s.", len(names), strings.Join(names, ", "))
}

// WorkflowGetIn are workflow_get's arguments.
type WorkflowGetIn struct {
	Name  string `json:"name" jsonschema:"the workflow's library name"`
	Draft bool   `json:"draft,omitempty" jsonschema:"get the draft of that name instead of the saved workflow"`
}

// WorkflowGetOut is workflow_get's result.
type WorkflowGetOut struct {
	*service.WorkflowDetail
}

// Summary implements summarizer.
func (o WorkflowGetOut) Summary() string {
	d := o.WorkflowDetail
	if d == nil {
		return ""
	}
	state := "valid"
	if !d.Valid {
		state = fmt.Sprintf("INVALID (%d violations)", len(d.Violations))
	}
	return fmt.Sprintf("%s %s: %d inputs, %d steps, %d runs.", d.Name, state, len(d.Inputs), len(d.Steps), d.Stats.Runs)
}

// WorkflowValidateIn are workflow_validate's arguments.
type WorkflowValidateIn struct {
	Content string `json:"content,omitempty" jsonschema:"a workflow definition, YAML or JSON text; give this or name"`
	Name    string `json:"name,omitempty" jsonschema:"a library workflow's name; give this or content"`
}

// WorkflowValidateOut is workflow_validate's result.
type WorkflowValidateOut struct {
	service.Validation
}

// Summary implements summarizer.
func (o WorkflowValidateOut) Summary() string {
	if o.Valid {
		if n := len(o.Warnings); n > 0 {
			return fmt.Sprintf("Valid, version %s, with %d warnings (see warnings: they do not make it invalid).", o.Version, n)
		}
		return "Valid, version " + o.Version + "."
	}
	return fmt.Sprintf("Invalid: %d violations; fix each (path, line, column, hint) and validate again.", len(o.Violations))
}

func (s *Server) addWorkflowTools() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	addTool(s, &mcp.Tool{Name: "workflow_list", Title: "List workflows", Annotations: readOnly,
		Description: "List the library's workflows with name, title, description, version and a summary of their inputs. " +
			"Use it first to find a workflow to run (run_start) or inspect (workflow_get)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowListIn) (WorkflowListOut, error) {
			ws, err := s.svc.ListLibrary(ctx, service.ListOptions{Pattern: in.Pattern, Tag: in.Tag, IncludeDrafts: in.IncludeDrafts})
			return WorkflowListOut{Workflows: ws}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_get", Title: "Get a workflow", Annotations: readOnly,
		Description: "One library workflow: its content, parsed definition, version, declared inputs and outputs, steps, the ${{ }} references it makes, " +
			"violations if the file became invalid, and run statistics (runs, success rate, mean duration, last run)."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowGetIn) (WorkflowGetOut, error) {
			d, err := s.svc.GetLibraryEntry(ctx, in.Name, in.Draft)
			return WorkflowGetOut{d}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_validate", Title: "Validate a workflow", Annotations: readOnly,
		Description: "Validate a workflow definition (content) or a library workflow (name). Returns {valid, version, violations[], warnings[]}; " +
			"every violation at once, each with path, line, column, rule, message and often a hint; warnings (rule secret-name) do not make it invalid. The language: resource stepwise://docs/workflows."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowValidateIn) (WorkflowValidateOut, error) {
			switch {
			case in.Content != "" && in.Name != "":
				return WorkflowValidateOut{}, argumentsError("content", "give content or name, not both")
			case in.Name != "":
				v, err := s.svc.ValidateLibrary(in.Name)
				return WorkflowValidateOut{v}, err
			case in.Content != "":
				return WorkflowValidateOut{s.svc.ValidateContent([]byte(in.Content))}, nil
			}
			return WorkflowValidateOut{}, argumentsError("content", "give content (YAML or JSON text) or name (a library workflow)")
		})
}

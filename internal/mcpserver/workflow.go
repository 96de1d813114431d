package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// WorkflowListIn are workflow_list's arguments.
type WorkflowListIn struct {
	Pattern       string `json:"pattern,omitempty" jsonschema:"a glob (deploy-*) or a word in name, title or description"`
	Tag           string `json:"tag,omitempty"`
	IncludeDrafts bool   `json:"include_drafts,omitempty" jsonschema:"drafts too (may be invalid)"`
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
	Name  string `json:"name"`
	Draft bool   `json:"draft,omitempty" jsonschema:"the draft of that name"`
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
	Content string `json:"content,omitempty" jsonschema:"YAML or JSON text; or name"`
	Name    string `json:"name,omitempty" jsonschema:"a library workflow; or content"`
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
		Description: "The library's workflows: name, title, description, version, inputs. Start here to find one to run or inspect."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowListIn) (WorkflowListOut, error) {
			ws, err := s.svc.ListLibrary(ctx, service.ListOptions{Pattern: in.Pattern, Tag: in.Tag, IncludeDrafts: in.IncludeDrafts})
			return WorkflowListOut{Workflows: ws}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_get", Title: "Get a workflow", Annotations: readOnly,
		Description: "A library workflow: content, parsed definition, version, revision, inputs, outputs, steps, ${{ }} references, violations, run statistics."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowGetIn) (WorkflowGetOut, error) {
			d, err := s.svc.GetLibraryEntry(ctx, in.Name, in.Draft)
			return WorkflowGetOut{d}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_validate", Title: "Validate a workflow", Annotations: readOnly,
		Description: "Validate a definition (content) or a library workflow (name): {valid, version, violations, warnings}, each violation with path, line, column, rule, message, hint. The language: stepwise://docs/workflows."},
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

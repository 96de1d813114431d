package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// WorkflowSaveIn are workflow_save's arguments.
type WorkflowSaveIn struct {
	Content         string `json:"content" jsonschema:"YAML or JSON text; its name: names the file"`
	Draft           bool   `json:"draft,omitempty"`
	Name            string `json:"name,omitempty" jsonschema:"a draft's name when its content does not parse"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"the revision you read; required to replace"`
	Overwrite       bool   `json:"overwrite,omitempty" jsonschema:"replace whatever the revision"`
}

// WorkflowSaveOut is workflow_save's result.
type WorkflowSaveOut struct {
	*service.SaveResult
}

// Summary implements summarizer.
func (o WorkflowSaveOut) Summary() string {
	r := o.SaveResult
	if r == nil {
		return ""
	}
	if r.Draft {
		if r.Valid {
			return fmt.Sprintf("Draft %s saved (version %s, revision %s); it is valid: save it without draft to put it in the library.", r.Name, r.Version, r.Revision)
		}
		return fmt.Sprintf("Draft %s saved (version %s, revision %s) with %d violations to fix.", r.Name, r.Version, r.Revision, len(r.Violations))
	}
	s := fmt.Sprintf("Saved %s, version %s, revision %s.", r.Name, r.Version, r.Revision)
	if r.DraftRemoved {
		s += " Its draft was removed."
	}
	if n := len(r.Warnings); n > 0 {
		s += fmt.Sprintf(" %d warnings (see warnings).", n)
	}
	return s
}

// WorkflowRenameIn are workflow_rename's arguments.
type WorkflowRenameIn struct {
	Name            string `json:"name"`
	NewName         string `json:"new_name" jsonschema:"lowercase letters, digits, - and _"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"only if still at this revision"`
}

// WorkflowRenameOut is workflow_rename's result.
type WorkflowRenameOut struct {
	*service.RenameResult
}

// Summary implements summarizer.
func (o WorkflowRenameOut) Summary() string {
	if o.RenameResult == nil {
		return ""
	}
	s := fmt.Sprintf("Renamed %s to %s (version %s). Runs already started keep their version.", o.OldName, o.Name, o.Version)
	if len(o.ReferencedBy) > 0 {
		s += fmt.Sprintf(" Invalid now, as they call %s: %s (update their workflow: steps).", o.OldName, strings.Join(o.ReferencedBy, ", "))
	}
	if len(o.DraftsReferencing) > 0 {
		s += fmt.Sprintf(" Drafts calling %s: %s.", o.OldName, strings.Join(o.DraftsReferencing, ", "))
	}
	return s
}

// WorkflowDeleteIn are workflow_delete's arguments.
type WorkflowDeleteIn struct {
	Name            string `json:"name"`
	Draft           bool   `json:"draft,omitempty" jsonschema:"the draft of that name"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"only if still at this revision"`
	Confirm         bool   `json:"confirm,omitempty" jsonschema:"the person agreed (when your client cannot elicit)"`
}

// WorkflowDeleteOut is workflow_delete's result.
type WorkflowDeleteOut struct {
	*service.DeleteResult
}

// Summary implements summarizer.
func (o WorkflowDeleteOut) Summary() string {
	if o.DeleteResult == nil {
		return ""
	}
	return fmt.Sprintf("Deleted %s (version %s); a copy is kept in %s.", o.Name, o.Version, o.KeptIn)
}

func (s *Server) addLibraryTools() {
	addTool(s, &mcp.Tool{Name: "workflow_save", Title: "Save a workflow",
		Description: "Save a workflow to the library (an invalid one is refused with its violations) or as a draft (draft: true, kept even invalid). Replacing one needs expected_version (the revision read; VERSION_CONFLICT carries current_revision) or overwrite. Saving removes the draft of that name. Returns {name, path, version, revision, violations}.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowSaveIn) (WorkflowSaveOut, error) {
			r, err := s.svc.SaveWorkflow(ctx, service.SaveRequest{Content: in.Content, Draft: in.Draft, Name: in.Name,
				ExpectedVersion: in.ExpectedVersion, Overwrite: in.Overwrite})
			return WorkflowSaveOut{r}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_rename", Title: "Rename a workflow",
		Description: "Rename a library workflow (its file and name: field); started runs keep their version. VERSION_CONFLICT if new_name exists. referenced_by and drafts_referencing list what calls the old name.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowRenameIn) (WorkflowRenameOut, error) {
			r, err := s.svc.RenameWorkflow(ctx, in.Name, in.NewName, in.ExpectedVersion)
			return WorkflowRenameOut{r}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_delete", Title: "Delete a workflow",
		Description: "Delete a library workflow or draft (a copy goes to previous/). Destructive: the person confirms (elicitation, else ask them and pass confirm: true).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in WorkflowDeleteIn) (WorkflowDeleteOut, error) {
			what := "delete workflow " + in.Name
			if in.Draft {
				what = "delete the draft " + in.Name
			}
			// Refuse what cannot be deleted before asking the person.
			if _, err := s.svc.GetLibraryEntry(ctx, in.Name, in.Draft); err != nil {
				return WorkflowDeleteOut{}, err
			}
			if err := s.confirmDestructive(ctx, req, in.Confirm, what); err != nil {
				return WorkflowDeleteOut{}, err
			}
			r, err := s.svc.DeleteWorkflow(ctx, in.Name, in.Draft, in.ExpectedVersion)
			return WorkflowDeleteOut{r}, err
		})
}

package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/service"
)

// WorkflowSaveIn are workflow_save's arguments.
type WorkflowSaveIn struct {
	Content         string `json:"content" jsonschema:"the workflow, YAML or JSON text; its name: field names the file"`
	Draft           bool   `json:"draft,omitempty" jsonschema:"save as a draft: kept even when invalid, its violations returned"`
	Name            string `json:"name,omitempty" jsonschema:"only for a draft whose content does not parse yet: the name to file it under"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"the revision you read (workflow_get or the last workflow_save: revision, the hash of the file's bytes); required to replace an existing workflow"`
	Overwrite       bool   `json:"overwrite,omitempty" jsonschema:"replace an existing workflow whatever its revision"`
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
	Name            string `json:"name" jsonschema:"the workflow's current name"`
	NewName         string `json:"new_name" jsonschema:"the new name (lowercase letters, digits, - and _)"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"rename only if the workflow is still at this revision (workflow_get: revision)"`
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
	Name            string `json:"name" jsonschema:"the workflow (or draft) to delete"`
	Draft           bool   `json:"draft,omitempty" jsonschema:"delete the draft of that name"`
	ExpectedVersion string `json:"expected_version,omitempty" jsonschema:"delete only if it is still at this revision (workflow_get: revision)"`
	Confirm         bool   `json:"confirm,omitempty" jsonschema:"set after the person agreed, when your client cannot ask them (no elicitation)"`
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
		Description: "Save a workflow into the library (it must be valid: an invalid one is refused with its violations) or as a draft (draft: true, kept even when invalid). " +
			"Replacing an existing workflow (or draft) needs expected_version: the revision you read (workflow_get, or this tool's last result; a VERSION_CONFLICT error carries the current one as current_revision), or overwrite. " +
			"Saving to the library removes the draft of the same name. Returns {name, path, version, revision, violations}: version identifies the definition (runs pin it), revision the file's bytes (the next expected_version).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowSaveIn) (WorkflowSaveOut, error) {
			r, err := s.svc.SaveWorkflow(ctx, service.SaveRequest{Content: in.Content, Draft: in.Draft, Name: in.Name,
				ExpectedVersion: in.ExpectedVersion, Overwrite: in.Overwrite})
			return WorkflowSaveOut{r}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_rename", Title: "Rename a workflow",
		Description: "Rename a library workflow: its file and its name: field together, nothing else changes. Runs already started keep the version they pinned. Fails with VERSION_CONFLICT if new_name exists. " +
			"The result lists the workflows (referenced_by) and drafts (drafts_referencing) whose steps call the old name: they need updating.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowRenameIn) (WorkflowRenameOut, error) {
			r, err := s.svc.RenameWorkflow(ctx, in.Name, in.NewName, in.ExpectedVersion)
			return WorkflowRenameOut{r}, err
		})
	addTool(s, &mcp.Tool{Name: "workflow_delete", Title: "Delete a workflow",
		Description: "Delete a library workflow or a draft. Destructive: the person confirms (asked directly when your client supports elicitation; otherwise ask them and pass confirm: true). " +
			"A copy is kept in the server's previous/ directory.",
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

package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// RunPurgeIn are run_purge's arguments.
type RunPurgeIn struct {
	Workflow  string `json:"workflow,omitempty"`
	Status    string `json:"status,omitempty" jsonschema:"succeeded, failed or canceled (default all)"`
	OlderThan string `json:"older_than,omitempty" jsonschema:"finished at least this long ago: 30d, 12h, 1d12h"`
	Confirm   bool   `json:"confirm,omitempty" jsonschema:"the person agreed (when your client cannot elicit)"`
}

// RunPurgeOut is run_purge's result: how many records were deleted.
type RunPurgeOut struct {
	service.PurgeResult
}

// Summary implements summarizer.
func (o RunPurgeOut) Summary() string {
	if o.Runs == 0 {
		return "Nothing to purge: no finished run matches."
	}
	return fmt.Sprintf("Purged %s (%s, %s, %s no longer used).", counted(o.Runs, "run"), counted(o.Steps, "step"),
		counted(o.Events, "event"), counted(o.Versions, "workflow version"))
}

// counted is "1 run", "2 runs".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (s *Server) addPurgeTool() {
	addTool(s, &mcp.Tool{Name: "run_purge", Title: "Purge finished runs",
		Description: "Delete finished runs with their history and sub-workflow runs, optionally by workflow, status or age; active runs are never touched. Destructive: the person confirms. Returns the counts deleted.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunPurgeIn) (RunPurgeOut, error) {
			f := service.PurgeFilter{Workflow: in.Workflow}
			if in.Status != "" {
				if !slices.Contains(runStatuses, in.Status) {
					return RunPurgeOut{}, argumentsError("status", fmt.Sprintf("status %q: use succeeded, failed or canceled", in.Status))
				}
				f.Status = []string{in.Status}
			}
			if in.OlderThan != "" {
				d, err := workflow.ParseDuration(in.OlderThan)
				if err != nil {
					return RunPurgeOut{}, argumentsError("older_than", "older_than: "+err.Error())
				}
				f.OlderThan = d
			}
			// Counted first, so that the person confirms a number.
			f.DryRun = true
			would, err := s.svc.PurgeRuns(ctx, f)
			if err != nil {
				return RunPurgeOut{}, err
			}
			if would.Runs == 0 {
				return RunPurgeOut{}, nil
			}
			if err := s.confirmDestructive(ctx, req, in.Confirm, purgeWhat(would.Runs, in)); err != nil {
				return RunPurgeOut{}, err
			}
			f.DryRun = false
			res, err := s.svc.PurgeRuns(ctx, f)
			if err != nil {
				return RunPurgeOut{}, err
			}
			return RunPurgeOut{res}, nil
		})
}

// purgeWhat describes a purge for its confirmation: "purge 3 finished runs
// of deploy that failed, finished more than 30d ago, with their history".
func purgeWhat(n int, in RunPurgeIn) string {
	var b strings.Builder
	b.WriteString("purge " + counted(n, "finished run"))
	if in.Workflow != "" {
		b.WriteString(" of " + in.Workflow)
	}
	if in.Status != "" {
		b.WriteString(" that " + map[string]string{code.StatusSucceeded: "succeeded", code.StatusFailed: "failed", code.StatusCanceled: "were canceled"}[in.Status])
	}
	if in.OlderThan != "" {
		b.WriteString(", finished more than " + in.OlderThan + " ago,")
	}
	b.WriteString(" with their history")
	return b.String()
}

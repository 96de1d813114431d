package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// RunStartIn are run_start's arguments.
type RunStartIn struct {
	Workflow    string         `json:"workflow,omitempty" jsonschema:"a library workflow's (or draft's) name; or definition"`
	Definition  string         `json:"definition,omitempty" jsonschema:"inline workflow, YAML or JSON text; or workflow"`
	Inputs      map[string]any `json:"inputs,omitempty"`
	WaitSeconds *float64       `json:"wait_seconds,omitempty" jsonschema:"default 20, max 300; 0 returns at once"`
}

// RunContinueIn are run_continue's arguments.
type RunContinueIn struct {
	Token       string   `json:"token" jsonschema:"the pause's token, exactly as returned"`
	Value       any      `json:"value,omitempty" jsonschema:"the answer, or the agent step's output; omit to take a question's default"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"default 20, max 300"`
}

// RunGetIn are run_get's arguments.
type RunGetIn struct {
	RunID       string   `json:"run_id"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"default 0, max 300"`
	StepsCursor string   `json:"steps_cursor,omitempty" jsonschema:"steps.next_cursor of a previous result: a page of steps with outputs (default: the last 10)"`
	StepsLimit  int      `json:"steps_limit,omitempty" jsonschema:"default 10, max 50"`
}

// RunListIn are run_list's arguments.
type RunListIn struct {
	Workflow string `json:"workflow,omitempty"`
	Status   string `json:"status,omitempty" jsonschema:"queued, pending, running, waiting, paused, succeeded, failed or canceled"`
	Limit    int    `json:"limit,omitempty" jsonschema:"default 20, max 200"`
	Cursor   string `json:"cursor,omitempty"`
}

// RunListOut is run_list's result.
type RunListOut struct {
	Runs       []RunLine `json:"runs"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// Summary implements summarizer.
func (o RunListOut) Summary() string {
	s := fmt.Sprintf("%d runs.", len(o.Runs))
	if o.NextCursor != "" {
		s += " More with cursor " + o.NextCursor + "."
	}
	return s
}

// RunLine is one run of a list.
type RunLine struct {
	RunID      string     `json:"run_id"`
	Workflow   string     `json:"workflow"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ParentID   string     `json:"parent_id,omitempty"`
}

// RunCancelIn are run_cancel's arguments.
type RunCancelIn struct {
	RunID      string `json:"run_id"`
	Reason     string `json:"reason,omitempty" jsonschema:"recorded with the run"`
	Compensate bool   `json:"compensate,omitempty" jsonschema:"undo completed steps first"`
}

// RunRetryIn are run_retry's arguments.
type RunRetryIn struct {
	RunID       string         `json:"run_id"`
	Inputs      map[string]any `json:"inputs,omitempty"`
	WaitSeconds *float64       `json:"wait_seconds,omitempty"`
}

// RunForkIn are run_fork's arguments.
type RunForkIn struct {
	RunID       string         `json:"run_id"`
	FromStep    string         `json:"from_step"`
	Inputs      map[string]any `json:"inputs,omitempty"`
	WaitSeconds *float64       `json:"wait_seconds,omitempty"`
}

// RunIDIn names a run.
type RunIDIn struct {
	RunID       string   `json:"run_id"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty"`
}

const maxWait = 300 * time.Second

func (s *Server) waitFor(w *float64, def time.Duration) (time.Duration, error) {
	if w == nil {
		return def, nil
	}
	if *w < 0 {
		return 0, argumentsError("wait_seconds", "wait_seconds must be 0 or more")
	}
	return min(time.Duration(*w*float64(time.Second)), maxWait), nil
}

var runStatuses = []string{code.StatusQueued, code.StatusPending, code.StatusRunning, code.StatusWaiting, code.StatusPaused, code.StatusSucceeded, code.StatusFailed, code.StatusCanceled}

func (s *Server) addRunTools() {
	if s.opts.Stateless {
		s.addStatelessRunTools() // stateless.go
		return
	}
	addTool(s, &mcp.Tool{Name: "run_start", Meta: runAppToolMeta(), Title: "Start a run",
		Description: "Run a library workflow (workflow: a saved one's name, else a draft's: draft: true) or an inline definition, with inputs. Returns the run shape {run_id, status, outputs?, pause?, error?, next} once it finishes, pauses or wait_seconds pass: answer a pause with run_continue; follow status running with run_get.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunStartIn) (RunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return RunResult{}, err
			}
			if req.Params.RequestState != "" {
				return s.resumeElicitation(ctx, req, wait)
			}
			sub := s.svc.Subscribe()
			defer sub.Close()
			var l *service.Loaded
			switch {
			case in.Workflow != "" && in.Definition != "":
				return RunResult{}, argumentsError("workflow", "give workflow or definition, not both")
			case in.Workflow != "":
				l, err = s.svc.LoadRunnable(in.Workflow)
			case in.Definition != "":
				l, err = s.svc.Parse([]byte(in.Definition))
			default:
				return RunResult{}, argumentsError("workflow", "give workflow (a library name) or definition (YAML or JSON text)")
			}
			if err != nil {
				return RunResult{}, err
			}
			id, err := s.svc.StartRun(ctx, l, in.Inputs, false)
			if err != nil {
				return RunResult{}, err
			}
			if ok, err := s.asTask(ctx, req, id); ok || err != nil {
				return RunResult{}, err
			}
			res, err := s.await(ctx, req, sub, id, wait, true)
			res.Draft = l.Draft
			return res, err
		})

	addTool(s, &mcp.Tool{Name: "run_continue", Meta: runAppToolMeta(), Title: "Answer a pause",
		Description: "Answer a pause: its token and the value (a question's answer, or an agent step's output matching its output_schema). An invalid value is refused with violations; the token stays valid. Returns the run shape.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		s.runContinue)

	addTool(s, &mcp.Tool{Name: "run_get", Meta: runAppToolMeta(), Title: "Get a run",
		Description: "A run: status, open pause with its token, outputs, error, recent steps. wait_seconds waits for a running run to finish or pause.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunGetIn) (RunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, 0)
			if err != nil {
				return RunResult{}, err
			}
			if in.StepsLimit < 0 || in.StepsLimit > service.MaxStepPage {
				return RunResult{}, argumentsError("steps_limit", fmt.Sprintf("steps_limit is between 1 and %d", service.MaxStepPage))
			}
			if wait > 0 {
				if err := s.watch(ctx, req, in.RunID, wait); err != nil {
					return RunResult{}, err
				}
			}
			v, err := s.svc.GetRun(ctx, in.RunID)
			if err != nil {
				return RunResult{}, err
			}
			return s.runResultPage(v, true, in.StepsCursor, in.StepsLimit)
		})

	addTool(s, &mcp.Tool{Name: "run_list", Title: "List runs",
		Description: "Runs, newest first, optionally of one workflow or status. Returns {runs, next_cursor}.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunListIn) (RunListOut, error) {
			f := service.RunFilter{Workflow: in.Workflow, Cursor: in.Cursor, Limit: in.Limit}
			if f.Limit <= 0 {
				f.Limit = 20
			}
			if f.Limit > 200 {
				return RunListOut{}, argumentsError("limit", "limit is at most 200")
			}
			if in.Status != "" {
				if !slices.Contains(runStatuses, in.Status) {
					return RunListOut{}, argumentsError("status", fmt.Sprintf("status %q: use one of %s", in.Status, strings.Join(runStatuses, ", ")))
				}
				f.Status = []string{in.Status}
			}
			runs, nextCursor, err := s.svc.ListRuns(ctx, f)
			if err != nil {
				if errors.Is(err, service.ErrCursorInvalid) {
					return RunListOut{}, argumentsError("cursor", "cursor is not valid: use next_cursor exactly as returned")
				}
				return RunListOut{}, err
			}
			out := RunListOut{Runs: []RunLine{}, NextCursor: nextCursor}
			for _, r := range runs {
				out.Runs = append(out.Runs, RunLine{RunID: r.ID, Workflow: r.Workflow, Status: r.Status, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt, ParentID: r.ParentID})
			}
			return out, nil
		})

	addTool(s, &mcp.Tool{Name: "run_cancel", Title: "Cancel a run",
		Description: "Cancel an unfinished run and its sub-workflow runs; compensate undoes completed steps first, in reverse. Cannot be undone.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunCancelIn) (RunResult, error) {
			if err := s.svc.Cancel(ctx, in.RunID, in.Reason, in.Compensate); err != nil {
				return RunResult{}, err
			}
			if in.Compensate {
				if err := s.watch(ctx, req, in.RunID, s.opts.DefaultWait); err != nil {
					return RunResult{}, err
				}
			}
			return s.view(ctx, in.RunID)
		})

	addTool(s, &mcp.Tool{Name: "run_retry", Title: "Retry a failed run",
		Description: "Re-run a failed run from its failed step, earlier results kept, optionally with corrected inputs. Returns the run shape.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunRetryIn) (RunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return RunResult{}, err
			}
			if req.Params.RequestState != "" {
				return s.resumeElicitation(ctx, req, wait)
			}
			sub := s.svc.Subscribe()
			defer sub.Close()
			if err := s.svc.RetryRun(ctx, in.RunID, in.Inputs); err != nil {
				return RunResult{}, err
			}
			if ok, err := s.asTask(ctx, req, in.RunID); ok || err != nil {
				return RunResult{}, err
			}
			return s.await(ctx, req, sub, in.RunID, wait, true)
		})

	addTool(s, &mcp.Tool{Name: "run_fork", Title: "Fork a run",
		Description: "Start a new run of the same version from a top-level step of a run, reusing earlier results, optionally with changed inputs. Returns the new run's shape.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunForkIn) (RunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return RunResult{}, err
			}
			if req.Params.RequestState != "" {
				return s.resumeElicitation(ctx, req, wait)
			}
			sub := s.svc.Subscribe()
			defer sub.Close()
			id, err := s.svc.ForkRun(ctx, in.RunID, in.FromStep, in.Inputs)
			if err != nil {
				return RunResult{}, err
			}
			if ok, err := s.asTask(ctx, req, id); ok || err != nil {
				return RunResult{}, err
			}
			return s.await(ctx, req, sub, id, wait, true)
		})

	s.addRewindTools() // rewind.go

	addTool(s, &mcp.Tool{Name: "run_pause", Title: "Hold a run",
		Description: "Hold a run: no further steps (an in-flight one runs again later) until run_resume.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunIDIn) (RunResult, error) {
			if err := s.svc.PauseRun(ctx, in.RunID); err != nil {
				return RunResult{}, err
			}
			return s.view(ctx, in.RunID)
		})

	addTool(s, &mcp.Tool{Name: "run_resume", Title: "Resume a held run",
		Description: "Resume a run held by run_pause (or an interrupted one). Returns the run shape.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunIDIn) (RunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return RunResult{}, err
			}
			if req.Params.RequestState != "" {
				return s.resumeElicitation(ctx, req, wait)
			}
			sub := s.svc.Subscribe()
			defer sub.Close()
			if _, err := s.svc.Resume(ctx, in.RunID); err != nil {
				return RunResult{}, err
			}
			return s.await(ctx, req, sub, in.RunID, wait, true)
		})
}

func (s *Server) view(ctx context.Context, runID string) (RunResult, error) {
	v, err := s.svc.GetRunBrief(ctx, runID) // the result shows no steps, but a failed run's
	if err != nil {
		return RunResult{}, err
	}
	return s.runResult(s.withFailedSteps(ctx, v)), nil
}

// watch waits for a run, sending progress notifications when the caller
// asked for them (a progress token).
func (s *Server) watch(ctx context.Context, req *mcp.CallToolRequest, runID string, wait time.Duration) error {
	if wait <= 0 {
		return nil
	}
	p := s.progress(ctx, req, runID)
	defer p.end()
	_, err := s.svc.Watch(ctx, runID, wait, nil, p.onEvent())
	return err
}

package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunRewindIn are run_rewind's arguments.
type RunRewindIn struct {
	RunID       string   `json:"run_id"`
	ToStep      string   `json:"to_step" jsonschema:"a top-level question or agent step"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty"`
}

// previousHint marks a question whose default is the earlier answer.
const previousHint = "(your earlier answer)"

// withPreviousHint is a question's help with previousHint after it.
func withPreviousHint(help string) string {
	if help == "" {
		return previousHint
	}
	return help + " " + previousHint
}

// addRewindTools adds run_rewind and run_restart: going back in a run,
// the earlier answers offered as defaults (pause.previous).
func (s *Server) addRewindTools() {
	addTool(s, &mcp.Tool{Name: "run_rewind", Title: "Go back to a question",
		Description: "Re-ask a run from a question as a new run, earlier answers as defaults (previous: true); an unfinished run is canceled. Returns the new run's shape.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunRewindIn) (RunResult, error) {
			return s.goBack(ctx, req, in.WaitSeconds, func() (string, error) { return s.svc.RewindRun(ctx, in.RunID, in.ToStep) })
		})
	addTool(s, &mcp.Tool{Name: "run_restart", Title: "Restart a run",
		Description: "Start a run over with the same inputs, earlier answers as defaults; an unfinished run is canceled. Returns the new run's shape.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunIDIn) (RunResult, error) {
			return s.goBack(ctx, req, in.WaitSeconds, func() (string, error) { return s.svc.RestartRun(ctx, in.RunID) })
		})
}

// goBack starts the new run and returns its shape as run_fork does.
func (s *Server) goBack(ctx context.Context, req *mcp.CallToolRequest, waitSeconds *float64, start func() (string, error)) (RunResult, error) {
	wait, err := s.waitFor(waitSeconds, s.opts.DefaultWait)
	if err != nil {
		return RunResult{}, err
	}
	if req.Params.RequestState != "" {
		return s.resumeElicitation(ctx, req, wait)
	}
	sub := s.svc.Subscribe()
	defer sub.Close()
	id, err := start()
	if err != nil {
		return RunResult{}, err
	}
	if ok, err := s.asTask(ctx, req, id); ok || err != nil {
		return RunResult{}, err
	}
	return s.await(ctx, req, sub, id, wait, true)
}

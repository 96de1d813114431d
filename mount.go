package stepwise

import (
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/mcpserver"
)

// MountOptions configure MountTools and MountWorkflow.
type MountOptions struct {
	// Tools is the set of built-in tools MountTools adds: "all" ("") or
	// "core" (author and run workflows only).
	Tools string
	// Wait is how long a tool that starts or continues a run waits for it
	// to finish or pause when the caller does not say (0: 20s).
	Wait time.Duration
	// Logger receives the tools' logs (nil: none).
	Logger *slog.Logger
}

// MountTools adds stepwise's MCP tools (run_start, run_continue,
// workflow_list …) to server, the program's own go-sdk server, with the
// same schemas and results as `stepwise serve`. Resources, prompts and
// notifications are the program's server's own business and are not
// added. An unknown Tools is refused (code.ArgumentsInvalid).
func (e *Engine) MountTools(server *mcp.Server, opts MountOptions) error {
	_, err := mcpserver.Mount(server, e.svc, e.mcpOptions(opts))
	return e.mountError(err)
}

// MountWorkflow adds the library workflow name to server as two tools:
// <name>_start, whose arguments are the workflow's inputs, and
// <name>_continue, which answers the run's pauses with their token. Both
// return the run. A name not in the library is refused
// (code.WorkflowNotFound).
func (e *Engine) MountWorkflow(server *mcp.Server, name string, opts MountOptions) error {
	s, err := mcpserver.Attached(server, e.svc, e.mcpOptions(opts))
	if err != nil {
		return e.mountError(err)
	}
	return errorOf(s.MountWorkflow(name))
}

func (e *Engine) mcpOptions(o MountOptions) mcpserver.Options {
	return mcpserver.Options{Tools: mcpserver.ToolProfile(o.Tools), DefaultWait: o.Wait, Logger: o.Logger}
}

func (e *Engine) mountError(err error) error {
	if errors.Is(err, mcpserver.ErrUnknownToolProfile) {
		return &Error{Code: code.ArgumentsInvalid, Message: err.Error(), err: err}
	}
	return errorOf(err)
}

package mcpserver

import (
	"context"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// Stateless mode (Options.Stateless, serve --stateless): the client holds
// the run. run_start and run_continue return its sealed state with the run
// shape; run_continue and run_restore take it back. The tools that read or
// change stored runs answer NOT_STATELESS.

// StatelessRunResult is the run shape with the run's sealed state.
type StatelessRunResult struct {
	RunResult
	// State is the run's whole state, sealed: send it back with the next
	// run_continue (or run_restore), to this server or any sharing its key.
	State string `json:"state"`
	// StateBytes is the state's length (at most service.MaxStateBytes).
	StateBytes int `json:"state_bytes"`
}

// stateLen implements stateCarrier.
func (r StatelessRunResult) stateLen() int { return len(r.State) }

// shrink implements shrinker: the run shape shrunk, the state whole.
func (r StatelessRunResult) shrink() any {
	if sh, ok := r.RunResult.shrink().(RunResult); ok {
		r.RunResult = sh
	}
	return r
}

// stateCarrier is a result holding a sealed state, which the result
// ceiling does not count (the state has its own, service.MaxStateBytes).
type stateCarrier interface{ stateLen() int }

// RunContinueStatelessIn are run_continue's arguments on a stateless server.
type RunContinueStatelessIn struct {
	State       string   `json:"state" jsonschema:"the state of the last result, exactly as returned"`
	Token       string   `json:"token,omitempty" jsonschema:"the pause's token, exactly as returned (omit only for a run left running)"`
	Value       any      `json:"value,omitempty" jsonschema:"the answer, or the agent step's output; omit to take a question's default"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"default 20, max 300"`
}

// RunRestoreIn are run_restore's arguments.
type RunRestoreIn struct {
	State string `json:"state" jsonschema:"a state a result gave, exactly as returned"`
}

// RunRewindStatelessIn are run_rewind's arguments on a stateless server.
type RunRewindStatelessIn struct {
	State       string   `json:"state" jsonschema:"the state of the last result, exactly as returned"`
	ToStep      string   `json:"to_step" jsonschema:"a top-level question or agent step"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"default 20, max 300"`
}

// RunRestartStatelessIn are run_restart's arguments on a stateless server.
type RunRestartStatelessIn struct {
	State       string   `json:"state" jsonschema:"the state of the last result, exactly as returned"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"default 20, max 300"`
}

// statelessTools are the tools whose schemas a stateless server derives
// from its own types instead of the generated ones.
var statelessTools = map[string]bool{"run_start": true, "run_continue": true, "run_rewind": true, "run_restart": true, "run_get": true, "run_list": true,
	"run_cancel": true, "run_retry": true, "run_fork": true, "run_pause": true, "run_resume": true}

func (s *Server) statelessResult(res *service.StatelessResult, draft bool) StatelessRunResult {
	r := s.runResult(res.View, res.View.Steps != nil)
	r.Draft = draft
	if p := r.Pause; p != nil && res.View.Pause != nil && res.View.Pause.HasSecret() {
		// No one-time page, no terminal: the run is in the client's hands.
		p.HowToAnswer = "a secret: never ask for it in the chat. Call run_continue with value \"$NAME\", an environment variable of the server that holds it"
	}
	if r.Status == code.StatusWaiting && r.Pause != nil {
		r.Next = "Answer the pause with run_continue: its token, the value and this state (" + r.Pause.HowToAnswer + ")."
	} else if r.Status == code.StatusRunning || r.Status == code.StatusPending {
		r.Next = "It is still working: call run_continue with this state (no token) to go on."
	} else if r.Status == code.StatusFailed {
		r.Next = "It failed: error says why; start it again with run_start once the cause is fixed."
	}
	return StatelessRunResult{RunResult: r, State: res.State, StateBytes: len(res.State)}
}

// statelessOutputSchema is the output schema of run_restore, a tool only
// stateless servers have (run_start's and run_continue's are derived as
// outputSchemaTools say).
func statelessOutputSchema() map[string]any {
	out, err := jsonschema.For[StatelessRunResult](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		panic("run_restore output schema: " + err.Error())
	}
	shape, err := outputShape(out)
	if err != nil {
		panic("run_restore output schema: " + err.Error())
	}
	return shape
}

// addStatelessRunTools registers the run tools of a stateless server.
func (s *Server) addStatelessRunTools() {
	addTool(s, &mcp.Tool{Name: "run_start", Title: "Start a run",
		Description: "Run a library workflow (workflow: a saved one's name, else a draft's) or an inline definition, with inputs. This server is stateless: the result carries state, the run's whole state sealed; send it back with run_continue. Returns {run_id, status, outputs?, pause?, error?, next, state, state_bytes} once it pauses, finishes or wait_seconds pass.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunStartIn) (StatelessRunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			var l *service.Loaded
			switch {
			case in.Workflow != "" && in.Definition != "":
				return StatelessRunResult{}, argumentsError("workflow", "give workflow or definition, not both")
			case in.Workflow != "":
				l, err = s.svc.LoadRunnable(in.Workflow)
			case in.Definition != "":
				l, err = s.svc.Parse([]byte(in.Definition))
			default:
				return StatelessRunResult{}, argumentsError("workflow", "give workflow (a library name) or definition (YAML or JSON text)")
			}
			if err != nil {
				return StatelessRunResult{}, err
			}
			res, err := s.svc.StartStateless(ctx, l, in.Inputs, wait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			return s.statelessResult(res, l.Draft), nil
		})

	addTool(s, &mcp.Tool{Name: "run_continue", Title: "Answer a pause",
		Description: "Answer a pause of a run this stateless server returned: the state of the last result, the pause's token and the value. Automated steps run within the call. An invalid value is refused with violations; the state stays valid. Returns the run shape with the next state.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunContinueStatelessIn) (StatelessRunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			if strings.TrimSpace(in.State) == "" {
				return StatelessRunResult{}, argumentsError("state", "state is required: this server is stateless; send the state of the last result")
			}
			res, err := s.svc.ContinueStateless(ctx, in.State, in.Token, in.Value, wait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			return s.statelessResult(res, false), nil
		})

	addTool(s, &mcp.Tool{Name: "run_restore", Title: "Restore a run from its state", OutputSchema: statelessOutputSchema(),
		Description: "The run a state holds, as it stands (nothing runs): its current question offers the answer last given to it as default. Returns the run shape with the same state.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunRestoreIn) (StatelessRunResult, error) {
			res, err := s.svc.RestoreStateless(ctx, in.State)
			if err != nil {
				return StatelessRunResult{}, err
			}
			return s.statelessResult(res, false), nil
		})

	addTool(s, &mcp.Tool{Name: "run_rewind", Title: "Go back to a question", OutputSchema: statelessOutputSchema(),
		Description: "Re-ask the run a state holds from a question, earlier answers as defaults (previous: true). Returns the new run's shape and state.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunRewindStatelessIn) (StatelessRunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			res, err := s.svc.RewindStateless(ctx, in.State, in.ToStep, wait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			return s.statelessResult(res, false), nil
		})
	addTool(s, &mcp.Tool{Name: "run_restart", Title: "Restart a run", OutputSchema: statelessOutputSchema(),
		Description: "Start the run a state holds over with the same inputs, earlier answers as defaults. Returns the new run's shape and state.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in RunRestartStatelessIn) (StatelessRunResult, error) {
			wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			res, err := s.svc.RestartStateless(ctx, in.State, wait)
			if err != nil {
				return StatelessRunResult{}, err
			}
			return s.statelessResult(res, false), nil
		})

	refuse := func(name, title, feature string) {
		addTool(s, &mcp.Tool{Name: name, Title: title,
			Description: "Not on this stateless server: " + feature + " needs the server's storage. Answers NOT_STATELESS.",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}},
			func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (RunResult, error) {
				return RunResult{}, service.NotStateless(name + " (" + feature + ")")
			})
	}
	refuse("run_get", "Get a run", "reading a stored run")
	refuse("run_list", "List runs", "the run history")
	refuse("run_cancel", "Cancel a run", "canceling a stored run")
	refuse("run_retry", "Retry a failed run", "retrying a stored run")
	refuse("run_fork", "Fork a run", "forking a stored run")
	refuse("run_pause", "Hold a run", "holding a stored run")
	refuse("run_resume", "Resume a held run", "resuming a stored run")
}

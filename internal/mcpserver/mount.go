package mcpserver

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// Mount registers the built-in tools of opts.Tools, served by svc, on srv:
// an SDK server a Go program built and serves itself. The tools are the
// same as New's (same handlers and schemas), with the run view's ui://
// resource their _meta names (an MCP App); what belongs to a whole
// server is not installed — other resources, prompts, completions, the Tasks
// extension, notifications (Start), wf_<name> tools (ExposeWorkflows) —
// nor what Options say of it (Metrics, Tracer, MaxMessageBytes). The
// returned Server adds workflow tool pairs (MountWorkflow).
func Mount(srv *mcp.Server, svc *service.Service, opts Options) (*Server, error) {
	s, err := Attached(srv, svc, opts)
	if err != nil {
		return nil, err
	}
	s.addTools()
	return s, nil
}

// Attached is Mount without the built-in tools: a Server whose tools go
// on srv, to add workflow tool pairs to (MountWorkflow), and the run
// view's resource, which those tools name.
func Attached(srv *mcp.Server, svc *service.Service, opts Options) (*Server, error) {
	if srv == nil || svc == nil {
		return nil, errors.New("mcpserver: mount needs a server and a service")
	}
	s, err := newServer(opts)
	if err != nil {
		return nil, err
	}
	s.mcp = srv
	s.addApp()
	s.Attach(svc)
	s.ready.open(nil)
	return s, nil
}

// Workflow tool pair suffixes (MountWorkflow).
const (
	startSuffix    = "_start"
	continueSuffix = "_continue"
)

// MountWorkflow adds the tool pair of the library workflow name:
// <name>_start, whose arguments are the workflow's inputs (as a wf_<name>
// tool's), and <name>_continue, which answers its pauses (as run_continue).
// Both return the run shape. The workflow is read again at every start,
// so edits apply; the tools' schemas are those of the workflow now.
func (s *Server) MountWorkflow(name string) error {
	l, err := s.svc.LoadLibraryWorkflow(name)
	if err != nil {
		return err
	}
	wf := l.Workflow
	sum := service.WorkflowSummary{Name: name, Title: wf.Title, Description: wf.Description, Inputs: service.InputsOf(wf), Valid: true, Version: l.Version}
	start := exposedTool(name+startSuffix, sum)
	start.Description = strings.Replace(start.Description, "with run_continue", "with "+name+continueSuffix, 1)
	s.mcp.AddTool(start, s.toolHandler(start.Name, s.runExposed(name)))
	cont := &mcp.Tool{Name: name + continueSuffix, Title: "Answer a pause of " + name,
		Description: "Answer a pause of a " + name + " run: its token and the value (a question's answer, or an agent step's output matching its output_schema). An invalid value is refused with violations; the token stays valid. Returns the run shape.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}}
	h := addTool(s, cont, s.runContinue)
	if !s.offers(cont.Name) { // a core profile lists only its own built-in tools
		s.mcp.AddTool(cont, h)
	}
	return nil
}

// runContinue is run_continue: it answers a pause and waits for the run
// (the top-level one, for a sub-workflow's pause) to move.
func (s *Server) runContinue(ctx context.Context, req *mcp.CallToolRequest, in RunContinueIn) (RunResult, error) {
	wait, err := s.waitFor(in.WaitSeconds, s.opts.DefaultWait)
	if err != nil {
		return RunResult{}, err
	}
	if req.Params.RequestState != "" {
		return s.resumeElicitation(ctx, req, wait)
	}
	sub := s.svc.Subscribe()
	defer sub.Close()
	if strings.TrimSpace(in.Token) == "" {
		return RunResult{}, argumentsError("token", "token is required: use the token of the pause exactly as returned")
	}
	res, err := s.svc.ContinueFromAgent(ctx, in.Token, in.Value)
	if err != nil {
		return RunResult{}, err
	}
	root := res.RunID
	if res.ParentID != "" { // a sub-workflow's question: follow the top-level run
		if root, err = s.svc.RootRun(ctx, res.ParentID); err != nil {
			return RunResult{}, err
		}
	}
	if ok, err := s.asTask(ctx, req, root); ok || err != nil {
		return RunResult{}, err
	}
	return s.awaitAsking(ctx, req, sub, root, wait, true, "", res)
}

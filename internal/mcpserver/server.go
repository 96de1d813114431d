// Package mcpserver is stepwise's Model Context Protocol surface: tools,
// resources, prompts, completions, elicitation and notifications, glued to
// the service. It holds no workflow logic: every tool translates its
// arguments into a service call and the result into a small JSON answer,
// and every error into the one structured ToolError shape.
package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/mcptasks"
	"stepwise.dev/stepwise/internal/metric"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/telemetry"
)

// Options configure a server.
type Options struct {
	// Version is reported as the server's version.
	Version string
	// BaseURL is the server's own HTTP origin (http://127.0.0.1:7420) when
	// it serves HTTP; secret pages are offered under it. Empty over stdio.
	BaseURL string
	// ExposeWorkflows makes each library workflow a tool wf_<name>.
	ExposeWorkflows bool
	// Tools is the profile of built-in tools offered ("" is ToolsAll). It
	// must be one of ToolProfiles (see ParseToolProfile): New panics
	// otherwise.
	Tools ToolProfile
	// Logger receives the server's own logs (never stdout).
	Logger *slog.Logger
	// ProtocolLogger receives the MCP SDK's logs (default: discard). It
	// must not log to MCP sessions: the SDK logs while holding its locks.
	ProtocolLogger *slog.Logger
	// DefaultWait is how long run_start and run_continue wait for a run to
	// finish or pause when the caller does not say (default 20s).
	DefaultWait time.Duration
	// LibraryPoll is how often the library's files are re-read to notice
	// edits made outside stepwise (default 2s; a minute when the library is
	// in a database other replicas share, whose changes are pushed).
	LibraryPoll time.Duration
	// MaxMessageBytes bounds an incoming JSON-RPC message: a stdio line
	// (ConnectStdio) or an HTTP POST body (default
	// DefaultMaxMessageBytes). A longer one is refused without being held
	// whole, and the session goes on.
	MaxMessageBytes int
	// ProgressEvery is how often a caller that sent a progress token hears
	// of a step that is still running (default 5s).
	ProgressEvery time.Duration
	// Metrics, when set, count the MCP requests by method and outcome.
	Metrics *metric.Metrics
	// Tracer, when set, makes a span per MCP request.
	Tracer *telemetry.Tracer

	// Stateless serves a stateless service (service.Options.Stateless):
	// the run tools take and return the run's sealed state (stateless.go).
	Stateless bool

	// deriveSchemas derives every built-in tool's schemas from the Go
	// types instead of reading toolschemas.json (which is generated so).
	deriveSchemas bool
}

// Server is an MCP server for one stepwise service. One Server serves any
// number of sessions (stdio has one; HTTP one per client).
type Server struct {
	svc  *service.Service
	mcp  *mcp.Server
	opts Options
	log  *slog.Logger

	secrets *secretPages
	subs    *subscriptions

	exposedMu sync.Mutex
	exposed   map[string]string // tool name → workflow version

	stop    context.CancelFunc
	stopped chan struct{}
	ready   *readiness

	libMu   sync.Mutex
	libSeen map[string]string // library name → version, as last notified

	httpMu sync.Mutex
	https  []*httpHandlers // the streamable-HTTP handlers of HTTPHandler

	tasks *tasks // runs as tasks (the MCP Tasks extension, task.go)
	// fixtureTasks are the conformance fixtures' tasks (fixture.go), nil
	// without AddConformanceFixtures.
	fixtureTasks *fixtureTasks
}

// New builds the server and registers its tools, resources and prompts.
// Its sessions are served at once; Start begins its notifications.
func New(svc *service.Service, opts Options) *Server {
	s := NewUnattached(opts)
	s.Attach(svc)
	s.ready.open(nil)
	return s
}

// NewUnattached is New before the service exists: building the tools and
// their schemas does not need it, so `serve` does it while the store opens
// (a few milliseconds of every start). Sessions may connect at once: they
// are answered the handshake (initialize, ping) and their other requests
// wait until Start, after Attach, or fail once Fail is called.
func NewUnattached(opts Options) *Server {
	s, err := newServer(opts)
	if err != nil {
		panic("mcpserver: " + err.Error())
	}
	opts = s.opts
	caps := &mcp.ServerCapabilities{
		//lint:ignore SA1019 MCP logging stays for clients before 2026-07-28 (SEP-2577 deprecates it)
		Logging:   &mcp.LoggingCapabilities{},
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: false},
	}
	mcptasks.Advertise(caps)
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "stepwise", Title: "stepwise workflow engine", Version: opts.Version}, &mcp.ServerOptions{
		Instructions:       instructions,
		Logger:             opts.ProtocolLogger,
		CompletionHandler:  s.complete,
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		SetCacheable:       s.cacheHint,
		Capabilities:       caps,
	})
	s.mcp.AddReceivingMiddleware(s.boundReplies, checkSetLevel, s.ready.middleware)
	if err := mcptasks.Install(s.mcp, s.tasks); err != nil {
		panic(err) // only a standard method's name is refused
	}
	if opts.Metrics != nil {
		// Added last, so outermost: a request's time includes waiting for start.
		s.mcp.AddReceivingMiddleware(opts.Metrics.MCPMiddleware())
	}
	if opts.Tracer != nil {
		s.mcp.AddReceivingMiddleware(opts.Tracer.MCPMiddleware())
	}
	s.addTools()
	s.addResources()
	s.addApp()
	s.addPrompts()
	return s
}

// newServer is a Server of opts (defaults applied) before it has an SDK
// server and tools.
func newServer(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.ProtocolLogger == nil {
		opts.ProtocolLogger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.DefaultWait <= 0 {
		opts.DefaultWait = 20 * time.Second
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	profile, err := ParseToolProfile(string(opts.Tools))
	if err != nil {
		return nil, err
	}
	opts.Tools = profile
	s := &Server{opts: opts, log: opts.Logger, secrets: newSecretPages(), subs: newSubscriptions(), exposed: map[string]string{}, ready: newReadiness()}
	s.tasks = newTasks(s)
	return s, nil
}

// addTools registers the built-in tools the profile offers on s.mcp.
func (s *Server) addTools() {
	s.addWorkflowTools()
	s.addLibraryTools()
	s.addActionTools()
	s.addGenerateTool()
	s.addPlanTool()
	s.addCatalogTools()
	s.addRunTools()
	s.addPurgeTool()
	s.addSearchTools()
	s.addScheduleTools()
}

const instructions = `stepwise runs workflows: validated YAML/JSON definitions of automated steps, questions for a person and tasks for you (agent steps).
Start with workflow_list, or read stepwise://docs/workflows to author one (validate with workflow_validate).
run_start returns when the run finishes, pauses or wait_seconds pass. A pause carries a token: answer a question (relay it to the person) or do an agent task, then call run_continue with the token and the value. A run still "running" is followed with run_get.
Errors carry error_code, violations and suggested_action: fix what they name and call again.`

// Attach gives a server built by NewUnattached its service. Requests
// other than the handshake still wait for Start.
func (s *Server) Attach(svc *service.Service) {
	s.svc = svc
	// Replicas on one database share the secret pages.
	s.secrets.db, s.secrets.log = svc.SecretPages(), s.log
}

// Fail answers every request waiting for a server built by NewUnattached,
// and every later one but the handshake, with err: its service could not
// be opened.
func (s *Server) Fail(err error) { s.ready.open(err) }

// MCP returns the SDK server, to connect transports to.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Start begins forwarding engine events to subscribers and, with
// ExposeWorkflows, following the library, then lets the requests of
// sessions connected before it through. Call Close to stop.
func (s *Server) Start(ctx context.Context) {
	ctx, s.stop = context.WithCancel(ctx)
	s.stopped = make(chan struct{})
	var wg sync.WaitGroup
	// Subscribed before Start returns: events of runs started right after
	// (a session's first call) must not pass before the pump listens.
	// Passive: of the runs other replicas drive, only those a session
	// subscribed to are read and forwarded here.
	events, unsubscribe := s.svc.Engine.SubscribeWanting(1024, func(runID string) bool {
		return s.subs.watched(uriRunPrefix+runID) || s.subs.watched(uriRunPrefix+runID+"/history")
	})
	wg.Add(1)
	go func() { defer wg.Done(); s.pumpEvents(ctx, events, unsubscribe) }()
	s.checkLibrary(ctx)
	wg.Add(1)
	go func() { defer wg.Done(); s.followLibrary(ctx) }()
	go func() { wg.Wait(); close(s.stopped) }()
	s.ready.open(nil)
}

// Close stops what Start began.
func (s *Server) Close() {
	if s.stop != nil {
		s.stop()
		<-s.stopped
	}
}

// Package service holds the use cases every surface calls: the CLI, the
// MCP server and the dashboard do nothing but translate their requests to
// these calls and the results back. It wires the home directory, the store
// and the engine together.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/home"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/mcpclient"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/memory"
	"stepwise.dev/stepwise/internal/store/postgres"
	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/token"
	"stepwise.dev/stepwise/internal/workflow"
)

// Options configure a service.
type Options struct {
	// Home is the --home flag ("" = STEPWISE_HOME or ~/.stepwise).
	Home string
	// Durability is sqlite.Full (default) or sqlite.Normal (the same
	// names in store/postgres).
	Durability string
	// Database is a PostgreSQL URL (postgres:// or postgresql://) whose
	// database keeps the runs instead of the home's SQLite file (""), and
	// what replicas share: the library, catalogs, the server key (unless
	// $STEPWISE_SECRET_KEY) and secret pages, the first process on a new
	// database importing its home's library, catalogs and key. Errors
	// opening it name the URL without its password.
	Database string
	// TokenTTL is the lifetime of pause tokens (default 24h).
	TokenTTL time.Duration
	// Logger receives logs (default: discard).
	Logger *slog.Logger
	// ActionOutput receives actions' free-form output (default: discard).
	ActionOutput io.Writer
	// LookupEnv reads the environment (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// ShutdownGrace is how long Close lets in-flight steps finish before
	// interrupting them (default 5s).
	ShutdownGrace time.Duration
	// MaxRecoveries is how often a step runs again after the process
	// ended while it ran, before it fails with STEP_CRASHED (default 3;
	// see engine.Config.MaxRecoveries).
	MaxRecoveries int
	// LeaseTTL is how long a run's lease lasts without a heartbeat
	// (engine.Config.LeaseTTL; 0: its default).
	LeaseTTL time.Duration
	// MaxDrivenRuns bounds how many runs this process drives at once, and
	// so how many it claims (engine.Config.MaxParallelRuns; 0: 64).
	MaxDrivenRuns int
	// CommitObserver is engine.Config.CommitObserver (nil: none).
	CommitObserver func(time.Duration)
	// Now is the engine's clock (default time.Now; tests move it). The
	// retention policy measures ages with it too.
	Now func() time.Time
	// Retention purges finished runs that finished longer ago than this,
	// with their history (0: keep them all).
	Retention time.Duration
	// MaxRuns keeps at most this many finished top-level runs, the newest,
	// purging older ones with their history (0: no limit).
	MaxRuns int
	// RetentionEvery is how often the retention policy (Retention,
	// MaxRuns) is applied after the first time, at Open (default 1h).
	RetentionEvery time.Duration
	// AllowCatalogURLs lets catalogs be imported from http(s) URLs: the
	// operator's choice, since a URL makes the server fetch from its
	// network on a caller's behalf. Files and inline documents always work.
	AllowCatalogURLs bool
	// CatalogHTTPClient sends catalog operations' requests (default: a
	// client through NetworkPolicy). A client given here is used as it
	// is: its transport decides where it connects.
	CatalogHTTPClient *http.Client
	// AllowInlineMCPCommands lets the mcp action start the program a step
	// names in with.command. That is running a command on this machine, so
	// a surface decides: the CLI allows it (the person runs their own
	// workflows), `stepwise serve` only with --allow-shell (workflows come
	// from agents). Servers named in servers.yaml are always allowed.
	AllowInlineMCPCommands bool
	// Workspace is the directory the shell and file actions may touch
	// (default <home>/workspace, created 0700).
	Workspace string
	// ShellPolicy says which commands the shell action may run. The zero
	// value runs none: the CLI enables it for local runs, `serve` only
	// when the operator says so (--allow-shell, --allow-shell-cmd).
	ShellPolicy action.ShellPolicy
	// EnvPolicy says which environment variables workflows may read (as
	// env.NAME, an input's or question's env, a secret's $NAME, a catalog
	// credential). The zero value does not restrict: the CLI leaves it so,
	// `serve` restricts it to what the operator allows (--allow-env).
	// Servers named in servers.yaml read the environment unrestricted: the
	// operator wrote them.
	EnvPolicy secret.EnvPolicy
	// NetworkPolicy says which addresses workflows may make the server
	// connect to: http steps, catalog operations, an mcp step's url, a
	// catalog imported from a URL. The zero value does not restrict: the
	// CLI leaves it so, `serve` refuses loopback, private, link-local and
	// cloud metadata addresses but those the operator allows
	// (--allow-network, --allow-private-network). Servers named in
	// servers.yaml connect unrestricted: the operator wrote them.
	NetworkPolicy action.NetworkPolicy
	// Stateless opens no database: runs live in the states clients carry
	// (stateless.go); the home is read for the key and the library only.
	Stateless bool
}

// workflowEnv is how workflows read the environment: through the policy.
func workflowEnv(opts Options) func(string) (string, bool) {
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	return opts.EnvPolicy.Lookup(lookup)
}

// Service is stepwise's use cases.
type Service struct {
	Home    *home.Home
	Store   store.Store
	Engine  *engine.Engine
	Actions *action.Registry
	// Library holds the saved workflows and drafts: the home's files, or
	// the database's on PostgreSQL (shared by replicas).
	Library library.Backend
	// Workspace is where the shell and file actions work.
	Workspace *action.Workspace
	// ShellPolicy is the policy the shell action runs under.
	ShellPolicy action.ShellPolicy
	// EnvPolicy is what workflows may read of the environment.
	EnvPolicy secret.EnvPolicy
	// NetworkPolicy is where workflows may make the server connect.
	NetworkPolicy action.NetworkPolicy

	summaries summaryCache
	views     viewReads
	watchers  libraryWatchers
	search    searchState

	now       func() time.Time
	envLookup func(string) (string, bool) // through EnvPolicy
	log       *slog.Logger
	retention retentionPolicy
	// stopRetention stops the retention goroutine (nil when none runs).
	stopRetention func()
	// scheduler is the schedules' goroutine (StartScheduler).
	scheduler schedulerState
	// hooks finds the workflow declaring a webhook (webhook.go).
	hooks    hookIndex
	catalogs *catalogs
	// states signs what clients carry between requests (SignState).
	states *token.StateSigner
	// feed carries changes to and from the other processes sharing the
	// database (nil on SQLite); stopFeed stops listening to it, which
	// starts with the first watcher (OnLibraryChange).
	feed       changeFeed
	feedMu     sync.Mutex
	stopFeed   func()
	feedClosed bool
	// stateless is set in stateless mode (Options.Stateless).
	stateless *statelessMode
	// inCall: this service serves one stateless call (stateless.go).
	inCall bool
}

// Open opens the home directory, its database and an engine. It does not
// resume runs: call Recover for that (a server does; a one-shot CLI
// command drives only its own run).
func Open(ctx context.Context, opts Options) (*Service, error) {
	if opts.Retention < 0 || opts.MaxRuns < 0 {
		return nil, fmt.Errorf("open service: retention %s and max runs %d must not be negative", opts.Retention, opts.MaxRuns)
	}
	dir, err := home.Resolve(opts.Home)
	if err != nil {
		return nil, err
	}
	h, err := home.Open(dir)
	if err != nil {
		return nil, err
	}
	wsDir := opts.Workspace
	if wsDir == "" {
		wsDir = h.WorkspaceDir()
	}
	ws, err := action.OpenWorkspace(wsDir)
	if err != nil {
		return nil, err
	}
	var st store.Store
	if opts.Stateless {
		if opts.Database != "" {
			return nil, fmt.Errorf("open service: a stateless server opens no database (%s)", postgres.Redact(opts.Database))
		}
		st, err = memory.New(), nil // holds no run: each call has its own
	} else {
		st, err = openStore(ctx, h, opts)
	}
	if err != nil {
		return nil, err
	}
	key, err := serverKey(ctx, h, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	lib, err := openLibrary(h, st, logger)
	if err != nil {
		st.Close()
		return nil, &DatabaseError{err}
	}
	var feed changeFeed
	if pg := shared(st); pg != nil {
		f, err := pg.Feed(ctx)
		if err != nil {
			st.Close()
			return nil, &DatabaseError{err}
		}
		feed = f
	}
	// One transport for every connection a workflow asks for, through the
	// network policy (http.DefaultTransport when it does not restrict).
	transport := opts.NetworkPolicy.Transport()
	actions := action.Builtins()
	actions.Register(action.HTTP{Transport: transport})
	actions.Register(mcpclient.New(mcpclient.Config{ServersFile: filepath.Join(h.Dir, mcpclient.ServersFile),
		AllowInlineCommands: opts.AllowInlineMCPCommands, LookupEnv: opts.LookupEnv,
		InlineEnv: workflowEnv(opts), InlineEnvHint: opts.EnvPolicy.UnsetHint, InlineTransport: transport}))
	actions.Register(action.NewShell(ws, opts.ShellPolicy))
	actions.Register(action.File{Workspace: ws})
	svc := &Service{Home: h, Store: st, Actions: actions, Library: lib, Workspace: ws, ShellPolicy: opts.ShellPolicy, EnvPolicy: opts.EnvPolicy,
		NetworkPolicy: opts.NetworkPolicy, now: opts.Now, envLookup: workflowEnv(opts), log: opts.Logger,
		retention: retentionPolicy{olderThan: opts.Retention, maxRuns: opts.MaxRuns}, feed: feed}
	if svc.now == nil {
		svc.now = time.Now
	}
	if svc.log == nil {
		svc.log = slog.New(slog.DiscardHandler)
	}
	svc.states = token.NewStateSigner(key)
	cfg := engine.Config{Store: st, Actions: actions, Key: key, TokenTTL: opts.TokenTTL,
		Logger: opts.Logger, ActionOutput: opts.ActionOutput, LookupEnv: workflowEnv(opts), EnvHint: opts.EnvPolicy.UnsetHint, ShutdownGrace: opts.ShutdownGrace, MaxRecoveries: opts.MaxRecoveries, LeaseTTL: opts.LeaseTTL, MaxParallelRuns: opts.MaxDrivenRuns,
		Workflows: svc.subWorkflow, Now: opts.Now, CommitObserver: opts.CommitObserver}
	if opts.Stateless {
		if svc.stateless, err = newStatelessMode(cfg, key); err != nil {
			st.Close()
			return nil, err
		}
	}
	eng, err := engine.New(cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	svc.Engine = eng
	svc.openCatalogs(opts, transport)
	if svc.retention.active() {
		svc.startRetention(opts.RetentionEvery)
	}
	return svc, nil
}

// Close stops the retention policy and the engine (runs stay resumable),
// and closes the database.
func (s *Service) Close(ctx context.Context) error {
	if s.stopRetention != nil {
		s.stopRetention()
	}
	s.stopScheduler()
	s.feedMu.Lock()
	s.feedClosed = true
	if s.stopFeed != nil {
		s.stopFeed()
	}
	s.feedMu.Unlock()
	s.search.close()
	return errors.Join(s.Engine.Close(ctx), s.Store.Close())
}

// SignState signs data a client carries to a later request (an MCP multi
// round-trip's requestState) with a key derived from the server key: any
// replica opens it (OpenState), nobody alters it.
func (s *Service) SignState(data []byte) string { return s.states.Sign(data) }

// OpenState returns the data of a state SignState made; a state altered,
// truncated or signed with another key is refused (token.ErrSignature,
// token.ErrMalformed).
func (s *Service) OpenState(state string) ([]byte, error) { return s.states.Open(state) }

// Healthy reports whether this process can serve: nil, or why not (the
// database does not answer: store.ErrUnavailable).
func (s *Service) Healthy(ctx context.Context) error { return s.Store.Ping(ctx) }

// Recover resumes the runs that were running when the last process
// stopped.
func (s *Service) Recover(ctx context.Context) (int, error) { return s.Engine.Recover(ctx) }

// Loaded is a validated workflow ready to run.
type Loaded struct {
	Workflow   *workflow.Workflow
	Version    string
	Definition []byte // canonical JSON
	Path       string // "" for inline definitions
	// Draft: the name was not in the library, and this is the draft of
	// that name (drafts/), loaded for a run or a plan by name.
	Draft bool
}

// resolver checks `uses` against the registry and `workflow` against the
// library. A workflow file run by path may call siblings of its own
// directory too.
type resolver struct {
	actions *action.Registry
	svc     *Service
	dir     string
	// calls, when set, records every sub-workflow name looked up and
	// whether it was found: what the result depends on besides the file.
	calls map[string]bool
}

func (r resolver) HasAction(name string) (bool, []string) { return r.actions.HasAction(name) }

// InputKeys implements workflow.ActionInputs from the actions' schemas.
func (r resolver) InputKeys(name string) (keys, required []string, closed, ok bool) {
	return r.actions.InputKeys(name)
}
func (r resolver) HasWorkflow(name string) (bool, []string) {
	_, err := r.svc.findSubWorkflow(r.dir, name)
	if r.calls != nil {
		r.calls[name] = err == nil
	}
	return err == nil, nil
}

// subWorkflow loads the workflow a `workflow:` step calls: from the
// library, or from dir, the directory of the calling workflow's file.
func (s *Service) subWorkflow(_ context.Context, name, dir string) (*engine.WorkflowDef, error) {
	loc, err := s.findSubWorkflow(dir, name)
	if err != nil {
		return nil, err
	}
	data, err := loc.read()
	if err != nil {
		return nil, err
	}
	l, err := s.parseIn(data, loc.dir())
	if err != nil {
		return nil, err
	}
	return &engine.WorkflowDef{Workflow: l.Workflow, Version: l.Version, Definition: l.Definition, Dir: loc.dir()}, nil
}

// LoadWorkflow finds a workflow by path or library name and validates it.
// A name not in the library loads the draft of that name, if any
// (LoadRunnable).
func (s *Service) LoadWorkflow(ref string) (*Loaded, error) {
	if home.ValidName(ref) {
		return s.LoadRunnable(ref)
	}
	path, err := s.findRef(ref)
	if err != nil {
		return nil, err
	}
	return s.loadFile(located{path: path})
}

// findDraft returns the file of the draft called name, or a
// WORKFLOW_NOT_FOUND that says neither the library nor the drafts have
// it (notFound is the library lookup's error).
func (s *Service) findDraft(name string, notFound error) (located, error) {
	loc, err := s.lookupEntry(library.Draft, name)
	if err != nil {
		return located{}, s.libraryError(err, name)
	}
	if loc.path == "" {
		e := s.workflowNotFound(name, fmt.Sprintf("no workflow %q in the library or in drafts", name), notFound, library.Saved, library.Draft)
		e.Suggestion = "list the library and its drafts and use a name from them"
		return located{}, e
	}
	return loc, nil
}

// loadFile reads and validates a workflow file or database entry.
func (s *Service) loadFile(loc located) (*Loaded, error) {
	data, err := loc.read()
	if err != nil {
		return nil, fmt.Errorf("read workflow %s: %w", loc.path, err)
	}
	dir := ""
	if !loc.inDB {
		dir = filepath.Dir(loc.path)
	}
	l, err := s.parseIn(data, dir)
	if err != nil {
		return nil, err
	}
	l.Path = loc.loadPath()
	return l, nil
}

// findRef finds a workflow by file path or library name (home.FindWorkflow),
// with an unsafe name as a security error.
func (s *Service) findRef(ref string) (string, error) {
	path, err := s.Home.FindWorkflow(ref)
	if err != nil {
		if errors.Is(err, home.ErrUnsafeName) {
			return "", &engine.Error{Code: CodeUnsafeName, Category: CategorySecurity, Name: ref, Message: err.Error(), Err: err,
				Suggestion: "give a workflow file's path or a name of the library"}
		}
		e := s.workflowNotFound(ref, err.Error(), err)
		e.Suggestion = "give a workflow file's path or a name of the library"
		return "", e
	}
	return path, nil
}

// Parse validates an inline definition (YAML or JSON).
func (s *Service) Parse(data []byte) (*Loaded, error) { return s.parseIn(data, "") }

func (s *Service) parseIn(data []byte, dir string) (*Loaded, error) {
	res := workflow.Check(data, workflow.Options{Resolver: resolver{actions: s.Actions, svc: s, dir: dir}})
	if !res.Valid() {
		what := "the workflow is invalid"
		if res.Workflow != nil && res.Workflow.Name != "" {
			what = fmt.Sprintf("workflow %s is invalid", res.Workflow.Name)
		}
		return nil, &engine.Error{Code: engine.CodeWorkflowInvalid, Category: engine.CategoryValidation,
			Message: what, Violations: res.Violations,
			Suggestion: "fix the listed violations and load it again"}
	}
	def, err := workflow.Canonical(res.Source.Value)
	if err != nil {
		return nil, err
	}
	return &Loaded{Workflow: res.Workflow, Version: res.Version, Definition: def}, nil
}

// StartRun starts a run of a loaded workflow. A detached run is recorded
// but not executed by this process. A workflow running shell commands the
// policy refuses is refused here (SHELL_NOT_ALLOWED), before anything
// runs.
func (s *Service) StartRun(ctx context.Context, l *Loaded, inputs map[string]any, detached bool) (string, error) {
	if err := s.storedRuns("a stored run (a stateless run starts with StartStateless)"); err != nil {
		return "", err
	}
	if err := s.checkPolicies(l); err != nil {
		return "", err
	}
	dir := ""
	if l.Path != "" {
		// Absolute, so a process started elsewhere finds the siblings.
		if abs, err := filepath.Abs(l.Path); err == nil {
			dir = filepath.Dir(abs)
		}
	}
	return s.Engine.Start(ctx, engine.StartRequest{Workflow: l.Workflow, Version: l.Version, Definition: l.Definition, Inputs: inputs, Detached: detached, Dir: dir})
}

// Continue answers a pause.
func (s *Service) Continue(ctx context.Context, token string, value any) (engine.ContinueResult, error) {
	return s.Engine.Continue(ctx, token, value)
}

// Cancel cancels a run, compensating its completed steps first when asked.
func (s *Service) Cancel(ctx context.Context, runID, reason string, compensate bool) error {
	return s.Engine.Cancel(ctx, runID, reason, compensate)
}

// Resume drives a running run in this process, or leaves it to the live
// process that drives it, and reports which.
func (s *Service) Resume(ctx context.Context, runID string) (engine.ResumeResult, error) {
	return s.Engine.Resume(ctx, runID)
}

// Wait waits until the run stops running (it waits, finishes, is
// canceled), or timeout passes (<= 0: no limit), and returns its status.
func (s *Service) Wait(ctx context.Context, runID string, timeout time.Duration) (string, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	st, err := s.Engine.Wait(ctx, runID)
	if errors.Is(err, context.DeadlineExceeded) {
		return st, nil
	}
	return st, err
}

// RetryRun re-runs a failed run from the step that failed.
func (s *Service) RetryRun(ctx context.Context, runID string, inputs map[string]any) error {
	if err := s.checkRunPolicies(ctx, runID); err != nil {
		return err
	}
	return s.Engine.RetryRun(ctx, runID, inputs)
}

// ForkRun starts a new run from a step of an existing run.
func (s *Service) ForkRun(ctx context.Context, runID, fromStep string, inputs map[string]any) (string, error) {
	if err := s.checkRunPolicies(ctx, runID); err != nil {
		return "", err
	}
	return s.Engine.ForkRun(ctx, runID, fromStep, inputs)
}

// PauseRun holds a run until it is resumed.
func (s *Service) PauseRun(ctx context.Context, runID string) error {
	return s.Engine.HoldRun(ctx, runID)
}

// Definition returns the workflow a run is pinned to.
func (s *Service) Definition(ctx context.Context, runID string) (*Loaded, error) {
	run, err := s.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, runNotFound(runID, err)
	}
	wf, err := s.Engine.Definition(ctx, run.Version)
	if err != nil {
		return nil, err
	}
	return &Loaded{Workflow: wf, Version: run.Version}, nil
}

func absDir(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return filepath.Dir(abs)
	}
	return filepath.Dir(path)
}

// DrivenElsewhere is a run that another live process drives (it holds the
// run's lease until Until, renewed while it drives).
type DrivenElsewhere struct {
	RunID, Owner string
	Until        time.Time
}

// DriveAll drives every interrupted (running or pending) run of the home in
// this process until none is running — recovery as a one-shot command.
// Runs that pause or finish stop counting; runs another live process
// drives are left to it and returned; it returns when no other is left.
func (s *Service) DriveAll(ctx context.Context) ([]DrivenElsewhere, error) {
	elsewhere := map[string]DrivenElsewhere{}
	for {
		ids, err := s.Store.RunIDsByStatus(ctx, store.StatusRunning, store.StatusPending)
		if err != nil {
			return nil, err
		}
		var mine []string
		for _, id := range ids {
			if _, ok := elsewhere[id]; ok {
				continue
			}
			r, err := s.Resume(ctx, id)
			if err != nil {
				return nil, err
			}
			if r.DrivenBy != "" {
				elsewhere[id] = DrivenElsewhere{RunID: id, Owner: r.DrivenBy, Until: r.Until}
				continue
			}
			mine = append(mine, id)
		}
		if len(mine) == 0 {
			out := make([]DrivenElsewhere, 0, len(elsewhere))
			for _, d := range elsewhere {
				out = append(out, d)
			}
			slices.SortFunc(out, func(a, b DrivenElsewhere) int { return strings.Compare(a.RunID, b.RunID) })
			return out, nil
		}
		for _, id := range mine {
			if _, err := s.Wait(ctx, id, 0); err != nil {
				return nil, err
			}
		}
	}
}

// openStore opens the store opts name: PostgreSQL at opts.Database, else
// the home's SQLite database.
func openStore(ctx context.Context, h *home.Home, opts Options) (store.Store, error) {
	if opts.Database == "" {
		return sqlite.Open(ctx, h.DBPath(), sqlite.Options{Durability: opts.Durability})
	}
	if !postgres.IsURL(opts.Database) {
		return nil, &DatabaseError{fmt.Errorf("database %s: want a postgres:// or postgresql:// URL", postgres.Redact(opts.Database))}
	}
	st, err := postgres.Open(ctx, opts.Database, postgres.Options{Durability: opts.Durability})
	if err != nil {
		return nil, &DatabaseError{err}
	}
	return st, nil
}

// DatabaseError is Open's error when the database Options.Database names
// cannot be used: not a PostgreSQL URL, a server that does not answer or
// refuses. Its text never holds the URL's password.
type DatabaseError struct{ Err error }

func (e *DatabaseError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *DatabaseError) Unwrap() error { return e.Err }

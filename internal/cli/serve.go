package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/api"
	"stepwise.dev/stepwise/internal/linelog"
	"stepwise.dev/stepwise/internal/mcpserver"
	"stepwise.dev/stepwise/internal/metric"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/web"
)

// DefaultHTTPAddr is where `serve --http` listens when no address is given.
const DefaultHTTPAddr = "127.0.0.1:7420"

type serveOptions struct {
	http            string
	leaseTTL        time.Duration
	maxDriven       int
	authTokens      []string
	insecure        bool
	behindTLSProxy  bool
	tlsCert, tlsKey string
	maxMessageBytes int
	sessionTimeout  time.Duration
	expose          bool
	tools           string
	catalogURLs     bool
	allowOrigins    []string
	publicURL       string
	logFile         string
	logLevel        string
	logFormat       string
	retention       durationFlag
	maxRuns         int
	allowShell      bool
	allowShellCmds  []string
	allowEnv        []string
	allowPrivateNet bool
	allowNetwork    []string
	fixtures        bool
	noDashboard     bool
	stateless       bool
}

// fixturesEnv must be 1 for the hidden --conformance-fixtures flag: the
// fixtures are tools of the MCP conformance suite, not stepwise's.
const fixturesEnv = "STEPWISE_TEST_FIXTURES"

func newServeCmd(g *globals) *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP to agents: over stdio (default) or streamable HTTP (--http)",
		Long: "serve runs stepwise as an MCP server. Over stdio (the default) an MCP client starts it as a\n" +
			"subprocess; with --http it listens for streamable HTTP at /mcp (default " + DefaultHTTPAddr + ").\n" +
			"Runs keep going between calls; after a restart, interrupted runs resume.\n" +
			"Workflows may not run commands (shell steps, mcp steps with an inline command) unless --allow-shell\n" +
			"(or, for shell steps, --allow-shell-cmd NAME) says so; shell and file work in the workspace\n" +
			"(--workspace, default HOME/workspace). Workflows read only the environment variables --allow-env\n" +
			"names (env.NAME, an input's or question's env, a secret given as $NAME, catalog credentials).\n" +
			"Workflows (http steps, catalog operations, mcp steps with a url, catalog imports from URLs) may not\n" +
			"make the server connect to loopback, private, link-local or cloud metadata addresses unless\n" +
			"--allow-network HOST|ADDR|CIDR or --allow-private-network says so.\n" +
			"Exit codes: 0 the client disconnected or SIGTERM, 2 usage error, 130 interrupted (Ctrl-C).",
		Args: func(cmd *cobra.Command, args []string) error {
			// "--http ADDR" with a space: the flag's optional value leaves
			// ADDR as an argument.
			if len(args) == 1 && cmd.Flags().Changed("http") && o.http == DefaultHTTPAddr {
				if _, _, err := net.SplitHostPort(args[0]); err == nil {
					o.http = args[0]
					return nil
				}
			}
			if len(args) > 0 {
				return usageErr("serve takes no arguments (did you mean --http %s?)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.http, "http", "", "serve streamable HTTP at ADDR/mcp instead of stdio (--http alone: "+DefaultHTTPAddr+")")
	f.Lookup("http").NoOptDefVal = DefaultHTTPAddr
	f.StringArrayVar(&o.authTokens, "auth-token", nil, "bearer token HTTP clients must send (repeatable; also $STEPWISE_AUTH_TOKENS, comma-separated)")
	f.BoolVar(&o.insecure, "insecure", false, "allow a non-loopback --http address without --auth-token or TLS")
	f.BoolVar(&o.behindTLSProxy, "behind-tls-proxy", false, "a non-loopback --http without --tls-cert is reached only through a proxy that terminates TLS")
	f.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this certificate file (with --tls-key)")
	f.StringVar(&o.tlsKey, "tls-key", "", "the private key file of --tls-cert")
	f.IntVar(&o.maxMessageBytes, "max-message-bytes", mcpserver.DefaultMaxMessageBytes, "refuse an incoming JSON-RPC message (a stdio line, an HTTP body) longer than this, with a JSON-RPC error")
	f.DurationVar(&o.sessionTimeout, "session-timeout", 30*time.Minute, "close HTTP sessions idle this long")
	f.BoolVar(&o.expose, "expose-workflows", false, "make each library workflow a tool wf_<name> taking its inputs")
	f.StringVar(&o.tools, "tools", string(mcpserver.ToolsAll), "which built-in tools to offer: all, or core (author and run workflows: a smaller tools/list for agents that pay per token)")
	f.BoolVar(&o.catalogURLs, "allow-catalog-urls", false, "let MCP callers import OpenAPI catalogs from http(s) URLs (the server fetches them)")
	f.BoolVar(&o.noDashboard, "no-dashboard", false, "with --http, serve no web dashboard at /")
	f.BoolVar(&o.stateless, "stateless", false, "open no database: run_start and run_continue return the run's sealed state, which the client sends back (replicas share only the key; no dashboard)")
	f.StringArrayVar(&o.allowOrigins, "allow-origin", nil, "browser origin allowed to call /mcp besides the server's own (repeatable)")
	f.StringVar(&o.publicURL, "public-url", "", "the URL clients reach this server at, for links to secret pages (default: from --http)")
	f.StringVar(&o.logFile, "log-file", "", "append logs to this file instead of stderr")
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&o.logFormat, "log-format", "text", "text (key=value lines) or json (one JSON object a line)")
	f.Var(&o.retention, "retention", "purge finished runs and their history once they are this old (e.g. 30d), at start and hourly")
	f.IntVar(&o.maxRuns, "max-runs", 0, "keep at most this many finished runs, the newest, purging older ones with their history (0: no limit)")
	f.BoolVar(&o.allowShell, "allow-shell", false, "let workflows run any command on this machine: shell steps, mcp steps with an inline command (off for MCP callers otherwise)")
	f.StringArrayVar(&o.allowShellCmds, "allow-shell-cmd", nil, "let shell steps run this program, by name as written in command: (repeatable)")
	f.BoolVar(&o.allowPrivateNet, "allow-private-network", false, "let workflows make the server connect to any address: loopback, private, link-local, cloud metadata (refused otherwise)")
	f.StringArrayVar(&o.allowNetwork, "allow-network", nil, "let workflows make the server connect to this host name (*.suffix for all under it), address or CIDR although it is loopback, private or link-local (repeatable, comma-separated)")
	f.IntVar(&o.maxDriven, "max-driven-runs", 64, "drive at most this many runs at once (a replica claims no more): the rest wait for this process or go to other replicas")
	f.DurationVar(&o.leaseTTL, "lease-ttl", 15*time.Second, "how long a run stays with this process without a heartbeat: after a crash, other processes on the database take its runs over once it passed")
	// For e2e/conformance only: not in --help, refused unless $STEPWISE_TEST_FIXTURES=1.
	f.BoolVar(&o.fixtures, "conformance-fixtures", false, "add the MCP conformance suite's fixture tools, resources and prompts (tests only; needs $"+fixturesEnv+"=1)")
	_ = f.MarkHidden("conformance-fixtures")
	f.StringArrayVar(&o.allowEnv, "allow-env", nil, "let workflows read this environment variable of the server; NAME, a prefix PREFIX_*, or * for all (repeatable, comma-separated; also $STEPWISE_ALLOW_ENV)")
	return cmd
}

func serve(cmd *cobra.Command, g *globals, o *serveOptions) error {
	level, err := parseLevel(o.logLevel)
	if err != nil {
		return err
	}
	newHandler, err := logHandler(o.logFormat)
	if err != nil {
		return err
	}
	if o.http == "" && (o.tlsCert != "" || len(o.authTokens) > 0 || o.publicURL != "" || o.insecure || o.behindTLSProxy) {
		return usageErr("--tls-cert, --auth-token, --insecure, --behind-tls-proxy and --public-url need --http")
	}
	if o.fixtures && os.Getenv(fixturesEnv) != "1" {
		return usageErr("--conformance-fixtures is for the MCP conformance suite's tests only: it needs $%s=1", fixturesEnv)
	}
	if o.maxDriven < 1 || o.maxDriven > 10_000 {
		return usageErr("--max-driven-runs %d: give 1 to 10000", o.maxDriven)
	}
	if o.leaseTTL < 300*time.Millisecond || o.leaseTTL > time.Hour {
		return usageErr("--lease-ttl %s: give 300ms to 1h", o.leaseTTL)
	}
	if o.maxMessageBytes < minMessageBytes || o.maxMessageBytes > maxMessageBytes {
		return usageErr("--max-message-bytes %d: give %d to %d", o.maxMessageBytes, minMessageBytes, maxMessageBytes)
	}
	if env := os.Getenv("STEPWISE_AUTH_TOKENS"); env != "" {
		for _, t := range strings.Split(env, ",") {
			if t = strings.TrimSpace(t); t != "" {
				o.authTokens = append(o.authTokens, t)
			}
		}
	}
	for _, t := range o.authTokens {
		if len(t) < 16 {
			return usageErr("--auth-token: a token must be at least 16 characters")
		}
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usageErr("--tls-cert and --tls-key go together")
	}
	retention := time.Duration(o.retention)
	if o.maxRuns < 0 {
		return usageErr("--max-runs %d: give 0 (no limit) or more", o.maxRuns)
	}
	tools, err := mcpserver.ParseToolProfile(o.tools)
	if err != nil {
		return usageErr("--tools: %v", err)
	}
	shell, err := o.shellPolicy()
	if err != nil {
		return err
	}
	envPolicy, err := o.envPolicy()
	if err != nil {
		return err
	}
	netPolicy, err := o.networkPolicy()
	if err != nil {
		return err
	}

	// Logs: stderr (never stdout: over stdio it carries JSON-RPC only) or a
	// file, plus MCP log notifications to the connected sessions.
	var logOut io.Writer = cmd.ErrOrStderr()
	if o.logFile != "" {
		f, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return usageErr("--log-file: %v", err)
		}
		defer f.Close()
		logOut = f
	}
	sessionLog := mcpserver.NewSessionLog()
	local := newHandler(logOut, &slog.HandlerOptions{Level: level})
	logger := slog.New(secret.NewHandler(mcpserver.TeeHandler{local, sessionLog}, secret.NewMasker()))
	// Actions' free-form output goes where the logs go; in JSON, each of
	// its lines as a record of its own, so that every line stays JSON.
	actionOut := logOut
	if o.logFormat == "json" {
		actionOut = &linelog.Writer{Emit: func(line []byte) { logger.Info("action output", "text", string(line)) }}
	}
	protocolLevel := max(level, slog.LevelWarn) // the SDK is chatty at info
	protocolLogger := slog.New(newHandler(logOut, &slog.HandlerOptions{Level: protocolLevel}))

	// Everything HTTP needs is checked before anything is announced: the
	// address, the key pair, the listener.
	var ln net.Listener
	var tlsConfig *tls.Config
	baseURL := ""
	if o.http != "" {
		if err := checkBind(o.http, len(o.authTokens) > 0, o.tlsCert != "", o.insecure, o.behindTLSProxy); err != nil {
			return err
		}
		if o.tlsCert != "" {
			cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
			if err != nil {
				return usageErr("--tls-cert %s, --tls-key %s: %v (the certificate, then its private key, both PEM)", o.tlsCert, o.tlsKey, err)
			}
			tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		}
		ln, err = net.Listen("tcp", o.http)
		if err != nil {
			return usageErr("--http %s: %v", o.http, err)
		}
		defer ln.Close()
		baseURL = o.publicURL
		if baseURL == "" {
			baseURL = selfURL(ln.Addr().String(), o.tlsCert != "")
		}
		baseURL = strings.TrimSuffix(baseURL, "/")
	}

	// Metrics are kept when there is an HTTP surface to serve them.
	var metrics *metric.Metrics
	var commitObserver func(time.Duration)
	if ln != nil {
		metrics = metric.New()
		commitObserver = metrics.ObserveCommit
	}

	ctx, stop, which := serveSignals()
	defer stop()
	tracer := openTracer(func(err error) { logger.Error("tracing left off", "error", err) })
	defer closeTracer(tracer) // after the service's close (deferred below): its last events are traced
	// The store opens while the MCP server's tools are built: neither needs
	// the other, and each takes a few milliseconds of every start. Over
	// stdio the client's handshake is answered before either is done (its
	// other requests wait for start): a client that spawns the server
	// waits for that answer, often under a short timeout.
	type opened struct {
		svc *service.Service
		err error
	}
	opening := make(chan opened, 1)
	go func() {
		svc, err := g.openWith(context.Background(), service.Options{Logger: logger, ActionOutput: actionOut, ShutdownGrace: 5 * time.Second,
			Retention: retention, MaxRuns: o.maxRuns, AllowCatalogURLs: o.catalogURLs, ShellPolicy: shell, EnvPolicy: envPolicy, NetworkPolicy: netPolicy, AllowInlineMCPCommands: o.allowShell, LeaseTTL: o.leaseTTL, MaxDrivenRuns: o.maxDriven, CommitObserver: commitObserver, Stateless: o.stateless})
		opening <- opened{svc, err}
	}()
	srv := mcpserver.NewUnattached(mcpserver.Options{Version: Version, BaseURL: baseURL, ExposeWorkflows: o.expose, Tools: tools, Logger: logger,
		ProtocolLogger: protocolLogger, MaxMessageBytes: o.maxMessageBytes, Metrics: metrics, Tracer: tracer, Stateless: o.stateless})
	sessionLog.Attach(srv)
	if o.fixtures {
		srv.AddConformanceFixtures()
	}
	var svc *service.Service
	defer func() {
		if svc == nil {
			return
		}
		srv.Close()
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = svc.Close(closeCtx)
	}()
	// start waits for the store, resumes interrupted runs and lets the
	// sessions' requests through; it returns what the server lets
	// workflows touch, for the "serving" log line.
	start := func() ([]any, error) {
		op := <-opening
		if op.err != nil {
			srv.Fail(op.err)
			return nil, op.err
		}
		svc = op.svc
		srv.Attach(svc)
		if metrics != nil {
			// Before Recover: the runs it resumes are counted too.
			metrics.CountFromStore(svc.Store, time.Now)
			metrics.Watch(ctx, svc.Engine, func(ctx context.Context, runID string) (string, time.Time, error) {
				r, err := svc.Store.GetRun(ctx, runID)
				return r.Workflow, r.CreatedAt, err
			})
		}
		if tracer != nil {
			watchRuns(ctx, tracer, svc) // before Recover, like the metrics
		}
		if n, err := svc.Recover(ctx); err != nil {
			logger.Error("recover runs", "error", err)
		} else if n > 0 {
			logger.Info("resumed interrupted runs", "count", n)
		}
		// The library's schedules fire while the server runs (Close stops
		// them); a stateless server keeps no schedules.
		if !svc.Stateless() {
			if _, err := svc.StartScheduler(0); err != nil {
				logger.Error("schedules left off", "error", err)
			}
		}
		srv.Start(ctx)
		tuneServeGC()
		return []any{"replica", svc.Engine.Owner(), "workspace", svc.Workspace.Dir, "shell", shell.Enabled, "shell_allow", shell.Allow, "env_allow", envPolicy.Allow,
			"private_network", !netPolicy.Restricted, "network_allow", o.allowNetwork}, nil
	}
	// Over stdio the session starts while the store opens. With
	// --expose-workflows it starts after: the library's wf_ tools are added
	// at start, and a session connected before would be told of them by a
	// tools/list_changed, possibly before it has said initialized.
	if ln == nil && !o.expose {
		err = serveStdio(ctx, srv, logger, cmd.ErrOrStderr(), start)
	} else {
		policy, startErr := start()
		if startErr != nil {
			return startErr
		}
		if ln != nil {
			err = serveHTTP(ctx, ln, tlsConfig, srv, svc, o, baseURL, logger, cmd.ErrOrStderr(), policy, metrics)
		} else {
			err = serveStdio(ctx, srv, logger, cmd.ErrOrStderr(), func() ([]any, error) { return policy, nil })
		}
	}
	switch which() {
	case os.Interrupt:
		return &exitError{code: ExitInterrupted, msg: "interrupted; runs stay resumable"}
	case syscall.SIGTERM:
		return nil
	}
	return err
}

// envPolicy is what workflows may read of the server's environment: what
// --allow-env and $STEPWISE_ALLOW_ENV name, nothing otherwise.
func (o *serveOptions) envPolicy() (secret.EnvPolicy, error) {
	values := o.allowEnv
	if env := os.Getenv("STEPWISE_ALLOW_ENV"); env != "" {
		values = append(values, env)
	}
	allow, err := secret.ParseEnvAllow(values)
	if err != nil {
		return secret.EnvPolicy{}, usageErr("--allow-env: %v", err)
	}
	return secret.EnvPolicy{Restricted: true, Allow: allow}, nil
}

// networkPolicy is where workflows may make the server connect: not to
// loopback, private, link-local or metadata addresses but those
// --allow-network names, unless --allow-private-network.
func (o *serveOptions) networkPolicy() (action.NetworkPolicy, error) {
	if o.allowPrivateNet && len(o.allowNetwork) > 0 {
		return action.NetworkPolicy{}, usageErr("give --allow-private-network (every address) or --allow-network (these), not both")
	}
	if o.allowPrivateNet {
		return action.NetworkPolicy{}, nil
	}
	p, err := action.ParseNetworkAllow(o.allowNetwork)
	if err != nil {
		return action.NetworkPolicy{}, usageErr("--allow-network %v", err)
	}
	return p, nil
}

// shellPolicy is what the shell action may run for this server's callers:
// nothing unless the operator says so.
func (o *serveOptions) shellPolicy() (action.ShellPolicy, error) {
	if o.allowShell && len(o.allowShellCmds) > 0 {
		return action.ShellPolicy{}, usageErr("give --allow-shell (every command) or --allow-shell-cmd (these programs), not both")
	}
	for _, name := range o.allowShellCmds {
		if strings.TrimSpace(name) == "" || strings.ContainsRune(name, 0) {
			return action.ShellPolicy{}, usageErr("--allow-shell-cmd %q: give a program name (or an exact path)", name)
		}
	}
	return action.ShellPolicy{Enabled: o.allowShell || len(o.allowShellCmds) > 0, Allow: o.allowShellCmds}, nil
}

// logHandler returns the constructor of the log handler --log-format
// names: slog's text or JSON handler (the secret masker wraps either).
func logHandler(format string) (func(io.Writer, *slog.HandlerOptions) slog.Handler, error) {
	switch format {
	case "text", "":
		return func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewTextHandler(w, o) }, nil
	case "json":
		return func(w io.Writer, o *slog.HandlerOptions) slog.Handler { return slog.NewJSONHandler(w, o) }, nil
	}
	return nil, usageErr("--log-format %q: give text or json", format)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, usageErr("--log-level %q: use debug, info, warn or error", s)
	}
	return l, nil
}

// The bounds of --max-message-bytes.
const (
	minMessageBytes = 4 << 10
	maxMessageBytes = 1 << 30
)

// checkBind refuses, unless told to, to serve on an address other machines
// can reach without authentication, or with bearer tokens that would cross
// the network in clear: without TLS of its own or a TLS-terminating proxy
// in front.
func checkBind(addr string, hasTokens, hasTLS, insecure, behindProxy bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--http %q: want HOST:PORT (e.g. %s)", addr, DefaultHTTPAddr)
	}
	if mcpserver.IsLoopback(host) || insecure {
		return nil
	}
	if !hasTokens {
		return usageErr("--http %s is reachable from other machines: give --auth-token (or $STEPWISE_AUTH_TOKENS), or --insecure to serve without authentication", addr)
	}
	if !hasTLS && !behindProxy {
		return usageErr("--http %s is reachable from other machines and bearer tokens must not cross the network in clear: give --tls-cert and --tls-key, "+
			"or --behind-tls-proxy when a proxy that terminates TLS is in front, or --insecure", addr)
	}
	return nil
}

// selfURL is how local clients reach the listener.
func selfURL(addr string, tls bool) string {
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// serveSignals is canceled on SIGINT or SIGTERM; which tells which came.
func serveSignals() (context.Context, func(), func() os.Signal) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	got := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			got <- sig
			cancel()
		case <-done:
		}
	}()
	return ctx, func() { signal.Stop(ch); close(done); cancel() }, func() os.Signal {
		select {
		case sig := <-got:
			got <- sig
			return sig
		default:
			return nil
		}
	}
}

// serveStdio serves the one session of stdin and stdout while start
// readies the server; it returns start's error when there is one.
func serveStdio(ctx context.Context, srv *mcpserver.Server, logger *slog.Logger, stderr io.Writer, start func() ([]any, error)) error {
	if term.IsTerminal(int(os.Stdin.Fd())) {
		fmt.Fprintln(stderr, "stepwise serve speaks MCP (JSON-RPC) on stdin/stdout: register it in an MCP client (see the README), or use --http.")
	}
	out, err := reserveStdout()
	if err != nil {
		// The store is opening meanwhile: wait for it, so that it is
		// closed as it should be, and report why it failed if it did.
		_, startErr := start()
		return cmp.Or(startErr, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan error, 1)
	go func() {
		policy, err := start()
		if err != nil {
			cancel() // the session's held requests have their answer; the server stops
		} else {
			logger.Info("serving MCP over stdio", policy...)
		}
		started <- err
	}()
	ss, err := srv.ConnectStdio(runCtx, serveStdin(), out)
	if err == nil {
		err = runSession(runCtx, ss)
	}
	if startErr := <-started; startErr != nil {
		return startErr
	}
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed)) {
		return nil
	}
	return err
}

// runSession serves ss until the client leaves or ctx ends. With the
// connect before it, it is the SDK's Server.Run without its log lines: Run
// logs an error for the end of every session by signal, the usual way to
// stop a server.
func runSession(ctx context.Context, ss *mcp.ServerSession) error {
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
		_ = ss.Close()
		<-ended
		return ctx.Err()
	}
}

// serveHTTP serves ln (through TLS with tlsConfig, when there is one: its
// key pair is loaded already, so nothing is left to fail once the address
// is announced).
func serveHTTP(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, srv *mcpserver.Server, svc *service.Service, o *serveOptions, baseURL string, logger *slog.Logger, stderr io.Writer, policy []any, metrics *metric.Metrics) error {
	var dash *web.Handler
	if !o.noDashboard && !o.stateless { // the dashboard shows stored runs
		dash = web.New(svc, web.Options{AuthTokens: o.authTokens, Secure: tlsConfig != nil || o.behindTLSProxy || strings.HasPrefix(baseURL, "https:"),
			BaseURL: baseURL, SecretURL: srv.SecretURL, Logger: logger})
	}
	hopts := mcpserver.HTTPOptions{AuthTokens: o.authTokens, SessionTimeout: o.sessionTimeout, AllowedOrigins: o.allowOrigins, Metrics: metrics}
	if dash != nil {
		hopts.Dashboard = dash
	}
	hopts.API = api.New(svc, api.Options{AuthTokens: o.authTokens, BaseURL: baseURL, Version: Version, MaxBodyBytes: int64(o.maxMessageBytes), Logger: logger})
	hs := &http.Server{
		Handler:           srv.HTTPHandler(hopts),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		TLSConfig:         tlsConfig,
	}
	hs.RegisterOnShutdown(srv.EndHTTPSessions) // listening clients would hold the shutdown
	fmt.Fprintf(stderr, "stepwise: serving MCP at %s/mcp\n", baseURL)
	if dash != nil {
		hs.RegisterOnShutdown(dash.Close) // live views would hold it too
		fmt.Fprintf(stderr, "stepwise: dashboard at %s/\n", baseURL)
	}
	fmt.Fprintf(stderr, "stepwise: REST API at %s/api/ (see %s/api/openapi.json)\n", baseURL, baseURL)
	logger.Info("serving MCP over HTTP", append([]any{"url", baseURL + "/mcp", "auth", len(o.authTokens) > 0}, policy...)...)
	errc := make(chan error, 1)
	go func() {
		if tlsConfig != nil {
			errc <- hs.ServeTLS(ln, "", "") // the certificate is in TLSConfig
		} else {
			errc <- hs.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := hs.Shutdown(shut); err != nil {
		_ = hs.Close() // streams that stay open (SSE) end here
	}
	return nil
}

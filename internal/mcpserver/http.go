package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"stepwise.dev/stepwise/internal/mcptasks"
	"stepwise.dev/stepwise/internal/metric"
)

// HTTPOptions configure the HTTP surface.
type HTTPOptions struct {
	// AuthTokens are the accepted bearer tokens; none means no
	// authentication (allowed on loopback only, or with --insecure).
	AuthTokens []string
	// SessionTimeout closes sessions idle this long (default 30m).
	SessionTimeout time.Duration
	// AllowedOrigins are browser origins allowed besides the server's own
	// (scheme://host:port).
	AllowedOrigins []string
	// Metrics, when set, are served at /metrics (behind the bearer tokens
	// when there are any) and count the HTTP requests of every route.
	Metrics *metric.Metrics
	// Dashboard, when set, serves every path no other route serves (the
	// web dashboard at /); it does its own authentication.
	Dashboard http.Handler
	// API, when set, serves /api/ (the REST API); it does its own
	// authentication with AuthTokens.
	API http.Handler
}

// HTTPHandler serves streamable HTTP at /mcp, the one-time secret pages at
// /secrets/{id}, protected-resource metadata when tokens are configured,
// and /healthz.
//
// /mcp is the go-sdk's StreamableHTTPHandler, twice: a request in the
// stateless protocol of SEP-2575 (an Mcp-Protocol-Version header of
// 2026-07-28 or later, as the SDK itself tells them apart) goes to a
// stateless handler, every other one to a stateful handler with sessions
// (idle ones end after SessionTimeout) whose streams resume from an event
// store (Last-Event-ID). Around them: the Origin check, bearer tokens (a
// session stays with the token's user that opened it: the SDK binds it to
// TokenInfo.UserID), and the body guard (bodyGuard).
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	limit := s.opts.MaxMessageBytes
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	events := mcp.NewMemoryEventStore(nil)
	events.SetMaxBytes(eventStoreBytes)
	server := func(*http.Request) *mcp.Server { return s.mcp }
	common := mcp.StreamableHTTPOptions{
		Logger: s.opts.ProtocolLogger,
		// The guard has read the body already, within the limit.
		MaxRequestBodyBytes: int64(limit),
	}
	stateful, stateless := common, common
	stateful.SessionTimeout, stateful.EventStore = o.SessionTimeout, events
	stateless.Stateless = true
	h := &httpHandlers{
		srv:       s,
		stateful:  mcp.NewStreamableHTTPHandler(server, &stateful),
		stateless: mcp.NewStreamableHTTPHandler(server, &stateless),
		requests:  map[*context.CancelFunc]struct{}{},
	}
	s.httpMu.Lock()
	s.https = append(s.https, h)
	s.httpMu.Unlock()
	var mcpHandler http.Handler = bodyGuard(limit, h)
	var metricsHandler http.Handler
	if o.Metrics != nil {
		metricsHandler = o.Metrics.Handler()
	}
	mux := http.NewServeMux()
	// route mounts h at pattern, counted under that pattern.
	route := func(pattern string, h http.Handler) {
		if o.Metrics != nil {
			h = o.Metrics.HTTP(pattern, h)
		}
		mux.Handle(pattern, h)
	}
	if len(o.AuthTokens) > 0 {
		meta := "/.well-known/oauth-protected-resource/mcp"
		requireToken := auth.RequireBearerToken(tokenVerifier(o.AuthTokens), &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: s.opts.BaseURL + meta, AllowMissingExpiration: true})
		mcpHandler = requireToken(mcpHandler)
		if metricsHandler != nil {
			metricsHandler = requireToken(metricsHandler)
		}
		md := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: s.opts.BaseURL + "/mcp", BearerMethodsSupported: []string{"header"}, ResourceName: "stepwise"})
		route(meta, md)
		route("/.well-known/oauth-protected-resource", md)
	}
	route("/mcp", originGuard(o.AllowedOrigins, mcpHandler))
	route("/secrets/", s.SecretHandler())
	route("POST /hooks/{name}", s.HookHandler())       // authenticated by signature
	route(callbackPath+"{token}", s.CallbackHandler()) // the URL is the credential
	route("/healthz", http.HandlerFunc(s.healthz))
	route("/readyz", http.HandlerFunc(s.readyz))
	if metricsHandler != nil {
		route("/metrics", metricsHandler)
	}
	if o.API != nil {
		route("/api/", o.API)
	}
	if o.Dashboard != nil {
		route("/", o.Dashboard)
	}
	if o.Metrics == nil {
		return mux
	}
	// What no route serves is counted as one route, whatever its path.
	other := o.Metrics.HTTP("other", mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			other.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// eventStoreBytes bounds what the event store keeps of all sessions'
// streams for resumption (the oldest events go first).
const eventStoreBytes = 8 << 20

// The headers of streamable HTTP that stepwise reads.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
	// statelessProtocol is the first version of SEP-2575's stateless
	// protocol.
	statelessProtocol = "2026-07-28"
	// defaultProtocol is the version of a request that names none.
	defaultProtocol = "2025-03-26"
)

// httpHandlers are the SDK's handlers behind one HTTPHandler.
type httpHandlers struct {
	srv                 *Server
	stateful, stateless *mcp.StreamableHTTPHandler

	mu       sync.Mutex
	requests map[*context.CancelFunc]struct{} // the stateless requests being served
}

// ServeHTTP routes a request by its protocol version.
func (h *httpHandlers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(headerProtocol) < statelessProtocol {
		h.stateful.ServeHTTP(w, r)
		return
	}
	// A stateless request has no session to close at shutdown (a
	// subscriptions/listen stream lasts as long as its POST): it ends
	// with its context.
	ctx, cancel := context.WithCancel(r.Context())
	h.mu.Lock()
	h.requests[&cancel] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.requests, &cancel)
		h.mu.Unlock()
		cancel()
	}()
	r = r.WithContext(ctx)
	msg := peekTaskMessage(r)
	if e := msg.nameMismatch(r.Header.Get(headerName)); e != nil {
		writeRefusal(w, http.StatusBadRequest, e)
		return
	}
	if msg.listensForTasks() {
		h.serveTaskListen(w, r)
		return
	}
	h.stateless.ServeHTTP(w, r)
}

// headerName is SEP-2243's Mcp-Name: the name a request acts on, which
// the Tasks extension sets to the task id of tasks/get, tasks/update and
// tasks/cancel.
const headerName = "Mcp-Name"

// taskMessage is what stepwise reads of a stateless POST before the SDK
// does: the fields of the Tasks extension's requests.
type taskMessage struct {
	ID     jsonrpc.ID
	Method string
	Params struct {
		TaskID        *string `json:"taskId"`
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
}

// peekTaskMessage reads r's body (read by bodyGuard already) as a single
// request, leaving it to be read again; the zero message if it is not one
// of the Tasks extension's methods or subscriptions/listen.
func peekTaskMessage(r *http.Request) taskMessage {
	var msg taskMessage
	if r.Method != http.MethodPost || r.Body == nil {
		return msg
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return msg
	}
	var raw struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &raw) != nil {
		return msg
	}
	switch raw.Method {
	case mcptasks.MethodGet, mcptasks.MethodUpdate, mcptasks.MethodCancel, "subscriptions/listen":
	default:
		return msg // read no further
	}
	msg.Method = raw.Method
	if len(raw.Params) > 0 && json.Unmarshal(raw.Params, &msg.Params) != nil {
		return taskMessage{}
	}
	msg.ID = headID(body)
	return msg
}

// nameMismatch is the refusal (-32020, SEP-2243) of a tasks/get,
// tasks/update or tasks/cancel whose Mcp-Name header names another task
// than its taskId; nil when it matches or is not sent (clients of the
// go-sdk send it only for tools, resources and prompts).
func (m taskMessage) nameMismatch(name string) *messageError {
	switch m.Method {
	case mcptasks.MethodGet, mcptasks.MethodUpdate, mcptasks.MethodCancel:
	default:
		return nil
	}
	if name == "" || m.Params.TaskID == nil || *m.Params.TaskID == name {
		return nil
	}
	return &messageError{id: m.ID, err: &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
		Message: fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match the body's taskId %q", name, *m.Params.TaskID)}}
}

// listensForTasks reports whether the message is a subscriptions/listen
// that asks for notifications/tasks.
func (m taskMessage) listensForTasks() bool {
	return m.Method == "subscriptions/listen" && len(m.Params.Notifications.TaskIDs) > 0
}

// serveTaskListen serves a stateless subscriptions/listen that asks for
// notifications/tasks. The go-sdk cannot send a custom notification
// (go-sdk #745), and its StreamableHTTPHandler makes its connections
// itself (its transport alone refuses 2026-07-28 requests: the version it
// checks travels in a context key of the handler's own), so this one
// request goes to a session of the server on in-memory transports wrapped
// by mcptasks.WithNotifications, as stdio's is, and what the session sends
// is written as the request's server-sent events until it answers the
// listen or the client goes.
func (h *httpHandlers) serveTaskListen(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	msg, err := jsonrpc.DecodeMessage(body)
	req, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		writeRefusal(w, http.StatusBadRequest, invalidRequest(jsonrpc.ID{}, "subscriptions/listen: not a JSON-RPC request"))
		return
	}
	ctx := r.Context()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := h.srv.mcp.Connect(ctx, h.srv.TaskTransport(st), nil)
	if err != nil {
		writeRefusal(w, http.StatusInternalServerError, &messageError{id: req.ID, err: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "could not open the listen's session"}})
		return
	}
	defer ss.Close()
	conn, err := ct.Connect(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	if err := conn.Write(ctx, req); err != nil {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flush := func() {}
	if f, ok := w.(http.Flusher); ok {
		flush = f.Flush
		flush()
	}
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			return // the client went, or the server ends the listen
		}
		data, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", data); err != nil {
			return
		}
		flush()
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == req.ID {
			return
		}
	}
}

// endStateless ends the stateless requests being served.
func (h *httpHandlers) endStateless() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for cancel := range h.requests {
		(*cancel)()
	}
}

// EndHTTPSessions ends every session of the HTTP handlers, and every
// stateless request they serve: their streams end, so that an HTTP server
// shutting down gracefully does not wait for clients that listen on them
// (http.Server.RegisterOnShutdown).
func (s *Server) EndHTTPSessions() {
	s.httpMu.Lock()
	hs := slices.Clone(s.https)
	s.httpMu.Unlock()
	for _, h := range hs {
		h.endStateless()
	}
	if len(hs) == 0 {
		return
	}
	// The HTTP sessions are the server's named ones (stdio's has no ID).
	var sessions []*mcp.ServerSession
	for ss := range s.mcp.Sessions() {
		if ss.ID() != "" {
			sessions = append(sessions, ss)
		}
	}
	for _, ss := range sessions {
		_ = ss.Close()
	}
}

// bodyGuard reads a POST's body before the SDK does, so that a body over
// limit or one that is not JSON-RPC gets stepwise's structured JSON-RPC
// error (rpcrefuse.go) — the SDK answers those in plain text — and never
// reaches a session, which goes on. A batch is refused from 2025-06-18 on
// (by the request's header), as the SDK would refuse it.
func bodyGuard(limit int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil || foreignHost(r) {
			next.ServeHTTP(w, r) // the SDK refuses a foreign Host before anything is read
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			next.ServeHTTP(w, r) // refused by the SDK, unread
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, int64(limit))
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		_, batch, err := decodeBody(body)
		if err != nil {
			writeRefusal(w, http.StatusBadRequest, refusal(err))
			return
		}
		version := cmp.Or(r.Header.Get(headerProtocol), defaultProtocol)
		if batch && version >= noBatchesFrom {
			writeRefusal(w, http.StatusBadRequest, invalidRequest(jsonrpc.ID{},
				"JSON-RPC batching is not supported in %s and later (request version: %s)", noBatchesFrom, version))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// foreignHost reports whether r came to a loopback address under a Host
// that is not a loopback name: what the SDK refuses against DNS rebinding.
func foreignHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && IsLoopback(local.String()) && !IsLoopback(r.Host)
}

// writeRefusal answers a POST whose message was refused.
func writeRefusal(w http.ResponseWriter, status int, e *messageError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(e.answer(), '\n'))
}

// readBody reads a POST's body, answering with a JSON-RPC error (HTTP 413
// or 400) when it cannot: a body over the limit is read no further.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeRefusal(w, http.StatusRequestEntityTooLarge, tooLarge(int(tooBig.Limit), body[:min(len(body), lineHead)]))
		} else {
			writeRefusal(w, http.StatusBadRequest, parseError(errors.New("failed to read the body")))
		}
		return nil, false
	}
	if firstByte(body) == len(body) {
		writeRefusal(w, http.StatusBadRequest, parseError(errors.New("the body is empty")))
		return nil, false
	}
	return body, true
}

// IsLoopback reports whether a host (with or without a port) is a
// loopback name or address: what `serve` binds to without authentication.
func IsLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenVerifier accepts the configured tokens, compared in constant time.
// Each token is its own user, so sessions cannot change hands.
func tokenVerifier(tokens []string) auth.TokenVerifier {
	sums := make([][32]byte, len(tokens))
	for i, t := range tokens {
		sums[i] = sha256.Sum256([]byte(t))
	}
	return func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		got := sha256.Sum256([]byte(token))
		match := -1
		for i := range sums {
			if subtle.ConstantTimeCompare(got[:], sums[i][:]) == 1 {
				match = i
			}
		}
		if match < 0 {
			return nil, fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: fmt.Sprintf("token-%d", match+1)}, nil
	}
}

// originGuard refuses requests from browsers on foreign origins: a page on
// another site must not drive the server through the person's browser. A
// request without Origin (not from a browser page) passes; the SDK also
// refuses non-localhost Host headers on loopback (DNS rebinding).
func originGuard(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("Origin")
		if o != "" && !originAllowed(o, r.Host, allowed) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"origin %s is not allowed (start stepwise serve with --allow-origin to allow it)"}}`+"\n", jsonEscape(o))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin, host string, allowed []string) bool {
	if slices.Contains(allowed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, host)
}

func jsonEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return r.Replace(s)
}

// healthz answers a load balancer's health check: 200 "ok" once the server
// serves and its database answers; 503 while it starts, when its service
// could not be opened, or when the database does not answer within 2 s
// (a replica cut off from the database must get no new sessions).
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !s.ready.isOpen() {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "starting")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.svc.Healthy(ctx); err != nil {
		s.log.Warn("health check: the database does not answer", "err", err)
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "database unavailable")
		return
	}
	fmt.Fprintln(w, "ok")
}

// readyz answers a readiness probe: 200 when the server serves HTTP, its
// service has started (runs recovered, sessions' requests let through)
// and its store answers within 2 s; 503 otherwise. Unlike /healthz, which
// says only "ok" or why not, the answer names each check and its state,
// one per line ("serving ok", "service starting", "store unavailable: …"),
// so that a probe's log tells which one failed.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	service, store := "ok", "ok"
	select {
	case <-s.ready.done:
		if s.ready.err != nil {
			service, store = "failed", "not opened"
		}
	default:
		service, store = "starting", "not checked"
	}
	if service == "ok" {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.svc.Healthy(ctx); err != nil {
			s.log.Warn("readiness: the database does not answer", "err", err)
			store = "unavailable"
		}
	}
	if service != "ok" || store != "ok" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintf(w, "serving ok\nservice %s\nstore %s\n", service, store)
}

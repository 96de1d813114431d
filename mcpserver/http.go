package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
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
}

// HTTPHandler serves streamable HTTP at /mcp, the one-time secret pages at
// /secrets/{id}, protected-resource metadata when tokens are configured,
// and /healthz.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 30 * time.Minute
	}
	transport := newHTTPTransport(s.mcp, o.SessionTimeout, s.opts.MaxMessageBytes, s.opts.ProtocolLogger)
	s.httpMu.Lock()
	s.https = append(s.https, transport)
	s.httpMu.Unlock()
	var mcpHandler http.Handler = transport
	mux := http.NewServeMux()
	if len(o.AuthTokens) > 0 {
		meta := "/.well-known/oauth-protected-resource/mcp"
		mcpHandler = auth.RequireBearerToken(tokenVerifier(o.AuthTokens), &auth.RequireBearerTokenOptions{
			ResourceMetadataURL: s.opts.BaseURL + meta, AllowMissingExpiration: true})(mcpHandler)
		md := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource: s.opts.BaseURL + "/mcp", BearerMethodsSupported: []string{"header"}, ResourceName: "stepwise"})
		mux.Handle(meta, md)
		mux.Handle("/.well-known/oauth-protected-resource", md)
	}
	mux.Handle("/mcp", originGuard(o.AllowedOrigins, mcpHandler))
	mux.Handle("/secrets/", s.SecretHandler())
	mux.HandleFunc("/healthz", s.healthz)
	return mux
}

// EndHTTPSessions ends every session of the HTTP handlers: their streams
// end, so that an HTTP server shutting down gracefully does not wait for
// clients that listen on them (http.Server.RegisterOnShutdown).
func (s *Server) EndHTTPSessions() {
	s.httpMu.Lock()
	ts := slices.Clone(s.https)
	s.httpMu.Unlock()
	for _, t := range ts {
		t.closeAll()
	}
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

// Package web is the dashboard `stepwise serve --http` serves at /: the
// runs, a run with its graph, timeline and open question (answered in a
// form), the workflows, catalogs and actions. Server-rendered pages with
// a little JavaScript of our own; live updates over server-sent events.
// It is a surface: it calls the service only.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/graph"
	"stepwise.dev/stepwise/internal/service"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the dashboard.
type Options struct {
	// AuthTokens are the bearer tokens accepted (those of /mcp); none
	// means no sign-in (the server listens on loopback only).
	AuthTokens []string
	// Secure marks the session cookie Secure (the server is reached over
	// TLS).
	Secure bool
	// BaseURL is the server's public URL, an accepted Origin of forms.
	BaseURL string
	// SecretURL returns the one-time page where a secret question is
	// answered, or "" when there is none.
	SecretURL func(p *service.Pause) string
	// SessionTTL is how long a sign-in lasts (default 12h).
	SessionTTL time.Duration
	// MaxSessions bounds the sessions kept (default 10,000; the oldest
	// goes).
	MaxSessions int
	// Poll is how often a live view re-reads a run that this process does
	// not drive (default 1s).
	Poll time.Duration
	// StreamLimit ends a live view after this long (default 1h; the
	// browser reconnects).
	StreamLimit time.Duration
	// Logger logs what fails on the server's side.
	Logger *slog.Logger
}

// Handler serves the dashboard.
type Handler struct {
	svc      *service.Service
	opts     Options
	tokens   [][32]byte
	sessions *sessions
	pages    map[string]*template.Template
	mux      *http.ServeMux
	log      *slog.Logger

	closeOnce sync.Once
	closed    chan struct{} // closed by Close: live views end
}

// New returns the dashboard of svc.
func New(svc *service.Service, o Options) *Handler {
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10_000
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.StreamLimit <= 0 {
		o.StreamLimit = time.Hour
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{svc: svc, opts: o, sessions: newSessions(o.SessionTTL, o.MaxSessions, time.Now), log: o.Logger,
		pages: parsePages(), closed: make(chan struct{})}
	for _, t := range o.AuthTokens {
		h.tokens = append(h.tokens, sha256.Sum256([]byte(t)))
	}
	h.routes()
	return h
}

// Close ends the live views (server-sent event streams) being served.
func (h *Handler) Close() { h.closeOnce.Do(func() { close(h.closed) }) }

// authed wraps a page that needs a signed-in caller.
type authed func(w http.ResponseWriter, r *http.Request, c caller)

func (h *Handler) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	files := http.StripPrefix("/static/", http.FileServerFS(static))
	m.Handle("GET /static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
	m.HandleFunc("/login", h.login)
	a := func(pattern string, f authed) { m.Handle(pattern, h.auth(f)) }
	a("/logout", h.logout)
	a("GET /{$}", h.runsPage)
	a("GET /runs", h.runsPage)
	a("GET /runs/{id}", h.runPage)
	a("POST /runs/{id}/answer", h.answer)
	a("GET /runs/{id}/events", h.events)
	a("GET /runs/{id}/control", h.controlPage)
	a("POST /runs/{id}/control", h.control)
	a("GET /workflows", h.workflowsPage)
	a("GET /workflows/{name}", h.workflowPage)
	a("GET /catalogs", h.catalogsPage)
	a("POST /catalogs/{name}", h.catalogSet)
	a("GET /actions", h.actionsPage)
	h.mux = m
}

// contentSecurityPolicy allows the page's own scripts and styles, and the
// one inline style sheet it shows: the graph's, by its hash.
var contentSecurityPolicy = func() string {
	sum := sha256.Sum256([]byte(graph.SVGStyleSheet))
	return "default-src 'none'; script-src 'self'; style-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}()

// ServeHTTP serves a dashboard request with its security headers.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if h.opts.Secure {
		hd.Set("Strict-Transport-Security", "max-age=31536000")
	}
	h.mux.ServeHTTP(w, r)
}

// auth sends anonymous visitors to the sign-in page (a request with a bad
// bearer token gets 401).
func (h *Handler) auth(f authed) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.identify(w, r)
		if !ok {
			if c.bearer {
				w.Header().Set("WWW-Authenticate", `Bearer realm="stepwise"`)
				http.Error(w, "the bearer token is not accepted", http.StatusUnauthorized)
				return
			}
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		hd := w.Header()
		hd.Set("Cache-Control", "no-store")
		f(w, r, c)
	})
}

// pageData is what every page's template gets.
type pageData struct {
	Title   string
	Nav     string // the section highlighted in the navigation
	CSRF    string
	SignOut bool
	Message string
	Next    string
	Data    any
}

func (h *Handler) page(c caller, title, nav string, data any) pageData {
	p := pageData{Title: title, Nav: nav, Data: data, SignOut: len(h.tokens) > 0 && c.sess != nil}
	if c.sess != nil {
		p.CSRF = c.sess.csrf
	}
	return p
}

// render executes a page template; a failure is logged (the status is
// written already).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, d pageData) {
	t := h.pages[name]
	if t == nil {
		http.Error(w, "no page "+name, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	entry := "layout"
	if strings.HasPrefix(name, "fragment-") {
		entry = name
	}
	if err := t.ExecuteTemplate(w, entry, d); err != nil {
		h.log.Error("dashboard page", "page", name, "path", r.URL.Path, "error", err)
	}
}

// parsePages parses each page with the layout.
func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"json":     jsonText,
		"ago":      ago,
		"duration": durationText,
		"time":     timeText,
		"short":    shortID,
		"add":      func(a, b int) int { return a + b },
	}
	base := template.Must(template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html"))
	pages := map[string]*template.Template{}
	entries, _ := fs.Glob(templateFS, "templates/*.html")
	for _, e := range entries {
		name := strings.TrimSuffix(strings.TrimPrefix(e, "templates/"), ".html")
		if name == "layout" || name == "parts" {
			continue
		}
		pages[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, e))
	}
	// The live part of a run's page is also served alone.
	pages["fragment-live"] = pages["run"]
	return pages
}

// Package api serves stepwise's REST API at /api/ for programs that are
// not MCP clients: start runs, read and list them, answer their pauses,
// cancel them. Requests and answers are JSON, errors RFC 9457 problem
// details; the OpenAPI 3.1 document at /api/openapi.json is derived from
// the same Go types and route table the handler serves. Like every
// surface it calls the service and nothing below it.
package api

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// Options configure the API.
type Options struct {
	// AuthTokens are the accepted bearer tokens (those of /mcp); none
	// means no authentication (the server listens on loopback only).
	AuthTokens []string
	// BaseURL is the server's public URL, the document's server (""
	// gives a relative one).
	BaseURL string
	// Version is stepwise's version, the document's info.version.
	Version string
	// MaxBodyBytes bounds a request's body (default 4 MiB).
	MaxBodyBytes int64
	// DefaultWait is how long starting and continuing a run wait for it to
	// finish or pause when the request does not say (default 20s).
	DefaultWait time.Duration
	// Logger logs internal errors.
	Logger *slog.Logger
}

// MaxWait bounds wait_seconds.
const MaxWait = 300 * time.Second

// Handler serves the API. Mount it at /api/.
type Handler struct {
	svc    *service.Service
	opts   Options
	tokens [][32]byte
	mux    *http.ServeMux
	log    *slog.Logger
	// routes are the routes served and documented (the package's table).
	routes []route

	docOnce sync.Once
	doc     []byte
	docErr  error
}

// route is one operation: what the handler serves and what the document
// says of it, from one table.
type route struct {
	method string
	// path is the route's path as the document writes it (and as
	// http.ServeMux reads it): /api/runs/{run_id}.
	path             string
	id, summary, doc string
	// body, query and path are the types of the request's body, query
	// parameters and path parameters (nil: none); out the type of the
	// success answer, given with status.
	body, query, params, out reflect.Type
	// optionalBody: the route takes no body as {} (the document says the
	// body is not required).
	optionalBody bool
	status       int
	// problems are the error statuses it answers besides those of every
	// route (401, 405, 500).
	problems []int
	serve    func(h *Handler, w http.ResponseWriter, r *http.Request)
}

// routes is the API: the handler serves these and the document lists them.
var routes = []route{
	{method: http.MethodPost, path: "/api/runs", id: "start_run", summary: "Start a run",
		doc:  "Run a library workflow (or draft) by name, or an inline definition, with inputs. Answers once the run finishes, pauses or wait_seconds pass.",
		body: reflect.TypeFor[StartRequest](), out: reflect.TypeFor[Run](), status: http.StatusCreated,
		problems: []int{400, 403, 404, 413, 415, 422, 503}, serve: (*Handler).start},
	{method: http.MethodGet, path: "/api/runs", id: "list_runs", summary: "List runs",
		doc:   "Runs, newest first, optionally of one workflow, in one status, created after a time; paged by cursor.",
		query: reflect.TypeFor[ListQuery](), out: reflect.TypeFor[RunList](), status: http.StatusOK,
		problems: []int{400}, serve: (*Handler).list},
	{method: http.MethodGet, path: "/api/runs/{run_id}", id: "get_run", summary: "Get a run",
		doc:    "A run: its status, open pause with its token, outputs or error. wait_seconds waits for a running run to finish or pause.",
		params: reflect.TypeFor[RunPath](), query: reflect.TypeFor[GetQuery](), out: reflect.TypeFor[Run](), status: http.StatusOK,
		problems: []int{400, 404}, serve: (*Handler).get},
	{method: http.MethodPost, path: "/api/runs/{run_id}/continue", id: "continue_run", summary: "Answer a pause",
		doc:    "Answer the run's open pause with its token and a value. An invalid value is refused with violations (422) and changes nothing: the token stays valid.",
		params: reflect.TypeFor[RunPath](), body: reflect.TypeFor[ContinueRequest](), out: reflect.TypeFor[Run](), status: http.StatusOK,
		problems: []int{400, 403, 404, 409, 410, 413, 415, 422, 503}, serve: (*Handler).continueRun},
	{method: http.MethodPost, path: "/api/runs/{run_id}/cancel", id: "cancel_run", summary: "Cancel a run",
		doc:    "Cancel an unfinished run and its sub-workflow runs; compensate undoes the completed steps first. Cannot be undone.",
		params: reflect.TypeFor[RunPath](), body: reflect.TypeFor[CancelRequest](), optionalBody: true, out: reflect.TypeFor[Run](), status: http.StatusOK,
		problems: []int{400, 404, 409, 413, 415, 503}, serve: (*Handler).cancel},
	{method: http.MethodGet, path: "/api/openapi.json", id: "get_openapi", summary: "This API's OpenAPI document",
		doc: "The OpenAPI 3.1 document of this API.", out: reflect.TypeFor[map[string]any](), status: http.StatusOK,
		serve: (*Handler).openAPI},
}

// New returns the API of svc.
func New(svc *service.Service, o Options) *Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	if o.DefaultWait <= 0 {
		o.DefaultWait = 20 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{svc: svc, opts: o, log: o.Logger, mux: http.NewServeMux(), routes: routes}
	for _, t := range o.AuthTokens {
		h.tokens = append(h.tokens, sha256.Sum256([]byte(t)))
	}
	// One handler per path, dispatching by method, so that a method the
	// path does not serve gets a problem (405) as every other error does.
	byPath := map[string][]route{}
	var paths []string
	for _, rt := range routes {
		if byPath[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		byPath[rt.path] = append(byPath[rt.path], rt)
	}
	for _, p := range paths {
		rs := byPath[p]
		h.mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { h.dispatch(w, r, rs) })
	}
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, Problem{Code: CodeRouteNotFound, Status: http.StatusNotFound, Category: code.CategoryNotFound,
			Detail: "no route " + r.URL.Path, Suggestion: "the routes are in /api/openapi.json"})
	})
	return h
}

// ServeHTTP authenticates the request and routes it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if foreignHost(r) {
		writeProblem(w, r, Problem{Code: CodeForeignHost, Status: http.StatusForbidden, Category: service.CategorySecurity,
			Detail: "a request to a loopback address must name a loopback host (Host: " + r.Host + ")"})
		return
	}
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="stepwise"`)
		writeProblem(w, r, Problem{Code: CodeUnauthorized, Status: http.StatusUnauthorized, Category: code.CategoryAuth,
			Detail: "a bearer token is required: Authorization: Bearer <token>, one of the server's --auth-token"})
		return
	}
	h.mux.ServeHTTP(w, r)
}

// foreignHost reports whether r came to a loopback address under a Host
// that is not a loopback name: a page of another site reaching the server
// through DNS rebinding (as /mcp refuses it).
func foreignHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && local != nil && isLoopback(local.String()) && !isLoopback(r.Host)
}

// isLoopback reports whether a host, with or without a port, is a
// loopback name or address.
func isLoopback(hostport string) bool {
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

// authorized reports whether r carries one of the tokens (any request
// does when there are none), compared in constant time over digests.
func (h *Handler) authorized(r *http.Request) bool {
	if len(h.tokens) == 0 {
		return true
	}
	t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || strings.TrimSpace(t) == "" {
		return false
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(t)))
	match := 0
	for _, want := range h.tokens {
		match |= subtle.ConstantTimeCompare(d[:], want[:])
	}
	return match == 1
}

// dispatch serves r by the route of its method, or refuses the method.
func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request, rs []route) {
	var allowed []string
	for _, rt := range rs {
		if rt.method == r.Method || (rt.method == http.MethodGet && r.Method == http.MethodHead) {
			rt.serve(h, w, r)
			return
		}
		allowed = append(allowed, rt.method)
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	writeProblem(w, r, Problem{Code: CodeMethodNotAllowed, Status: http.StatusMethodNotAllowed, Category: code.CategoryValidation,
		Detail: fmt.Sprintf("%s does not take %s: use %s", r.URL.Path, r.Method, strings.Join(allowed, " or "))})
}

// decodeBody reads r's JSON body into v: the media type must be JSON (an
// empty body is {}), the body at most MaxBodyBytes, with no unknown field
// and nothing after the value. ok is false when the answer was written.
func (h *Handler) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength > 0 {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "application/json" {
			writeProblem(w, r, Problem{Code: CodeMediaType, Status: http.StatusUnsupportedMediaType, Category: code.CategoryValidation,
				Detail: fmt.Sprintf("the body's Content-Type is %q: send application/json", ct)})
			return false
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeProblem(w, r, Problem{Code: CodeBodyTooLarge, Status: http.StatusRequestEntityTooLarge, Category: code.CategoryValidation,
				Detail: fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit)})
			return false
		}
		h.fail(w, r, argumentsError("", "the body could not be read"))
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := decodeStrict(body, v); err != nil {
		h.fail(w, r, argumentsError("", "the body is not valid JSON for this route: "+err.Error()))
		return false
	}
	return true
}

// decodeStrict unmarshals one JSON value without unknown fields.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// decodeQuery reads r's query parameters into v (a struct of the route's
// query type): each parameter is converted by its field's JSON type, then
// decoded as JSON would be, so unknown parameters are refused too.
func decodeQuery(r *http.Request, v any) error {
	fields := map[string]reflect.Kind{}
	t := reflect.TypeOf(v).Elem()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		fields[name] = t.Field(i).Type.Kind()
	}
	obj := map[string]any{}
	for name, values := range r.URL.Query() {
		kind, ok := fields[name]
		if !ok {
			return argumentsError(name, fmt.Sprintf("unknown query parameter %q", name))
		}
		if len(values) != 1 {
			return argumentsError(name, fmt.Sprintf("query parameter %q is given %d times: give it once", name, len(values)))
		}
		s := values[0]
		switch kind {
		case reflect.Int, reflect.Int64:
			n, err := strconv.Atoi(s)
			if err != nil {
				return argumentsError(name, fmt.Sprintf("%s=%q: want an integer", name, s))
			}
			obj[name] = n
		case reflect.Float64:
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return argumentsError(name, fmt.Sprintf("%s=%q: want a number", name, s))
			}
			obj[name] = f
		default:
			obj[name] = s
		}
	}
	data, _ := json.Marshal(obj)
	if err := decodeStrict(data, v); err != nil {
		return argumentsError("", "the query parameters do not fit: "+err.Error())
	}
	return nil
}

// waitFor is a request's wait: def when it gives none, at most MaxWait.
func waitFor(w *float64, def time.Duration) (time.Duration, error) {
	if w == nil {
		return def, nil
	}
	if *w < 0 {
		return 0, argumentsError("wait_seconds", "wait_seconds must be 0 or more")
	}
	return min(time.Duration(*w*float64(time.Second)), MaxWait), nil
}

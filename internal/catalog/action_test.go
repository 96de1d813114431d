package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/action"
)

// recorded is one request the test server received.
type recorded struct {
	Method, URI, ContentType, Body string
	Header                         http.Header
	User, Password                 string
	HasBasic                       bool
}

// apiServer answers every request with status and body, recording it.
type apiServer struct {
	*httptest.Server
	mu     sync.Mutex
	got    []recorded
	status int
	body   string
	header http.Header // sent with every answer
}

func newAPIServer(t *testing.T) *apiServer {
	s := &apiServer{status: 200, body: `{"id": 7, "name": "Rex"}`}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		user, pw, ok := r.BasicAuth()
		s.mu.Lock()
		s.got = append(s.got, recorded{Method: r.Method, URI: r.RequestURI, ContentType: r.Header.Get("Content-Type"), Body: string(b),
			Header: r.Header.Clone(), User: user, Password: pw, HasBasic: ok})
		status, body := s.status, s.body
		for k, vs := range s.header {
			w.Header()[k] = vs
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// answer sets what the server answers from now on.
func (s *apiServer) answer(status int, body string) {
	s.mu.Lock()
	s.status, s.body = status, body
	s.mu.Unlock()
}

func (s *apiServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

func (s *apiServer) last(t *testing.T) recorded {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) == 0 {
		t.Fatal("no request reached the server")
	}
	return s.got[len(s.got)-1]
}

var testEnv = map[string]string{"PETSTORE_KEY": "key-0123456789", "PETSTORE_PW": "pw-0123456789"}

func lookup(k string) (string, bool) { v, ok := testEnv[k]; return v, ok }

func petstoreActions(t *testing.T, base string, auth map[string]Credential) map[string]action.Action {
	t.Helper()
	c, _ := build(t, "petstore-swagger2.yaml", Options{Title: "Petstore", BaseURL: base, Auth: auth, Enabled: true})
	out := map[string]action.Action{}
	for _, a := range c.Actions(Runtime{LookupEnv: lookup}) {
		out[a.Name()] = a
	}
	return out
}

// run checks the input as the engine does, then runs the action.
func run(t *testing.T, a action.Action, input map[string]any) (any, error) {
	t.Helper()
	reg := action.NewRegistry(a)
	if vs := reg.CheckInput(a, input); len(vs) > 0 {
		t.Fatalf("input refused: %+v", vs)
	}
	return a.Run(context.Background(), action.Call{Input: input, IdempotencyKey: "run1/step/1"})
}

func TestOperationRequests(t *testing.T) {
	srv := newAPIServer(t)
	acts := petstoreActions(t, srv.URL+"/v1/", map[string]Credential{"api_key": {Value: "$PETSTORE_KEY"}, "basic": {Username: "alice", Password: "$PETSTORE_PW"}})

	get := acts["petstore.getPet"]
	if get.Safety() != action.ReadOnly || !strings.Contains(get.Description(), "Find a pet by id") || !strings.Contains(get.Description(), "GET /pets/{petId}") {
		t.Errorf("getPet: %s %q", get.Safety(), get.Description())
	}
	out, err := run(t, get, map[string]any{"petId": "a b/c?", "verbose": true, "X-Trace": "t-1"})
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(out) != `{"id":7,"name":"Rex"}` {
		t.Errorf("output: %s", jsonOf(out))
	}
	r := srv.last(t)
	// The path parameter is one segment: its slash and space escaped.
	if r.Method != "GET" || r.URI != "/v1/pets/a%20b%2Fc%3F?verbose=true" {
		t.Errorf("request: %s %s", r.Method, r.URI)
	}
	if r.Header.Get("X-Trace") != "t-1" || r.Header.Get("X-API-Key") != "key-0123456789" || r.Header.Get("Idempotency-Key") != "" {
		t.Errorf("headers: %v", r.Header)
	}

	srv.answer(200, `{"id": 8, "name": "Tom"}`)
	if _, err := run(t, acts["petstore.createPet"], map[string]any{"body": map[string]any{"name": "Tom", "status": "pending"}, "X-Request-ID": "r-9"}); err != nil {
		t.Fatal(err)
	}
	r = srv.last(t)
	if r.Method != "POST" || r.URI != "/v1/pets" || r.ContentType != "application/json" || r.Body != `{"name":"Tom","status":"pending"}` {
		t.Errorf("create: %s %s %s %s", r.Method, r.URI, r.ContentType, r.Body)
	}
	if r.Header.Get("Idempotency-Key") != "run1/step/1" || r.Header.Get("X-Request-ID") != "r-9" {
		t.Errorf("create headers: %v", r.Header)
	}

	if _, err := run(t, acts["petstore.listPets"], map[string]any{"limit": 10, "tags": []any{"dog", "small cat"}}); err != nil {
		t.Fatal(err)
	}
	if r = srv.last(t); r.URI != "/v1/pets?limit=10&tags=dog&tags=small+cat" {
		t.Errorf("list: %s", r.URI)
	}

	// DELETE uses the basic scheme its security names, not the API key.
	srv.answer(204, "")
	out, err = run(t, acts["petstore.delete_pets_petId"], map[string]any{"petId": "7"})
	if err != nil || out != nil {
		t.Fatalf("delete: %v %v", out, err)
	}
	if r = srv.last(t); r.Method != "DELETE" || !r.HasBasic || r.User != "alice" || r.Password != "pw-0123456789" || r.Header.Get("X-API-Key") != "" {
		t.Errorf("delete: %+v", r)
	}
}

func TestOperationErrors(t *testing.T) {
	srv := newAPIServer(t)
	acts := petstoreActions(t, srv.URL, map[string]Credential{"api_key": {Value: "$PETSTORE_KEY"}})
	get := acts["petstore.getPet"]
	in := map[string]any{"petId": "1", "X-Trace": "t"}
	for status, retryable := range map[int]bool{404: false, 400: false, 429: true, 500: true, 503: true} {
		srv.answer(status, `{"error": "no", "echo": "key-0123456789"}`)
		_, err := run(t, get, in)
		var ae *action.Error
		if !errors.As(err, &ae) || ae.Retryable != retryable {
			t.Errorf("%d: %v (retryable %v)", status, err, action.Retryable(err))
			continue
		}
		// The server echoing the key does not put it in the step's error.
		if msg := err.Error(); !strings.Contains(msg, "petstore.getPet: GET /pets/{petId}: ") || strings.Contains(msg, "key-0123456789") || !strings.Contains(msg, `"error": "no"`) {
			t.Errorf("%d: message %q", status, msg)
		}
	}

	// A credential whose variable is unset fails before any request.
	before := srv.count()
	noEnv := petstoreActions(t, srv.URL, map[string]Credential{"api_key": {Value: "$UNSET_VARIABLE"}})
	_, err := run(t, noEnv["petstore.getPet"], in)
	if err == nil || !strings.Contains(err.Error(), "UNSET_VARIABLE") || srv.count() != before {
		t.Errorf("unset credential: %v", err)
	}

	// Without credentials the call is made; a 401 says what is missing.
	srv.answer(401, "who are you?")
	anon := petstoreActions(t, srv.URL, nil)
	_, err = run(t, anon["petstore.getPet"], in)
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "no credentials for api_key") {
		t.Errorf("401: %v", err)
	}
	// The status and the body's start, as fields for the run's error.
	if ae := (*action.Error)(nil); !errors.As(err, &ae) || ae.HTTPStatus != 401 || ae.ResponseBody != "who are you?" {
		t.Errorf("401 fields: %#v", ae)
	}

	// A server that is not there: retryable.
	srv.Close()
	_, err = run(t, get, in)
	if !action.Retryable(err) || strings.Contains(err.Error(), "key-0123456789") {
		t.Errorf("unreachable: %v", err)
	}
}

func TestOperationBodiesAndQueryStyles(t *testing.T) {
	srv := newAPIServer(t)
	c, _ := build(t, "bookshop-openapi31.json", Options{Title: "Bookshop", BaseURL: srv.URL + "/api",
		Auth: map[string]Credential{"bearer": {Value: "$PETSTORE_KEY"}, "key": {Value: "$PETSTORE_PW"}}})
	acts := map[string]action.Action{}
	for _, a := range c.Actions(Runtime{LookupEnv: lookup}) {
		acts[a.Name()] = a
	}
	if _, err := run(t, acts["bookshop.getBook"], map[string]any{"bookId": "x/1", "fields": []any{"title", "price"}, "Accept-Language": "fr"}); err != nil {
		t.Fatal(err)
	}
	r := srv.last(t)
	if r.URI != "/api/books/x%2F1?fields=title%2Cprice" || r.Header.Get("Authorization") != "Bearer key-0123456789" || r.Header.Get("Accept-Language") != "fr" {
		t.Errorf("getBook: %s %v", r.URI, r.Header)
	}
	// An API key in the query.
	if _, err := run(t, acts["bookshop.createBook"], map[string]any{"body": map[string]any{"title": "Dune", "price": map[string]any{"amount": 9.5, "currency": "EUR"}}}); err != nil {
		t.Fatal(err)
	}
	if r = srv.last(t); r.URI != "/api/books?api_key=pw-0123456789" || r.Header.Get("Authorization") != "" {
		t.Errorf("createBook: %s %v", r.URI, r.Header)
	}
	var sent map[string]any
	if err := json.Unmarshal([]byte(r.Body), &sent); err != nil || jsonOf(sent) != `{"price":{"amount":9.5,"currency":"EUR"},"title":"Dune"}` {
		t.Errorf("createBook body: %s", r.Body)
	}
	// security: [] sends nothing; the form body is form-encoded.
	if _, err := run(t, acts["bookshop.login"], map[string]any{"body": map[string]any{"user": "ann", "remember": true}}); err != nil {
		t.Fatal(err)
	}
	if r = srv.last(t); r.ContentType != "application/x-www-form-urlencoded" || r.Body != "remember=true&user=ann" || r.Header.Get("Authorization") != "" || r.URI != "/api/login" {
		t.Errorf("login: %+v", r)
	}
	// The input schema refuses what the operation does not take.
	reg := action.NewRegistry(acts["bookshop.createBook"])
	vs := reg.CheckInput(acts["bookshop.createBook"], map[string]any{"body": map[string]any{"price": map[string]any{"amount": 0, "currency": "GBP"}}, "bodyy": 1})
	text := jsonOf(vs)
	for _, want := range []string{`unknown property \"bodyy\"`, "/with/body/price/amount", "/with/body/price/currency", "title"} {
		if !strings.Contains(text, want) {
			t.Errorf("violations miss %s: %s", want, text)
		}
	}
}

// A redirect to another host is not followed: the API key header would go
// with it. One within the API's origin is.
func TestRedirects(t *testing.T) {
	other := newAPIServer(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pets/here" {
			http.Redirect(w, r, "/pets/moved", http.StatusFound)
			return
		}
		if r.URL.Path == "/pets/elsewhere" {
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"path": "`+r.URL.Path+`"}`)
	}))
	defer srv.Close()
	acts := petstoreActions(t, srv.URL, map[string]Credential{"api_key": {Value: "$PETSTORE_KEY"}})
	out, err := run(t, acts["petstore.getPet"], map[string]any{"petId": "here", "X-Trace": "t"})
	if err != nil || jsonOf(out) != `{"path":"/pets/moved"}` {
		t.Fatalf("same-origin redirect: %v %v", out, err)
	}
	_, err = run(t, acts["petstore.getPet"], map[string]any{"petId": "elsewhere", "X-Trace": "t"})
	if err == nil || !strings.Contains(err.Error(), "302") || action.Retryable(err) {
		t.Fatalf("cross-origin redirect: %v", err)
	}
	if n := other.count(); n != 0 {
		t.Fatalf("the other host got %d requests", n)
	}
}

// An operation that may also go without authentication still sends the
// credentials it has; without them it goes anonymous, with no hint.
func TestSecurityAlternatives(t *testing.T) {
	c := &Catalog{Schemes: map[string]Scheme{"k": {Type: SchemeAPIKey, In: "header", Name: "K"}, "b": {Type: SchemeBearer}},
		Auth: map[string]Credential{"k": {Value: "$PETSTORE_KEY"}}}
	for _, tc := range []struct {
		security [][]string
		header   string
		missing  string
	}{
		{[][]string{{}, {"k"}}, "key-0123456789", ""},
		{[][]string{{"b"}, {"k"}}, "key-0123456789", ""},
		{[][]string{{"b"}}, "", "b"},
		{[][]string{{}, {"b"}}, "", ""},
		{[][]string{{"k", "b"}}, "", "b"},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		_, missing, err := c.applyAuth(&Operation{Security: tc.security}, req, url.Values{}, lookup)
		if err != nil || req.Header.Get("K") != tc.header || strings.Join(missing, ",") != tc.missing {
			t.Errorf("%v: header %q missing %v err %v", tc.security, req.Header.Get("K"), missing, err)
		}
	}
}

// A busy server's Retry-After reaches the engine (which waits at least that
// long before the retry), as with the http action; 408 is worth a retry too.
func TestOperationRetryAfter(t *testing.T) {
	srv := newAPIServer(t)
	acts := petstoreActions(t, srv.URL, map[string]Credential{"api_key": {Value: "$PETSTORE_KEY"}})
	in := map[string]any{"petId": "1", "X-Trace": "t"}
	srv.mu.Lock()
	srv.header = http.Header{"Retry-After": {"7"}}
	srv.mu.Unlock()
	for _, status := range []int{429, 503, 408} {
		srv.answer(status, `{"error": "busy"}`)
		_, err := run(t, acts["petstore.getPet"], in)
		ae := &action.Error{}
		if !errors.As(err, &ae) || !ae.Retryable || ae.RetryAfter != 7*time.Second || !strings.Contains(err.Error(), "retry after 7s") {
			t.Errorf("%d: %v (retryable %v, after %v)", status, err, ae.Retryable, ae.RetryAfter)
		}
	}
	srv.answer(404, `{"error": "no"}`)
	if _, err := run(t, acts["petstore.getPet"], in); action.Retryable(err) {
		t.Errorf("404 with Retry-After: %v is retryable", err)
	}
}

package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// requestLog records what an httptest server received.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // "METHOD path key"
}

func (l *requestLog) add(r *http.Request) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Idempotency-Key"))
	return len(l.reqs)
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

// runFlow runs an inline workflow to its end on a fresh service with the
// real built-in actions (runToEnd is in catalog_test.go).
func runFlow(t *testing.T, doc string, inputs map[string]any) (*Service, *RunView) {
	t.Helper()
	svc, err := Open(context.Background(), Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc, runToEnd(t, svc, doc, inputs)
}

// A step with retry against a server that fails twice with 503: three
// requests, all with the same Idempotency-Key, so that the server can
// recognize the retries of one POST; the failed attempts are recorded
// without the credential the server echoed.
func TestHTTPStepRetriesWithOneIdempotencyKey(t *testing.T) {
	var log requestLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := log.add(r)
		if n <= 2 {
			w.Header().Set("Retry-After", "1") // longer than max_backoff: the engine caps it
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "overloaded (auth %s)", r.Header.Get("Authorization"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, `{"id": "it-1", "got": %s}`, body)
	}))
	defer srv.Close()
	doc := `version: 1
name: create-item
inputs:
  base: {type: string}
  token: {type: string, secret: true}
steps:
  - id: create
    uses: http
    with:
      method: POST
      url: '${{ inputs.base }}/items'
      headers: {Authorization: 'Bearer ${{ inputs.token }}'}
      body: {name: widget, size: 3}
    retry: {attempts: 3, backoff: 10ms, max_backoff: 50ms}
outputs:
  id: ${{ steps.create.output.body.id }}
  size: ${{ steps.create.output.body.got.size }}
  status: ${{ steps.create.output.status }}
`
	svc, v := runFlow(t, doc, map[string]any{"base": srv.URL, "token": "tk-5e3cr3t"})
	if v.Status != store.StatusSucceeded {
		t.Fatalf("run %s: %s", v.Status, v.Error)
	}
	if v.Outputs["id"] != "it-1" || v.Outputs["size"] != 3.0 || v.Outputs["status"] != 201.0 {
		t.Fatalf("outputs %v", v.Outputs)
	}
	reqs := log.all()
	want := "POST /items " + v.ID + "/create"
	if len(reqs) != 3 || reqs[0] != want || reqs[1] != want || reqs[2] != want {
		t.Fatalf("requests %q, want 3 × %q", reqs, want)
	}
	atts, err := svc.Store.Attempts(context.Background(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, a := range atts {
		if a.Status == "failed" {
			failed = append(failed, a.Error)
		}
	}
	if len(failed) != 2 || !strings.Contains(failed[0], "status 503 Service Unavailable") || !strings.Contains(failed[0], "retry after 1s") {
		t.Fatalf("failed attempts %q", failed)
	}
	if strings.Contains(strings.Join(failed, " "), "tk-5e3cr3t") {
		t.Fatalf("the token leaked into the attempts: %q", failed)
	}
}

// A 400 is not retried: one request, and the run fails saying why.
func TestHTTPStepDoesNotRetryABadRequest(t *testing.T) {
	var log requestLog
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		http.Error(w, `{"error": "name is required"}`, http.StatusBadRequest)
	}))
	defer srv.Close()
	doc := `version: 1
name: bad-request
inputs:
  base: {type: string}
steps:
  - id: create
    uses: http
    with: {method: POST, url: '${{ inputs.base }}/items', body: {}}
    retry: {attempts: 5, backoff: 10ms}
`
	_, v := runFlow(t, doc, map[string]any{"base": srv.URL})
	if v.Status != store.StatusFailed {
		t.Fatalf("run %s", v.Status)
	}
	if n := len(log.all()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	var runErr struct {
		Message string `json:"message"`
		StepID  string `json:"step_id"`
	}
	_ = json.Unmarshal(v.Error, &runErr)
	want := "http: POST " + srv.URL + "/items: status 400 Bad Request (expected 2xx): {\"error\": \"name is required\"}"
	if runErr.StepID != "create" || runErr.Message != want {
		t.Fatalf("error %s, want message %q", v.Error, want)
	}
}

// A workflow that reads, loops and creates through the real http action:
// query parameters from inputs, output of one request feeding the next,
// and every foreach item retried under a key of its own.
func TestHTTPWorkflowAgainstALocalServer(t *testing.T) {
	var log requestLog
	seen := map[string]bool{}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		switch {
		case r.Method == "GET" && r.URL.Path == "/users":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"team": %q, "users": ["ann", "bo"]}`, r.URL.Query().Get("team"))
		case r.Method == "PUT" && strings.HasPrefix(r.URL.Path, "/users/"):
			mu.Lock()
			first := !seen[r.Header.Get("Idempotency-Key")]
			seen[r.Header.Get("Idempotency-Key")] = true
			mu.Unlock()
			if first {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			body, _ := io.ReadAll(r.Body)
			io.WriteString(w, "ok "+string(body))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	doc := `version: 1
name: sync-users
inputs:
  base: {type: string}
steps:
  - id: list
    uses: http
    with: {url: '${{ inputs.base }}/users', query: {team: core, limit: 2}}
  - id: each
    foreach: ${{ steps.list.output.body.users }}
    steps:
      - id: put
        uses: http
        with:
          method: PUT
          url: '${{ inputs.base }}/users/${{ item }}'
          form: {team: '${{ steps.list.output.body.team }}'}
        retry: {attempts: 2, backoff: 10ms}
outputs:
  replies: ${{ map(steps.each.output, .body) }}
`
	_, v := runFlow(t, doc, map[string]any{"base": srv.URL})
	if v.Status != store.StatusSucceeded {
		t.Fatalf("run %s: %s", v.Status, v.Error)
	}
	if got := fmt.Sprint(v.Outputs["replies"]); got != "[ok team=core ok team=core]" {
		t.Fatalf("replies %s", got)
	}
	// Items interleave while one waits for its retry: compare sorted.
	reqs := log.all()
	sort.Strings(reqs)
	want := []string{
		"GET /users?limit=2&team=core ",
		"PUT /users/ann " + v.ID + "/each[0].put", "PUT /users/ann " + v.ID + "/each[0].put",
		"PUT /users/bo " + v.ID + "/each[1].put", "PUT /users/bo " + v.ID + "/each[1].put",
	}
	if fmt.Sprint(reqs) != fmt.Sprint(want) {
		t.Fatalf("requests\n got %q\nwant %q", reqs, want)
	}
}

// A misspelled `with` key of http is a validation error with a hint, not
// a surprise at run time.
func TestHTTPWithKeysAreChecked(t *testing.T) {
	svc, err := Open(context.Background(), Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(context.Background())
	v := svc.ValidateContent([]byte("version: 1\nname: w\nsteps:\n  - id: a\n    uses: http\n    with: {url: 'https://x.example', metod: POST}\n"))
	if v.Valid || len(v.Violations) != 1 || v.Violations[0].Path != "/steps/0/with/metod" || v.Violations[0].Hint != `did you mean "method"?` {
		t.Fatalf("%+v", v)
	}
}

// examples/provision-server.yaml runs over the real http action against a
// local stand-in of the cloud API (CLOUD_API_URL), with the same outputs as
// with the test double.
func TestProvisionServerExampleOverRealHTTP(t *testing.T) {
	var log requestLog
	const token = "Bearer tok-0123456789abcdef0123456789abcdef" // examples/answers/provision-server.yaml
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		log.add(r)
		if r.Header.Get("Authorization") != token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/servers", "GET /v1/servers/1234":
			w.Header().Set("Content-Type", "application/json")
			if r.Method == "POST" {
				w.WriteHeader(http.StatusCreated)
			}
			io.WriteString(w, `{"server": {"id": 1234, "status": "running", "public_net": {"ipv4": {"ip": "203.0.113.7"}}}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	id := runExample(t, "../../examples/provision-server.yaml", map[string]string{"CLOUD_API_URL": srv.URL}, "http")
	want := []string{"POST /v1/servers " + id + "/create", "GET /v1/servers/1234 "}
	if got := log.all(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("requests\n got %q\nwant %q", got, want)
	}
}

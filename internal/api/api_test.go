package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/service"
)

// testToken is the bearer token of the test servers.
const testToken = "s3cret-token"

// greet asks a name (a pattern it must match), then finishes with it.
const greet = `version: 1
name: greet
steps:
  - id: name
    ask: {prompt: "Your name?", type: string, pattern: '^[A-Z][a-z]+$'}
outputs:
  greeting: "Hello, ${{ steps.name.answer }}"
`

// quick finishes at once with its input.
const quick = `version: 1
name: quick
inputs:
  n: {type: integer}
steps:
  - id: say
    uses: log
    with: {message: "n=${{ inputs.n }}"}
outputs:
  n: ${{ inputs.n }}
`

type fixture struct {
	t   testing.TB
	svc *service.Service
	h   *Handler
	srv *httptest.Server
}

// newFixture serves the API of a fresh home whose library holds greet
// and quick, behind testToken.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureWith(t, service.Options{})
}

// newFixtureWith is newFixture with the service's options (its home and
// durability are set here).
func newFixtureWith(t testing.TB, opts service.Options) *fixture {
	t.Helper()
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"greet.yaml": greet, "quick.yaml": quick} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts.Home, opts.Durability = home, "normal"
	svc, err := service.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	h := New(svc, Options{AuthTokens: []string{testToken}, DefaultWait: 10 * time.Second})
	mux := http.NewServeMux()
	mux.Handle("/api/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		srv.Close()
		_ = svc.Close(context.Background())
	})
	return &fixture{t: t, svc: svc, h: h, srv: srv}
}

// answer is an HTTP answer, its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request with the token; body, when not a string, is encoded
// as JSON.
func (f *fixture) do(method, path string, body any) answer {
	f.t.Helper()
	return f.send(method, path, body, map[string]string{"Authorization": "Bearer " + testToken})
}

func (f *fixture) send(method, path string, body any, headers map[string]string) answer {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, f.srv.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return answer{status: res.StatusCode, header: res.Header, body: data}
}

// run decodes a run answer with the status want.
func (a answer) run(t testing.TB, want int) Run {
	t.Helper()
	if a.status != want {
		t.Fatalf("status %d, want %d: %s", a.status, want, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var r Run
	if err := decodeStrict(a.body, &r); err != nil {
		t.Fatalf("%v: %s", err, a.body)
	}
	return r
}

// problem decodes a problem answer with the status and code want.
func (a answer) problem(t testing.TB, status int, code string) Problem {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json: %s", ct, a.body)
	}
	var p Problem
	if err := decodeStrict(a.body, &p); err != nil {
		t.Fatalf("%v: %s", err, a.body)
	}
	if p.Status != status || p.Code != code || p.Title == "" || p.Type != "urn:stepwise:error:"+code {
		t.Fatalf("problem %+v, want status %d code %s", p, status, code)
	}
	return p
}

func httptestRequest(method, path, body string) *http.Request {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo answers with what it received, as JSON.
func echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("X-Multi", "a")
	w.Header().Add("X-Multi", "b")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"method":          r.Method,
		"query":           r.URL.RawQuery,
		"content_type":    r.Header.Get("Content-Type"),
		"idempotency_key": r.Header.Get("Idempotency-Key"),
		"has_key":         r.Header.Values("Idempotency-Key") != nil,
		"x_trace":         r.Header.Get("X-Trace"),
		"host":            r.Host,
		"body":            string(body),
	})
}

func call(t *testing.T, in map[string]any) (map[string]any, error) {
	t.Helper()
	out, err := HTTP{}.Run(context.Background(), Call{Input: in, IdempotencyKey: "run-1/create", Attempt: 1})
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

func mustCall(t *testing.T, in map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	out, err := call(t, in)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := out["body"].(map[string]any)
	return out, body
}

func TestHTTPJSONBodyAndOutput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	out, got := mustCall(t, map[string]any{"method": "POST", "url": srv.URL + "/items",
		"body": map[string]any{"name": "a<b>&c", "n": 3}})
	if out["status"] != 200 || out["url"] != srv.URL+"/items" {
		t.Fatalf("status %v url %v", out["status"], out["url"])
	}
	if got["method"] != "POST" || got["content_type"] != "application/json" || got["body"] != `{"n":3,"name":"a<b>&c"}` {
		t.Fatalf("server saw %v", got)
	}
	// The engine's key goes out with methods that change things.
	if got["idempotency_key"] != "run-1/create" {
		t.Fatalf("Idempotency-Key %v", got["idempotency_key"])
	}
	h := out["headers"].(map[string]any)
	if h["Content-Type"] != "application/json" || fmt.Sprint(h["X-Multi"]) != "[a b]" {
		t.Fatalf("headers %v", h)
	}
}

func TestHTTPTextAndFormBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	_, got := mustCall(t, map[string]any{"method": "PUT", "url": srv.URL, "body_text": "hello\n"})
	if got["body"] != "hello\n" || got["content_type"] != "text/plain; charset=utf-8" {
		t.Fatalf("text: %v", got)
	}
	_, got = mustCall(t, map[string]any{"method": "POST", "url": srv.URL,
		"form": map[string]any{"q": "a b&c", "n": 2, "tag": []any{"x", "y"}, "skip": nil}})
	if got["body"] != "n=2&q=a+b%26c&tag=x&tag=y" || got["content_type"] != "application/x-www-form-urlencoded" {
		t.Fatalf("form: %v", got)
	}
	// A Content-Type of the workflow wins over the default.
	_, got = mustCall(t, map[string]any{"method": "PATCH", "url": srv.URL, "body": map[string]any{"a": 1},
		"headers": map[string]any{"Content-Type": "application/merge-patch+json"}})
	if got["content_type"] != "application/merge-patch+json" {
		t.Fatalf("content type %v", got["content_type"])
	}
	if _, err := call(t, map[string]any{"method": "POST", "url": srv.URL, "body": 1, "form": map[string]any{}}); err == nil ||
		Retryable(err) || !strings.Contains(err.Error(), "body and form") {
		t.Fatalf("two bodies: %v", err)
	}
}

func TestHTTPQueryEncoding(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	_, got := mustCall(t, map[string]any{"url": srv.URL + "/s?keep=1&z=%2F",
		"query": map[string]any{"q": "ä b&c", "page": 2, "ratio": 0.5, "on": true, "ids": []any{1, "two"}, "none": nil}})
	if got["query"] != "keep=1&z=%2F&ids=1&ids=two&on=true&page=2&q=%C3%A4+b%26c&ratio=0.5" {
		t.Fatalf("query %v", got["query"])
	}
}

func TestHTTPHeadersAndIdempotencyKey(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	defer srv.Close()
	_, got := mustCall(t, map[string]any{"url": srv.URL, "headers": map[string]any{"X-Trace": "t-1", "Host": "api.example"}})
	if got["x_trace"] != "t-1" || got["host"] != "api.example" || got["has_key"] != false {
		t.Fatalf("GET: %v", got)
	}
	_, got = mustCall(t, map[string]any{"method": "POST", "url": srv.URL, "headers": map[string]any{"idempotency-key": "mine"}})
	if got["idempotency_key"] != "mine" {
		t.Fatalf("own key replaced: %v", got)
	}
	_, got = mustCall(t, map[string]any{"method": "DELETE", "url": srv.URL, "idempotency": false})
	if got["has_key"] != false {
		t.Fatalf("idempotency: false still sent %v", got["idempotency_key"])
	}
	if _, err := call(t, map[string]any{"url": srv.URL, "headers": map[string]any{"X-Bad": "a\r\nInjected: 1"}}); err == nil ||
		!strings.Contains(err.Error(), "X-Bad") || strings.Contains(err.Error(), "Injected") {
		t.Fatalf("header with a line break: %v", err)
	}
}

func TestHTTPRedirects(t *testing.T) {
	var other atomic.Value
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Store(r.Header.Get("X-Api-Key") + "|" + r.Header.Get("X-Trace"))
	}))
	defer far.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/new", http.StatusFound) })
	mux.HandleFunc("/new", echo)
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		// Another host: localhost instead of 127.0.0.1.
		http.Redirect(w, r, strings.Replace(far.URL, "127.0.0.1", "localhost", 1), http.StatusTemporaryRedirect)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	withUser := strings.Replace(srv.URL, "http://", "http://ann:pw@", 1)
	out, _ := mustCall(t, map[string]any{"url": withUser + "/old"})
	if out["status"] != 200 || out["url"] != srv.URL+"/new" {
		t.Fatalf("followed: %v %v", out["status"], out["url"])
	}
	out, _ = mustCall(t, map[string]any{"url": srv.URL + "/old", "follow_redirects": false})
	if out["status"] != 302 || out["headers"].(map[string]any)["Location"] != "/new" || out["url"] != srv.URL+"/old" {
		t.Fatalf("not followed: %v", out)
	}
	_, err := call(t, map[string]any{"url": srv.URL + "/loop"})
	if err == nil || Retryable(err) || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Fatalf("loop: %v", err)
	}
	mustCall(t, map[string]any{"url": srv.URL + "/away", "headers": map[string]any{"X-Api-Key": "k-123456", "X-Trace": "t"}})
	if got := other.Load(); got != "|t" {
		t.Fatalf("the other host saw %q: a credential header followed the redirect", got)
	}
}

func TestHTTPExpect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscan(r.URL.Query().Get("code"), &code)
		w.WriteHeader(code)
	}))
	defer srv.Close()
	for _, c := range []struct {
		code   int
		expect []any
		ok     bool
	}{
		{204, nil, true},
		{404, nil, false},
		{404, []any{200, 404}, true},
		{404, []any{"4xx"}, true},
		{204, []any{"200-204"}, true},
		{205, []any{"200-204"}, false},
		{201, []any{"200"}, false},
	} {
		in := map[string]any{"url": fmt.Sprintf("%s?code=%d", srv.URL, c.code)}
		if c.expect != nil {
			in["expect"] = c.expect
		}
		_, err := call(t, in)
		if (err == nil) != c.ok {
			t.Errorf("status %d, expect %v: %v", c.code, c.expect, err)
		}
	}
	_, err := call(t, map[string]any{"url": srv.URL + "?code=201", "expect": []any{200, "3xx"}})
	if err == nil || !strings.Contains(err.Error(), "status 201 Created (expected 200, 3xx)") {
		t.Fatalf("message: %v", err)
	}
	if _, err := call(t, map[string]any{"url": srv.URL, "expect": []any{"6xx"}}); err == nil || !strings.Contains(err.Error(), "6xx") {
		t.Fatalf("bad expect: %v", err)
	}
}

func TestHTTPStatusErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/limited":
			w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
			w.WriteHeader(http.StatusTooManyRequests)
		default:
			// A server that echoes the request, credentials and all,
			// followed by a long explanation.
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "bad request; you sent %s and cookie %s\n\n%s", r.Header.Get("Authorization"),
				r.Header.Get("Cookie"), strings.Repeat("é", 400))
		}
	}))
	defer srv.Close()

	_, err := call(t, map[string]any{"method": "POST", "url": srv.URL + "/busy"})
	var ae *Error
	if !errors.As(err, &ae) || !ae.Retryable || ae.RetryAfter != 7*time.Second ||
		!strings.Contains(err.Error(), "POST "+srv.URL+"/busy: status 503 Service Unavailable") || !strings.Contains(err.Error(), "retry after 7s") {
		t.Fatalf("503: %#v", err)
	}
	_, err = call(t, map[string]any{"url": srv.URL + "/limited"})
	if !errors.As(err, &ae) || !ae.Retryable || ae.RetryAfter < 80*time.Second || ae.RetryAfter > 90*time.Second {
		t.Fatalf("429: %v (retry after %s)", err, ae.RetryAfter)
	}

	_, err = call(t, map[string]any{"method": "POST", "url": srv.URL + "/x?api_key=qk-999999&page=2",
		"headers": map[string]any{"Authorization": "Bearer tok-abcdef", "Cookie": "sid=ck-777777"}})
	if err == nil || Retryable(err) {
		t.Fatalf("400 must fail for good: %v", err)
	}
	msg := err.Error()
	for _, secret := range []string{"tok-abcdef", "ck-777777", "qk-999999"} {
		if strings.Contains(msg, secret) {
			t.Errorf("message shows %q: %s", secret, msg)
		}
	}
	if !strings.Contains(msg, "POST "+srv.URL+"/x?api_key=***&page=2: status 400 Bad Request") || !strings.Contains(msg, "you sent *** and cookie ***") {
		t.Errorf("message: %s", msg)
	}
	_, quoted, _ := strings.Cut(msg, "(expected 2xx): ")
	if len(quoted) > httpExcerptBytes || !strings.HasSuffix(quoted, "é…") {
		t.Errorf("excerpt of %d bytes: %q", len(quoted), quoted)
	}
}

func TestHTTPTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	start := time.Now()
	_, err := call(t, map[string]any{"url": srv.URL, "timeout": "100ms"})
	if err == nil || !Retryable(err) || !strings.Contains(err.Error(), "no response within 100ms") {
		t.Fatalf("own timeout: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatalf("the timeout did not stop the call")
	}
	// The step's context wins over a longer own timeout, and the error
	// says the context ended so the engine can tell.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = HTTP{}.Run(ctx, Call{Input: map[string]any{"url": srv.URL}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("step timeout: %v", err)
	}
}

func TestHTTPResponseSizeCap(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload := strings.Repeat("x", 1000)
		if r.URL.Query().Has("stream") {
			w.(http.Flusher).Flush() // chunked: no Content-Length to check up front
		}
		io.WriteString(w, payload)
	}))
	defer srv.Close()
	for _, u := range []string{srv.URL, srv.URL + "?stream=1"} {
		_, err := call(t, map[string]any{"url": u, "max_response_bytes": 100})
		if err == nil || Retryable(err) || !strings.Contains(err.Error(), "larger than max_response_bytes (100 bytes)") {
			t.Fatalf("%s: %v", u, err)
		}
	}
	out, _ := mustCall(t, map[string]any{"url": srv.URL, "max_response_bytes": 1000})
	if len(out["body"].(string)) != 1000 {
		t.Fatalf("a body of exactly the cap was refused or cut")
	}
	// HEAD announces a length but sends nothing: not too large.
	out, _ = mustCall(t, map[string]any{"method": "HEAD", "url": srv.URL, "max_response_bytes": 100})
	if out["body"] != "" || out["headers"].(map[string]any)["Content-Length"] != "1000" {
		t.Fatalf("HEAD: %v", out)
	}
}

func TestHTTPParse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", r.URL.Query().Get("ct"))
		io.WriteString(w, r.URL.Query().Get("body"))
	}))
	defer srv.Close()
	for _, c := range []struct {
		ct, body, parse string
		want            any
	}{
		{"application/json; charset=utf-8", `{"a":1}`, "", map[string]any{"a": 1.0}},
		{"application/problem+json", `[1]`, "auto", []any{1.0}},
		{"application/json", ``, "auto", nil},
		{"text/plain", `{"a":1}`, "auto", `{"a":1}`},
		{"text/plain", `{"a":1}`, "json", map[string]any{"a": 1.0}},
		{"application/json", `{"a":1}`, "text", `{"a":1}`},
	} {
		in := map[string]any{"url": srv.URL + "?ct=" + urlQuery(c.ct) + "&body=" + urlQuery(c.body)}
		if c.parse != "" {
			in["parse"] = c.parse
		}
		out, err := call(t, in)
		if err != nil || fmt.Sprint(out["body"]) != fmt.Sprint(c.want) {
			t.Errorf("%s %q parse %q: %v %#v", c.ct, c.body, c.parse, err, out["body"])
		}
	}
	_, err := call(t, map[string]any{"url": srv.URL + "?ct=application/json&body=oops"})
	if err == nil || Retryable(err) || !strings.Contains(err.Error(), "not JSON") || !strings.Contains(err.Error(), "parse: text") {
		t.Fatalf("invalid JSON: %v", err)
	}
}

func TestHTTPNetworkErrorsAreRetryable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(echo))
	url := srv.URL
	srv.Close()
	withUser := strings.Replace(url, "http://", "http://ann:pw-123456@", 1)
	_, err := call(t, map[string]any{"url": withUser + "/?token=zz-secret-1"})
	if err == nil || !Retryable(err) || strings.Contains(err.Error(), "zz-secret-1") || strings.Contains(err.Error(), "pw-123456") ||
		!strings.Contains(err.Error(), "http://***@127.0.0.1") {
		t.Fatalf("closed server: %v", err)
	}
}

func TestHTTPInputErrors(t *testing.T) {
	for in, want := range map[string]map[string]any{
		"scheme \"ftp\"":      {"url": "ftp://example.com/x"},
		"method TRACE":        {"url": "http://example.com", "method": "TRACE"},
		"timeout soon":        {"url": "http://example.com", "timeout": "soon"},
		"max_response_bytes":  {"url": "http://example.com", "max_response_bytes": 0},
		"want an http:// or ": {},
	} {
		_, err := call(t, want)
		if err == nil || Retryable(err) || !strings.Contains(err.Error(), in) {
			t.Errorf("%v: %v, want an error about %s", want, err, in)
		}
	}
}

// The input schema accepts every documented key and refuses a misspelled
// one, so that validation catches it before a run.
func TestHTTPInputSchema(t *testing.T) {
	r := Builtins()
	a, _ := r.Get("http")
	full := map[string]any{"method": "POST", "url": "https://x.example/p", "headers": map[string]any{"A": "b", "N": 1},
		"query": map[string]any{"a": []any{1, "b"}, "c": nil, "d": true}, "body": map[string]any{"k": []any{1}},
		"timeout": "5s", "expect": []any{200, "3xx", "400-404"}, "parse": "json", "max_response_bytes": 1024,
		"follow_redirects": false, "idempotency": false}
	if vs := r.CheckInput(a, full); len(vs) != 0 {
		t.Fatalf("valid input refused: %v", vs)
	}
	vs := r.CheckInput(a, map[string]any{"url": "file:///etc/passwd", "hedaers": map[string]any{}, "expect": []any{"2XX"}})
	got := ""
	for _, v := range vs {
		got += v.Path + " " + v.Message + "\n"
	}
	for _, want := range []string{"hedaers", "/with/url ", "/with/expect/0 "} {
		if !strings.Contains(got, want) {
			t.Errorf("violations lack %s: %s", want, got)
		}
	}
	keys, required, closed, ok := r.InputKeys("http")
	if !ok || !closed || len(keys) != 13 || fmt.Sprint(required) != "[url]" {
		t.Fatalf("keys %v required %v closed %v", keys, required, closed)
	}
}

func urlQuery(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "+", "%2B", " ", "%20", "#", "%23", ";", "%3B").Replace(s)
}

// A request's credentials are hidden from its messages whole, even when
// two of them overlap, and from three bytes on, as the run's masker does.
func TestScrubbedHidesOverlappingSecrets(t *testing.T) {
	if got := scrubbed("x abcdef y key", []string{"abcd", "cdef", "key"}); got != "x *** y ***" {
		t.Fatalf("scrubbed: %q", got)
	}
}

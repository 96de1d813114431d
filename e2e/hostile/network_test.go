//go:build linux

package hostile

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// Item 9: a workflow's http step must not make the server reach what only
// the server can: loopback, private, link-local and cloud metadata
// addresses are refused (NETWORK_NOT_ALLOWED) before a connection is
// made, unless the operator allows them.

// listener is a local HTTP server on 127.0.0.1 that counts its requests.
type listener struct {
	srv  *http.Server
	port int
	hits atomic.Int64
}

// listen starts a listener, stopped when the test ends.
func listen(t *testing.T) (*listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &listener{port: ln.Addr().(*net.TCPAddr).Port}
	l.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		l.hits.Add(1)
		_, _ = w.Write([]byte("secret admin page"))
	})}
	go func() { _ = l.srv.Serve(ln) }()
	t.Cleanup(func() { _ = l.srv.Close() })
	return l, nil
}

// fetchFlow is a workflow whose one step gets url as text.
func fetchFlow(url string) string {
	return "version: 1\nname: fetch\nsteps:\n  - id: get\n    uses: http\n    with: {url: \"" + url + "\", parse: text}\n"
}

// fetchRefused runs a workflow that gets url (PORT: the listener's port)
// and wants the run failed with the outcome's code and the listener not
// reached.
func fetchRefused(url string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, t *testing.T, c *Conn) (string, error) {
		l, err := listen(t)
		if err != nil {
			return "", err
		}
		code, err := runFails(fetchFlow(strings.ReplaceAll(url, "PORT", fmt.Sprint(l.port))))(ctx, t, c)
		if err != nil {
			return code, err
		}
		if n := l.hits.Load(); n != 0 {
			return code, fmt.Errorf("the listener got %d requests", n)
		}
		return code, nil
	}
}

// fetchReaches runs a workflow that gets the listener's /admin and wants
// the run succeeded with the listener reached (the control of
// fetchRefused).
func fetchReaches(ctx context.Context, t *testing.T, c *Conn) (string, error) {
	l, err := listen(t)
	if err != nil {
		return "", err
	}
	r, err := c.Tool(ctx, "run_start", map[string]any{"definition": fetchFlow(fmt.Sprintf("http://127.0.0.1:%d/admin", l.port)), "wait_seconds": 25})
	if err != nil {
		return "", err
	}
	if r.IsError {
		return r.ErrorCode(), fmt.Errorf("run_start: %.300v", r.Structured)
	}
	status, _ := r.Structured["status"].(string)
	if status != "succeeded" {
		return status, fmt.Errorf("run %s: %.300v", status, r.Structured["error"])
	}
	if n := l.hits.Load(); n != 1 {
		return status, fmt.Errorf("the listener got %d requests, want 1", n)
	}
	return "reached", nil
}

// networkCases are item 9's cases.
func networkCases() []Case {
	return []Case{
		{Name: "ssrf: http://127.0.0.1:PORT/admin", Transport: Stdio, Want: "NETWORK_NOT_ALLOWED", Run: fetchRefused("http://127.0.0.1:PORT/admin")},
		{Name: "ssrf: http://localhost:PORT/", Transport: Stdio, Want: "NETWORK_NOT_ALLOWED", Run: fetchRefused("http://localhost:PORT/")},
		{Name: "ssrf: http://[::ffff:127.0.0.1]:PORT/", Transport: Stdio, Want: "NETWORK_NOT_ALLOWED", Run: fetchRefused("http://[::ffff:127.0.0.1]:PORT/")},
		{
			Name: "ssrf: http://169.254.169.254/latest/meta-data/", Transport: Stdio, Want: "NETWORK_NOT_ALLOWED",
			Run: fetchRefused("http://169.254.169.254/latest/meta-data/"),
		},
		{Name: "ssrf: 127.0.0.1 with --allow-network 127.0.0.1", Transport: Stdio, Flags: []string{"--allow-network", "127.0.0.1"}, Want: "reached", Run: fetchReaches},
	}
}

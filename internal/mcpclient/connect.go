package mcpclient

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/linelog"
	"stepwise.dev/stepwise/internal/secret"
)

// terminateAfter is how long a stdio server gets to exit after its stdin
// closes before it is sent SIGTERM (and later killed).
const terminateAfter = 2 * time.Second

// resolved is a server with its $NAME references replaced by values, and
// a masker that knows those values.
type resolved struct {
	Server
	mask *secret.Masker
}

// resolve replaces the references of s's env and headers, looking
// variables up with lookup. Errors name variables, never values.
func resolve(s Server, lookup func(string) (string, bool)) (*resolved, error) {
	r := &resolved{Server: s, mask: secret.NewMasker()}
	var err error
	if r.Env, err = expandAll(s.Env, "env", lookup, r.mask); err != nil {
		return nil, err
	}
	if r.Headers, err = expandAll(s.Headers, "header", lookup, r.mask); err != nil {
		return nil, err
	}
	return r, nil
}

func expandAll(m map[string]string, what string, lookup func(string) (string, bool), mask *secret.Masker) (map[string]string, error) {
	if len(m) == 0 {
		return m, nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		v, used, err := expand(m[k], lookup)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, k, err)
		}
		mask.Add(used...)
		out[k] = v
	}
	return out, nil
}

// dial opens a session to the server: a subprocess over stdio or a
// streamable HTTP connection through transport. ctx bounds the handshake only; the session
// lives until it is closed.
func dial(ctx context.Context, client *mcp.Client, r *resolved, lookup func(string) (string, bool), transport http.RoundTripper, log *slog.Logger) (*session, error) {
	if r.Command != "" {
		cmd := exec.Command(r.Command, r.Args...)
		cmd.Env = cleanEnv(r.Env, lookup)
		// stdout carries JSON-RPC (a pipe of the transport), stderr goes to
		// the log: neither ever reaches the server's own stdout.
		stderr := stderrLog(log, r.mask)
		cmd.Stderr = stderr
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}, nil)
		if err != nil {
			// A failed handshake has closed the session: the process was
			// awaited (terminated, killed) already.
			stderr.Flush()
			return nil, err
		}
		return &session{cs: cs, stderr: stderr}, nil
	}
	hc := &http.Client{Transport: headerTransport{headers: r.Headers, base: transport}}
	// No standalone SSE stream: a step only needs the answers to its own
	// calls, not notifications the server may send between them.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, err
	}
	return &session{cs: cs}, nil
}

// cleanEnv is a stdio server's whole environment: PATH and HOME of
// stepwise, then the declared variables. Nothing else of stepwise's
// environment (its secrets, STEPWISE_*) reaches the server.
func cleanEnv(declared map[string]string, lookup func(string) (string, bool)) []string {
	env := []string{}
	for _, name := range []string{"PATH", "HOME"} {
		if _, ok := declared[name]; ok {
			continue
		}
		if v, ok := lookup(name); ok {
			env = append(env, name+"="+v)
		}
	}
	for _, k := range sortedKeys(declared) {
		env = append(env, k+"="+declared[k])
	}
	return env
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

// stderrLog logs a stdio server's stderr line by line (4 KiB at most per
// record), with the resolved references masked (a server that prints its
// environment does not put a token into stepwise's log).
func stderrLog(log *slog.Logger, mask *secret.Masker) *linelog.Writer {
	return &linelog.Writer{Max: 4096, Emit: func(line []byte) {
		if len(line) == 0 || log == nil {
			return
		}
		log.Info("mcp server stderr", "line", mask.Mask(string(line)))
	}}
}

package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/mcpclient/mcpclienttest"
)

const testToken = "s3cr3t-token-value"

// httpServer serves the test tools over streamable HTTP in process.
func httpServer(t *testing.T) (*httptest.Server, *mcpclienttest.Stats) {
	t.Helper()
	stats := &mcpclienttest.Stats{}
	srv := mcpclienttest.NewServer(stats, false)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts, stats
}

func newAction(t *testing.T, servers string, allowInline bool) *Action {
	t.Helper()
	path := filepath.Join(t.TempDir(), ServersFile)
	if servers != "" {
		if err := os.WriteFile(path, []byte(servers), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"TEST_TOKEN": testToken, "PATH": os.Getenv("PATH"), "HOME": t.TempDir()}
	return New(Config{ServersFile: path, AllowInlineCommands: allowInline, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
}

func run(a *Action, scope *action.Scope, with map[string]any) (any, error) {
	return a.Run(context.Background(), action.Call{Input: with, IdempotencyKey: "run/step/1", Scope: scope})
}

// Calls of one scope to one server share a connection; the scope's close
// ends it, and the next scope connects again.
func TestHTTPCallsShareAConnectionPerScope(t *testing.T) {
	ts, stats := httpServer(t)
	a := newAction(t, "servers:\n  calc:\n    url: "+ts.URL+"\n", false)
	scope := action.NewScope()
	var wg sync.WaitGroup
	outs := make([]any, 4)
	errs := make([]error, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = run(a, scope, map[string]any{"server": "calc", "tool": "add", "arguments": map[string]any{"a": float64(i), "b": 2.5}})
		}()
	}
	wg.Wait()
	for i := range outs {
		if errs[i] != nil || !reflect.DeepEqual(outs[i], map[string]any{"sum": float64(i) + 2.5}) {
			t.Fatalf("call %d: %v %v", i, outs[i], errs[i])
		}
	}
	// The same server inline is another identity: its own connection.
	if _, err := run(a, scope, map[string]any{"url": ts.URL, "tool": "add", "arguments": map[string]any{"a": 1, "b": 1}}); err != nil {
		t.Fatal(err)
	}
	if n := stats.Connections.Load(); n != 2 {
		t.Fatalf("%d connections for 5 calls to 2 identities, want 2", n)
	}
	if err := scope.Close(); err != nil {
		t.Fatal(err)
	}
	add := map[string]any{"a": 1, "b": 2}
	if _, err := run(a, action.NewScope(), map[string]any{"server": "calc", "tool": "add", "arguments": add}); err != nil {
		t.Fatal(err)
	}
	if n := stats.Connections.Load(); n != 3 {
		t.Fatalf("a new scope did not connect again: %d connections", n)
	}
	// Without a scope, a call opens and closes its own connection.
	if _, err := run(a, nil, map[string]any{"server": "calc", "tool": "add", "arguments": add}); err != nil {
		t.Fatal(err)
	}
	if n := stats.Connections.Load(); n != 4 {
		t.Fatalf("an unscoped call: %d connections", n)
	}
}

// Text-only results become {text, content}; $NAME header references are
// resolved when connecting and masked if the server echoes them.
func TestHTTPResultsAndHeaders(t *testing.T) {
	ts, _ := httpServer(t)
	a := newAction(t, "servers:\n  s:\n    url: "+ts.URL+"\n    headers: {Authorization: Bearer $TEST_TOKEN, X-Plain: $$1}\n", false)
	out, err := run(a, nil, map[string]any{"server": "s", "tool": "echo", "arguments": map[string]any{"text": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"text": "hello\ndone", "content": []any{
		map[string]any{"type": "text", "text": "hello"}, map[string]any{"type": "text", "text": "done"}}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("echo: %#v", out)
	}
	out, err = run(a, nil, map[string]any{"server": "s", "tool": "header", "arguments": map[string]any{"name": "Authorization"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, map[string]any{"value": "Bearer ***", "set": true}) {
		t.Fatalf("the server did not get the resolved header, or its value leaked: %#v", out)
	}
	out, _ = run(a, nil, map[string]any{"server": "s", "tool": "header", "arguments": map[string]any{"name": "X-Plain"}})
	if !reflect.DeepEqual(out, map[string]any{"value": "$1", "set": true}) {
		t.Fatalf("$$ is a literal $: %#v", out)
	}
	// An unset variable names the variable, fails for good, connects nothing.
	_, err = run(a, nil, map[string]any{"url": ts.URL, "headers": map[string]any{"Authorization": "$NOPE"}, "tool": "add"})
	if err == nil || action.Retryable(err) || !strings.Contains(err.Error(), "header Authorization: environment variable NOPE is not set") {
		t.Fatalf("unset reference: %v", err)
	}
}

// isError and errors the server answers fail for good with its message;
// a server that cannot be reached or does not answer in time may succeed
// later.
func TestFailuresAndRetryability(t *testing.T) {
	ts, _ := httpServer(t)
	a := newAction(t, "servers:\n  s:\n    url: "+ts.URL+"\n", false)
	cases := []struct {
		with      map[string]any
		retryable bool
		message   string
	}{
		{map[string]any{"server": "s", "tool": "fail", "arguments": map[string]any{"message": "disk full"}}, false,
			`mcp: tool "fail" of server "s" failed: disk full`},
		{map[string]any{"server": "s", "tool": "nope"}, false, `mcp: tool "nope" of server "s": `},
		{map[string]any{"server": "s", "tool": "sleep", "arguments": map[string]any{"ms": 5000}, "timeout": "200ms"}, true,
			`mcp: tool "sleep" of server "s" did not answer within 200ms`},
		{map[string]any{"server": "gone", "tool": "add"}, false, `no server named "gone" in `},
		{map[string]any{"url": "http://127.0.0.1:1/mcp", "tool": "add"}, true, "mcp: connect to http://127.0.0.1:1/mcp: "},
		{map[string]any{"command": "true", "tool": "add"}, false, "this server does not allow inline commands"},
		{map[string]any{"server": "s", "tool": "add", "timeout": "soon"}, false, `with.timeout "soon"`},
	}
	for _, c := range cases {
		_, err := run(a, action.NewScope(), c.with)
		var ae *action.Error
		if !errors.As(err, &ae) || ae.Retryable != c.retryable || !strings.Contains(err.Error(), c.message) {
			t.Errorf("%v: %v (retryable %v), want %q (retryable %v)", c.with, err, action.Retryable(err), c.message, c.retryable)
		}
	}
}

// A broken schema check of with: one way to reach the server.
func TestInputSchema(t *testing.T) {
	reg := action.NewRegistry(newAction(t, "", false))
	a, _ := reg.Get("mcp")
	for _, tc := range []struct {
		with map[string]any
		ok   bool
	}{
		{map[string]any{"server": "s", "tool": "t"}, true},
		{map[string]any{"command": "c", "args": []any{"x"}, "env": map[string]any{"A": "b"}, "tool": "t", "arguments": map[string]any{"n": 1}, "timeout": "5s"}, true},
		{map[string]any{"url": "https://x/mcp", "headers": map[string]any{"A": "b"}, "tool": "t"}, true},
		{map[string]any{"server": "s", "url": "https://x/mcp", "tool": "t"}, false},
		{map[string]any{"tool": "t"}, false},
		{map[string]any{"server": "s"}, false},
		{map[string]any{"server": "s", "tool": "t", "headers": map[string]any{"A": "b"}}, false},
		{map[string]any{"url": "https://x/mcp", "tool": "t", "args": []any{"x"}}, false},
		{map[string]any{"server": "s", "tool": "t", "sever": "typo"}, false},
	} {
		if vs := reg.CheckInput(a, tc.with); (len(vs) == 0) != tc.ok {
			t.Errorf("%v: violations %v, want ok=%v", tc.with, vs, tc.ok)
		}
	}
	if a.Safety() != action.Mutating {
		t.Errorf("safety %s", a.Safety())
	}
}

// A stdio server runs with a clean environment (PATH, HOME and what is
// declared, references resolved), its stderr goes to the log, one process
// serves a scope, and it exits when the scope closes. A server that dies is
// reconnected on the next call.
func TestStdioServer(t *testing.T) {
	lives := filepath.Join(t.TempDir(), "lives")
	command, env, err := mcpclienttest.Helper(lives)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("STEPWISE_LEAK_CHECK", "visible-to-stepwise-only")
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	a := newAction(t, "", true)
	withEnv := map[string]any{"SECRET_FOR_SERVER": "$TEST_TOKEN"}
	for k, v := range env {
		withEnv[k] = v
	}
	scope := action.NewScope()
	call := func(tool string, args map[string]any) (any, error) {
		return a.Run(context.Background(), action.Call{Logger: logger, Scope: scope,
			Input: map[string]any{"command": command, "env": withEnv, "tool": tool, "arguments": args}})
	}
	for name, want := range map[string]any{
		"SECRET_FOR_SERVER":   map[string]any{"value": "***", "set": true},
		"STEPWISE_LEAK_CHECK": map[string]any{"value": "", "set": false},
		"PATH":                map[string]any{"value": os.Getenv("PATH"), "set": true},
	} {
		out, err := call("env", map[string]any{"name": name})
		if err != nil || !reflect.DeepEqual(out, want) {
			t.Errorf("env %s: %v %v, want %v", name, out, err, want)
		}
	}
	started, _, _ := mcpclienttest.Lives(lives)
	if len(started) != 1 {
		t.Fatalf("%d processes for 3 calls of one scope", len(started))
	}
	// The server dies: the call fails retryably and the next one starts a
	// new process.
	if _, err := call("crash", nil); err == nil || !action.Retryable(err) {
		t.Fatalf("a crashed server: %v", err)
	}
	if out, err := call("add", map[string]any{"a": 1, "b": 1}); err != nil || !reflect.DeepEqual(out, map[string]any{"sum": 2.0}) {
		t.Fatalf("after the crash: %v %v", out, err)
	}
	if err := scope.Close(); err != nil {
		t.Fatal(err)
	}
	started, stopped, _ := mcpclienttest.Lives(lives)
	if len(started) != 2 || len(stopped) != 1 || stopped[0] != started[1] {
		t.Fatalf("started %v, stopped %v: the second process should have stopped when the scope closed", started, stopped)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "mcptest helper: serving on stdio") {
		t.Errorf("stderr not logged:\n%s", logs.String())
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// A timeout applies to connecting too: a program that never speaks MCP
// fails the call in time, retryably.
func TestStdioConnectTimeout(t *testing.T) {
	a := newAction(t, "", true)
	start := time.Now()
	_, err := run(a, action.NewScope(), map[string]any{"command": "sleep", "args": []any{"30"}, "tool": "x", "timeout": "300ms"})
	if err == nil || !action.Retryable(err) || !strings.Contains(err.Error(), "did not answer within 300ms") {
		t.Fatalf("%v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %s", d)
	}
}

//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// TestMain removes the shared binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// sharedBinary builds the binary once for all the tests that start it.
func sharedBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stepwise-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "stepwise")
		build := exec.Command("go", "build", "-o", binPath, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README builds it
		out, err := build.CombinedOutput()
		if err != nil {
			binErr = &buildError{out: string(out), err: err}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// libraryHome is a home whose library holds the MCP test workflows.
func libraryHome(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"greet.yaml", "vault.yaml"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "internal", "mcpserver", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lib, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// notes collects what the server sends besides results.
type notes struct {
	mu       sync.Mutex
	updated  []string
	progress []float64
}

func (n *notes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			n.mu.Lock()
			n.updated = append(n.updated, r.Params.URI)
			n.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			n.mu.Lock()
			n.progress = append(n.progress, r.Params.Progress)
			n.mu.Unlock()
		},
	}
}

type result struct {
	RunID   string         `json:"run_id"`
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs"`
	Pause   *struct {
		Kind         string         `json:"kind"`
		Token        string         `json:"token"`
		OutputSchema map[string]any `json:"output_schema"`
	} `json:"pause"`
	Valid      bool   `json:"valid"`
	ErrorCode  string `json:"error_code"`
	Violations []struct {
		Line    int    `json:"line"`
		Message string `json:"message"`
	} `json:"violations"`
	Workflows []struct {
		Name string `json:"name"`
	} `json:"workflows"`
	// library and plan results
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Draft        bool     `json:"draft"`
	DraftRemoved bool     `json:"draft_removed"`
	Ready        bool     `json:"ready"`
	Missing      []string `json:"missing"`
	Category     string   `json:"category"`
	Context      struct {
		CurrentVersion string `json:"current_version"`
	} `json:"context"`
	// Steps is run_get's summary or workflow_plan's list.
	Steps json.RawMessage `json:"steps"`
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, progress any) (result, bool) {
	t.Helper()
	r, isErr, err := tryTool(cs, name, args, progress)
	if err != nil {
		t.Fatal(err)
	}
	return r, isErr
}

// tryTool is callTool for any goroutine: a call that fails (not a tool
// error: the transport, a result that is not the run shape) is its error.
func tryTool(cs *mcp.ClientSession, name string, args map[string]any, progress any) (result, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if progress != nil {
		p.SetProgressToken(progress)
	}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		return result{}, false, fmt.Errorf("%s: %w", name, err)
	}
	var r result
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &r); err != nil {
		return result{}, false, fmt.Errorf("%s: %s: %w", name, b, err)
	}
	return r, res.IsError, nil
}

// scriptedSession is the one session every transport must pass: list,
// validate (invalid, then valid), a run with a question and an agent step
// answered wrongly and rightly, resources, a subscription, progress.
func scriptedSession(t *testing.T, cs *mcp.ClientSession, n *notes) {
	ctx := context.Background()
	if r, isErr := callTool(t, cs, "workflow_list", map[string]any{}, nil); isErr || len(r.Workflows) != 2 || r.Workflows[0].Name != "greet" {
		t.Fatalf("workflow_list: %+v", r)
	}
	if r, _ := callTool(t, cs, "workflow_validate", map[string]any{"content": "version: 1\nname: bad\nsteps:\n  - {id: a, uses: nope}\n"}, nil); r.Valid || len(r.Violations) == 0 || r.Violations[0].Line != 4 {
		t.Fatalf("validate invalid: %+v", r)
	}
	if r, _ := callTool(t, cs, "workflow_validate", map[string]any{"name": "greet"}, nil); !r.Valid {
		t.Fatalf("validate valid: %+v", r)
	}
	run, isErr := callTool(t, cs, "run_start", map[string]any{"workflow": "greet", "inputs": map[string]any{"greeting": "Hi"}}, nil)
	if isErr || run.Status != "waiting" || run.Pause == nil || run.Pause.Kind != "question" {
		t.Fatalf("run_start: %+v", run)
	}
	uri := "stepwise://runs/" + run.RunID
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	tok := run.Pause.Token
	if r, isErr := callTool(t, cs, "run_continue", map[string]any{"token": tok, "value": "lowercase"}, nil); !isErr || r.ErrorCode != "ANSWER_INVALID" || len(r.Violations) == 0 {
		t.Fatalf("invalid answer: %+v", r)
	}
	if r, _ := callTool(t, cs, "run_get", map[string]any{"run_id": run.RunID}, nil); r.Status != "waiting" || r.Pause == nil || r.Pause.Token != tok {
		t.Fatalf("run changed after an invalid answer: %+v", r)
	}
	agent, isErr := callTool(t, cs, "run_continue", map[string]any{"token": tok, "value": "Ada"}, "progress-1")
	if isErr || agent.Pause == nil || agent.Pause.Kind != "agent" || agent.Pause.OutputSchema == nil {
		t.Fatalf("agent pause: %+v", agent)
	}
	if r, isErr := callTool(t, cs, "run_continue", map[string]any{"token": agent.Pause.Token, "value": map[string]any{"line": 3}}, nil); !isErr || r.ErrorCode != "ANSWER_INVALID" {
		t.Fatalf("output against the schema: %+v", r)
	}
	done, isErr := callTool(t, cs, "run_continue", map[string]any{"token": agent.Pause.Token, "value": map[string]any{"line": "Hi Ada!"}}, nil)
	if isErr || done.Status != "succeeded" || done.Outputs["line"] != "Hi Ada!" || done.Outputs["name"] != "Ada" {
		t.Fatalf("final: %+v", done)
	}
	for _, u := range []string{"stepwise://docs/workflows", "stepwise://schema/workflow", "stepwise://workflows", "stepwise://workflows/greet", uri, uri + "/history"} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: u})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text == "" {
			t.Errorf("read %s: %v", u, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n.mu.Lock()
		got, prog := len(n.updated), len(n.progress)
		n.mu.Unlock()
		if got > 0 && prog > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d resources/updated and %d progress notifications", got, prog)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeStdioSession(t *testing.T) {
	bin := sharedBinary(t)
	cmd := exec.Command(bin, "--home", libraryHome(t), "serve")
	n := &notes{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, n.options()).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	scriptedSession(t, cs, n)
	libraryFlow(t, cs)
}

// startHTTP starts `serve --http` on a free port and returns its URL.
func startHTTP(t testing.TB, bin string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	return serveProc(t, bin, append([]string{"--home", libraryHome(t), "serve", "--http", "127.0.0.1:0"}, args...)...)
}

// serveProc runs bin with args (a `serve` that announces its address),
// killed when the test ends, and returns the MCP URL it announced.
func serveProc(t testing.TB, bin string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`serving MCP at (\S+)`)
	for lines.Scan() {
		if m := re.FindStringSubmatch(lines.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return m[1], cmd
		}
	}
	t.Fatalf("%v: announced no address", args)
	return "", nil
}

func TestServeHTTPSession(t *testing.T) {
	bin := sharedBinary(t)
	url, cmd := startHTTP(t, bin)
	n := &notes{}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, n.options()).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	scriptedSession(t, cs, n)
	libraryFlow(t, cs)
	_ = cs.Close()
	// SIGTERM: a graceful stop, exit 0.
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func TestServeHTTPSecurity(t *testing.T) {
	bin := sharedBinary(t)
	const token = "a-long-enough-test-token"
	url, cmd := startHTTP(t, bin, "--auth-token", token)
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	post := func(hdr map[string]string) *http.Response {
		req, _ := http.NewRequest("POST", url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post(nil); r.StatusCode != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "resource_metadata") {
		t.Errorf("no token: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	if r := post(map[string]string{"Authorization": "Bearer wrong-token-of-some-length"}); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", r.StatusCode)
	}
	if r := post(map[string]string{"Authorization": "Bearer " + token, "Origin": "https://evil.example"}); r.StatusCode != http.StatusForbidden {
		t.Errorf("foreign origin: %d", r.StatusCode)
	}
	if r := post(map[string]string{"Authorization": "Bearer " + token}); r.StatusCode != http.StatusOK {
		t.Errorf("with the token: %d", r.StatusCode)
	}
	// The go-sdk client works with the token.
	hc := &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, isErr := callTool(t, cs, "workflow_list", map[string]any{}, nil); isErr || len(r.Workflows) != 2 {
		t.Errorf("authenticated call: %+v", r)
	}
	_ = cs.Close()
	// SIGINT: exit 130.
	_ = cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("exit after SIGINT: %v", err)
	}

	// A non-loopback address without tokens refuses to start.
	out, err := exec.Command(bin, "--home", t.TempDir(), "serve", "--http", "0.0.0.0:0").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--auth-token") {
		t.Errorf("non-loopback without tokens: %v %s", err, out)
	}
	// --insecure lets it start.
	insecure := exec.Command(bin, "--home", t.TempDir(), "serve", "--http", "0.0.0.0:0", "--insecure")
	stderr, _ := insecure.StderrPipe()
	if err := insecure.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = insecure.Process.Kill(); _ = insecure.Wait() }()
	line, _ := bufio.NewReader(stderr).ReadString('\n')
	if !strings.Contains(line, "serving MCP at") {
		t.Errorf("--insecure: %q", line)
	}
}

// serveStdio starts the binary with args and connects to it over stdio.
func serveStdio(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	return serveStdioEnv(t, nil, args...)
}

// serveStdioEnv is serveStdio with extra environment variables.
func serveStdioEnv(t *testing.T, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(sharedBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

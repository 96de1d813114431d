package service

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/mcpclient"
	"stepwise.dev/stepwise/internal/mcpclient/mcpclienttest"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
)

var (
	stepwiseOnce sync.Once
	stepwiseBin  string
	stepwiseErr  error
)

// stepwiseBinary builds stepwise once for the tests that start it as an
// MCP server.
func stepwiseBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	stepwiseOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stepwise-mcpaction")
		if err != nil {
			stepwiseErr = err
			return
		}
		stepwiseBin = filepath.Join(dir, "stepwise")
		if out, err := exec.Command("go", "build", "-o", stepwiseBin, "stepwise.dev/stepwise/cmd/stepwise").CombinedOutput(); err != nil {
			stepwiseErr = &buildFailure{string(out), err}
		}
	})
	if stepwiseErr != nil {
		t.Fatal(stepwiseErr)
	}
	return stepwiseBin
}

type buildFailure struct {
	out string
	err error
}

func (e *buildFailure) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// mcpHome is a home whose servers.yaml holds servers.
func mcpHome(t *testing.T, servers string) string {
	t.Helper()
	dir := t.TempDir()
	if servers != "" {
		if err := os.WriteFile(filepath.Join(dir, mcpclient.ServersFile), []byte(servers), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runUntilStopped starts a workflow file and waits until the run stops
// running; it returns the stored run (with its raw error and outputs).
func runUntilStopped(t *testing.T, svc *Service, def string, inputs map[string]any) store.Run {
	t.Helper()
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "w.yaml")
	if err := os.WriteFile(file, []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := svc.LoadWorkflow(file)
	if err != nil {
		t.Fatal(err)
	}
	id, err := svc.StartRun(ctx, l, inputs, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Wait(ctx, id, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	run, err := svc.Store.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func runOutputs(t *testing.T, run store.Run) map[string]any {
	t.Helper()
	if run.Status != store.StatusSucceeded {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	var out map[string]any
	if err := json.Unmarshal(run.Outputs, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// stepwise calls stepwise: a workflow validates a definition and runs one
// through the tools of a `stepwise serve` it starts over stdio.
func TestMCPActionCallsStepwiseOverStdio(t *testing.T) {
	bin := stepwiseBinary(t)
	ctx := context.Background()
	svc, err := Open(ctx, Options{Home: t.TempDir(), Durability: "normal", AllowInlineMCPCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	const def = `version: 1
name: meta
inputs:
  bin: {type: string}
  home: {type: string}
  inner: {type: string}
steps:
  - id: validate
    uses: mcp
    with:
      command: ${{ inputs.bin }}
      args: [--home, "${{ inputs.home }}", serve]
      tool: workflow_validate
      arguments: {content: "${{ inputs.inner }}"}
  - id: run
    uses: mcp
    with:
      command: ${{ inputs.bin }}
      args: [--home, "${{ inputs.home }}", serve]
      tool: run_start
      arguments: {definition: "${{ inputs.inner }}", inputs: {name: Ada}, wait_seconds: 20}
      timeout: 2m
outputs:
  valid: ${{ steps.validate.output.valid }}
  version: ${{ steps.validate.output.version }}
  status: ${{ steps.run.output.status }}
  result: ${{ steps.run.output.outputs }}
`
	// The inner workflow comes in as an input so that its templates are
	// text to the outer run, not templates.
	inner := "version: 1\nname: tiny\ninputs:\n  name: {type: string}\nsteps:\n  - id: hi\n    uses: transform\n    with: {value: 'Hi ${{ inputs.name }}'}\noutputs:\n  line: ${{ steps.hi.output }}\n"
	out := runOutputs(t, runUntilStopped(t, svc, def, map[string]any{"bin": bin, "home": t.TempDir(), "inner": inner}))
	if out["valid"] != true || out["status"] != "succeeded" || !reflect.DeepEqual(out["result"], map[string]any{"line": "Hi Ada"}) {
		t.Fatalf("outputs %v", out)
	}
	if v, _ := out["version"].(string); v == "" {
		t.Fatalf("no version in %v", out)
	}
}

// helperServers is a servers.yaml naming the test binary as server
// "helper", recording its processes in lives.
func helperServers(t *testing.T, lives string) string {
	t.Helper()
	command, env, err := mcpclienttest.Helper(lives)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"servers": map[string]any{"helper": map[string]any{"command": command, "env": env}}})
	return string(b) // JSON is YAML
}

// The steps of a run, parallel branches included, share one server
// process; the process exits once the run is over.
func TestMCPActionReusesItsConnectionAndClosesItAfterTheRun(t *testing.T) {
	ctx := context.Background()
	lives := filepath.Join(t.TempDir(), "lives")
	svc, err := Open(ctx, Options{Home: mcpHome(t, helperServers(t, lives)), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	const def = `version: 1
name: reuse
steps:
  - id: one
    uses: mcp
    with: {server: helper, tool: add, arguments: {a: 1, b: 2}}
  - id: two
    uses: mcp
    with: {server: helper, tool: add, arguments: {a: "${{ steps.one.output.sum }}", b: 10}}
  - id: both
    parallel:
      - id: left
        uses: mcp
        with: {server: helper, tool: echo, arguments: {text: left}}
      - id: right
        uses: mcp
        with: {server: helper, tool: echo, arguments: {text: right}}
outputs:
  sum: ${{ steps.two.output.sum }}
  left: ${{ steps.left.output.text }}
`
	out := runOutputs(t, runUntilStopped(t, svc, def, nil))
	if out["sum"] != 13.0 || out["left"] != "left\ndone" {
		t.Fatalf("outputs %v", out)
	}
	started, _, err := mcpclienttest.Lives(lives)
	if err != nil || len(started) != 1 {
		t.Fatalf("%d server processes for four steps of one run (%v)", len(started), err)
	}
	// The run's driver closes the connection after the commit that ended
	// the run: wait for the process to stop.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, stopped, _ := mcpclienttest.Lives(lives)
		if len(stopped) == 1 && stopped[0] == started[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server process %d did not stop after the run", started[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); processAlive(started[0]); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", started[0])
		}
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

// A tool result with isError fails the step with the tool's message, and
// retries do not repeat it: the tool said no.
func TestMCPActionToolErrorFailsTheStep(t *testing.T) {
	ctx := context.Background()
	svc, err := Open(ctx, Options{Home: mcpHome(t, helperServers(t, filepath.Join(t.TempDir(), "lives"))), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	run := runUntilStopped(t, svc, `version: 1
name: failing
steps:
  - id: write
    uses: mcp
    with: {server: helper, tool: fail, arguments: {message: disk full}}
    retry: {attempts: 3, backoff: 10ms}
`, nil)
	if run.Status != store.StatusFailed || !strings.Contains(string(run.Error), `mcp: tool \"fail\" of server \"helper\" failed: disk full`) {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	steps, err := svc.Store.Steps(ctx, run.ID)
	if err != nil || len(steps) != 1 || steps[0].Attempts != 1 {
		t.Fatalf("steps %+v %v: want one attempt", steps, err)
	}
}

// Inline commands are the operator's call: refused unless allowed, while
// the same program named in servers.yaml runs.
func TestMCPActionInlineCommandPolicy(t *testing.T) {
	ctx := context.Background()
	lives := filepath.Join(t.TempDir(), "lives")
	command, env, err := mcpclienttest.Helper(lives)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := Open(ctx, Options{Home: mcpHome(t, helperServers(t, lives)), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	const def = `version: 1
name: inline
inputs:
  command: {type: string}
  env: {type: object}
steps:
  - id: add
    uses: mcp
    with: {command: "${{ inputs.command }}", env: "${{ inputs.env }}", tool: add, arguments: {a: 1, b: 1}}
`
	envInput := map[string]any{}
	for k, v := range env {
		envInput[k] = v
	}
	run := runUntilStopped(t, svc, def, map[string]any{"command": command, "env": envInput})
	if run.Status != store.StatusFailed || !strings.Contains(string(run.Error), "does not allow inline commands (the server needs --allow-shell)") {
		t.Fatalf("run %s: %s", run.Status, run.Error)
	}
	if started, _, _ := mcpclienttest.Lives(lives); len(started) != 0 {
		t.Fatalf("a refused command started %d processes", len(started))
	}
	named := runUntilStopped(t, svc, "version: 1\nname: named\nsteps:\n  - id: add\n    uses: mcp\n    with: {server: helper, tool: add, arguments: {a: 1, b: 1}}\n", nil)
	if named.Status != store.StatusSucceeded {
		t.Fatalf("a server of servers.yaml: %s %s", named.Status, named.Error)
	}
}

// $NAME references in headers reach the server resolved, and the value
// appears nowhere stepwise writes: step outputs, run outputs, events, logs.
func TestMCPActionHeaderReferencesDoNotLeak(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	stats := &mcpclienttest.Stats{}
	srv := mcpclienttest.NewServer(stats, false)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	ctx := context.Background()
	var logs bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(syncWriter{&logs, &mu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := map[string]string{"TEST_MCP_TOKEN": token}
	svc, err := Open(ctx, Options{Home: mcpHome(t, "servers:\n  api:\n    url: "+ts.URL+"\n    headers: {Authorization: Bearer $TEST_MCP_TOKEN}\n"),
		Durability: "normal", Logger: logger, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	run := runUntilStopped(t, svc, `version: 1
name: headers
inputs:
  url: {type: string}
steps:
  - id: named
    uses: mcp
    with: {server: api, tool: header, arguments: {name: Authorization}}
  - id: inline
    uses: mcp
    with:
      url: ${{ inputs.url }}
      headers: {X-Key: $TEST_MCP_TOKEN}
      tool: header
      arguments: {name: X-Key}
  - id: fails
    uses: mcp
    with: {server: api, tool: fail, arguments: {message: "rejected Bearer tok-9f8e7d6c5b4a"}}
    continue_on_error: true
outputs:
  named: ${{ steps.named.output }}
  inline: ${{ steps.inline.output }}
`, map[string]any{"url": ts.URL})
	out := runOutputs(t, run)
	if !reflect.DeepEqual(out["named"], map[string]any{"value": "Bearer ***", "set": true}) ||
		!reflect.DeepEqual(out["inline"], map[string]any{"value": "***", "set": true}) {
		t.Fatalf("outputs %v", out)
	}
	var seen []string
	steps, _ := svc.Store.Steps(ctx, run.ID)
	for _, s := range steps {
		seen = append(seen, string(s.Output), s.Error)
	}
	events, _ := svc.Store.Events(ctx, run.ID, 0, 0)
	for _, e := range events {
		seen = append(seen, string(e.Data))
	}
	mu.Lock()
	seen = append(seen, string(run.Outputs), string(run.Error), logs.String())
	mu.Unlock()
	all := strings.Join(seen, "\n")
	if strings.Contains(all, token) {
		t.Fatalf("the token leaked:\n%s", all)
	}
	if !strings.Contains(all, "rejected Bearer ***") {
		t.Fatalf("the failing step's message is not there, masked:\n%s", all)
	}
}

type syncWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Under an environment policy a server the step defines itself reads only
// allowed variables in its headers (the workflow's writer chose both the
// URL and the names); a server of servers.yaml is the operator's and reads
// what it names.
func TestMCPActionInlineServerFollowsTheEnvPolicy(t *testing.T) {
	stats := &mcpclienttest.Stats{}
	srv := mcpclienttest.NewServer(stats, false)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	ctx := context.Background()
	env := map[string]string{"SERVER_TOKEN": "tok-0123456789", "OK_KEY": "key-0123456789"}
	svc, err := Open(ctx, Options{Home: mcpHome(t, "servers:\n  api:\n    url: "+ts.URL+"\n    headers: {Authorization: Bearer $SERVER_TOKEN}\n"),
		Durability: "normal", LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		EnvPolicy: secret.EnvPolicy{Restricted: true, Allow: []string{"OK_*"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	inline := func(ref string) store.Run {
		return runUntilStopped(t, svc, "version: 1\nname: inline\ninputs:\n  url: {type: string}\nsteps:\n  - id: call\n    uses: mcp\n"+
			"    with: {url: '${{ inputs.url }}', headers: {X-Key: "+ref+"}, tool: header, arguments: {name: X-Key}}\noutputs:\n  got: ${{ steps.call.output }}\n",
			map[string]any{"url": ts.URL})
	}
	refused := inline("$SERVER_TOKEN")
	if refused.Status != store.StatusFailed || !strings.Contains(string(refused.Error), "--allow-env") || strings.Contains(string(refused.Error), "tok-0123456789") {
		t.Fatalf("a refused variable in a step's own server: %s %s", refused.Status, refused.Error)
	}
	if allowed := inline("$OK_KEY"); allowed.Status != store.StatusSucceeded {
		t.Fatalf("an allowed variable: %s %s", allowed.Status, allowed.Error)
	}
	named := runUntilStopped(t, svc, "version: 1\nname: named\nsteps:\n  - id: call\n    uses: mcp\n    with: {server: api, tool: header, arguments: {name: Authorization}}\noutputs:\n  got: ${{ steps.call.output }}\n", nil)
	if named.Status != store.StatusSucceeded || !reflect.DeepEqual(runOutputs(t, named)["got"], map[string]any{"value": "Bearer ***", "set": true}) {
		t.Fatalf("servers.yaml's server: %s %s %s", named.Status, named.Error, named.Outputs)
	}
}

//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fetching is a workflow an agent sends that fetches url and returns the
// body.
func fetching(url string) string {
	return fmt.Sprintf(`version: 1
name: fetch
steps:
  - id: get
    uses: http
    with: {url: %q, parse: text}
outputs:
  body: ${{ steps.get.output.body }}
`, url)
}

// adminServer is a server on loopback holding a secret, counting its
// requests.
func adminServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("the admin secret"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// runOutcome is run_start's result with the run's error.
type runOutcome struct {
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs"`
	Error   *struct {
		Message string `json:"message"`
		Code    string `json:"code"`
		StepID  string `json:"step_id"`
	} `json:"error"`
}

func startRun(t *testing.T, cs *mcp.ClientSession, definition string) runOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"definition": definition}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var r runOutcome
	if err := json.Unmarshal(b, &r); err != nil || res.IsError {
		t.Fatalf("run_start: %s (%v)", b, err)
	}
	return r
}

// `stepwise serve` with default flags does not fetch from loopback for an
// agent's workflow (issue 21, SSRF): the step fails with
// NETWORK_NOT_ALLOWED and the server is never reached. The operator
// allows it with --allow-network or --allow-private-network; local CLI
// runs keep their freedom.
func TestServeNetworkPolicy(t *testing.T) {
	srv, hits := adminServer(t)
	wf := fetching(srv.URL + "/admin")

	r := startRun(t, serveStdio(t, "--home", t.TempDir(), "serve"), wf)
	if r.Status != "failed" || r.Error == nil || r.Error.Code != "NETWORK_NOT_ALLOWED" || r.Error.StepID != "get" ||
		!strings.Contains(r.Error.Message, "--allow-network 127.0.0.1") {
		t.Fatalf("default flags: %+v %+v", r, r.Error)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the refused step reached the server %d times", n)
	}

	for _, flags := range [][]string{{"--allow-network", "127.0.0.1"}, {"--allow-network", "127.0.0.0/8,10.0.0.0/8"}, {"--allow-private-network"}} {
		r := startRun(t, serveStdio(t, append([]string{"--home", t.TempDir(), "serve"}, flags...)...), wf)
		if r.Status != "succeeded" || r.Outputs["body"] != "the admin secret" {
			t.Fatalf("%v: %+v", flags, r)
		}
	}

	// The CLI runs the person's own workflows: no restriction.
	path := filepath.Join(t.TempDir(), "fetch.yaml")
	if err := os.WriteFile(path, []byte(wf), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sharedBinary(t), "--home", t.TempDir(), "run", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the admin secret") {
		t.Fatalf("stepwise run: %v\n%s", err, out)
	}
}

func TestServeRefusesABadAllowNetwork(t *testing.T) {
	for _, args := range [][]string{
		{"--allow-network", "localhost:8080"},
		{"--allow-network", "10.0.0.0/8", "--allow-private-network"},
	} {
		cmd := exec.Command(sharedBinary(t), append([]string{"--home", t.TempDir(), "serve"}, args...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "--allow-") {
			t.Fatalf("%v: exit %v, output %q", args, err, out)
		}
	}
}

//go:build unix

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pgFreshDatabase creates a database of its own on the test PostgreSQL
// server (STEPWISE_TEST_DATABASE_URL), dropped when the test ends, and
// returns its URL; it skips the test when the variable is not set. A
// database, not a schema: replicas share everything in it, LISTEN/NOTIFY
// channels included.
func pgFreshDatabase(t *testing.T) string {
	t.Helper()
	raw := os.Getenv("STEPWISE_TEST_DATABASE_URL")
	if raw == "" {
		t.Skip("STEPWISE_TEST_DATABASE_URL is not set: run with e.g. STEPWISE_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable (.ci/run sets it)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "stepwise_t_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, raw)
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP DATABASE `+name+` WITH (FORCE)`); err != nil {
			t.Error(err)
		}
	})
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// startReplica starts `serve --http` on home and the database db, and
// returns its MCP URL.
func startReplica(t *testing.T, bin, home, db string, args ...string) string {
	t.Helper()
	u, _ := startReplicaProc(t, bin, home, db, args...)
	return u
}

// startReplicaProc is startReplica that also returns the process.
func startReplicaProc(t *testing.T, bin, home, db string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	return serveProc(t, bin, append([]string{"--home", home, "--database", db, "serve", "--http", "127.0.0.1:0"}, args...)...)
}

const replicaWorkflow = `version: 1
name: hello
title: Say hello
inputs:
  who: {type: string}
steps:
  - id: ask
    ask: {prompt: "Greeting?", type: string}
  - id: say
    uses: log
    with: {message: "${{ steps.ask.answer }} ${{ inputs.who }}"}
outputs:
  said: ${{ steps.say.output.message }}
`

const vaultWorkflow = `version: 1
name: vault
steps:
  - id: password
    ask: {prompt: "Vault password?", type: string, secret: true}
  - id: label
    ask: {prompt: "Label?", type: string}
`

// TestReplicasShareTheLibrary: two `serve --http` on one PostgreSQL
// database, each with a home of its own. A workflow saved through A is at
// once listed, validated and run through B; a session on B is told
// (tools/list_changed for the wf_ tool, resources/updated for the
// library) without polling — the poll is a minute on a shared library,
// longer than the wait here; and a question asked through A is answered
// through B, which holds the same key; a one-time secret page made
// through A is opened and posted through B, and is gone from both after.
func TestReplicasShareTheLibrary(t *testing.T) {
	db := pgFreshDatabase(t)
	bin := sharedBinary(t)
	homeA, homeB := t.TempDir(), t.TempDir()
	urlA := startReplica(t, bin, homeA, db, "--expose-workflows")
	urlB := startReplica(t, bin, homeB, db, "--expose-workflows")
	ctx := context.Background()

	listChanged := make(chan struct{}, 16)
	updated := make(chan string, 16)
	csB, err := mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { listChanged <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: urlB}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer csB.Close()
	if err := csB.Subscribe(ctx, &mcp.SubscribeParams{URI: "stepwise://workflows"}); err != nil {
		t.Fatal(err)
	}
	tools, err := csB.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "wf_hello" }) {
		t.Fatal("wf_hello before it was saved")
	}
	if r, isErr := callTool(t, csB, "workflow_list", map[string]any{}, nil); isErr || len(r.Workflows) != 0 {
		t.Fatalf("B's library before the save: %+v", r)
	}
	// B's session is set up: whatever the replica sends now is about the save.
	time.Sleep(200 * time.Millisecond)
	for len(listChanged) > 0 {
		<-listChanged
	}

	csA, err := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: urlA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer csA.Close()
	saved := time.Now()
	if r, isErr := callTool(t, csA, "workflow_save", map[string]any{"content": replicaWorkflow}, nil); isErr || !r.Valid {
		t.Fatalf("save through A: %+v", r)
	}

	// B's session is told, well within the minute a poll would take.
	select {
	case <-listChanged:
		t.Logf("tools/list_changed on B %v after the save through A began", time.Since(saved).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("B's session got no tools/list_changed after the save through A")
	}
	deadline := time.After(20 * time.Second)
	for got := ""; got != "stepwise://workflows"; {
		select {
		case got = <-updated:
		case <-deadline:
			t.Fatal("B's session got no resources/updated for stepwise://workflows")
		}
	}
	tools, err = csB.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "wf_hello" }) {
		t.Fatal("B offers no wf_hello after the save through A")
	}

	// Listed, validated and run through B at once.
	if r, isErr := callTool(t, csB, "workflow_list", map[string]any{}, nil); isErr || len(r.Workflows) != 1 || r.Workflows[0].Name != "hello" {
		t.Fatalf("B's library: %+v", r)
	}
	if r, isErr := callTool(t, csB, "workflow_validate", map[string]any{"name": "hello"}, nil); isErr || !r.Valid {
		t.Fatalf("validate through B: %+v", r)
	}
	run, isErr := callTool(t, csB, "run_start", map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Ada"}}, nil)
	if isErr || run.Status != "waiting" || run.Pause == nil {
		t.Fatalf("run through B: %+v", run)
	}
	if r, isErr := callTool(t, csB, "run_continue", map[string]any{"token": run.Pause.Token, "value": "hi"}, nil); isErr || r.Status != "succeeded" || r.Outputs["said"] != "hi Ada" {
		t.Fatalf("continue through B: %+v", r)
	}

	// A question asked through A is answered through B: one key signs
	// the tokens of both.
	run, isErr = callTool(t, csA, "run_start", map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Grace"}}, nil)
	if isErr || run.Status != "waiting" || run.Pause == nil {
		t.Fatalf("run through A: %+v", run)
	}
	if r, isErr := callTool(t, csB, "run_continue", map[string]any{"token": run.Pause.Token, "value": "hello"}, nil); isErr || r.Status != "succeeded" || r.Outputs["said"] != "hello Grace" {
		t.Fatalf("A's question answered through B: %+v", r)
	}

	// A secret page made through A opens through B, once.
	if r, isErr := callTool(t, csA, "workflow_save", map[string]any{"content": vaultWorkflow}, nil); isErr || !r.Valid {
		t.Fatalf("save vault through A: %+v", r)
	}
	res, err := csA.CallTool(ctx, &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"workflow": "vault"}})
	if err != nil || res.IsError {
		t.Fatalf("run vault through A: %v %+v", err, res)
	}
	var secretRun struct {
		RunID string `json:"run_id"`
		Pause struct {
			SecretURL string `json:"secret_url"`
		} `json:"pause"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &secretRun)
	page, err := url.Parse(secretRun.Pause.SecretURL)
	if err != nil || !strings.HasPrefix(page.Path, "/secrets/") {
		t.Fatalf("secret_url %q: %v", secretRun.Pause.SecretURL, err)
	}
	onB, err := url.Parse(urlB)
	if err != nil {
		t.Fatal(err)
	}
	onB.Path = page.Path
	if resp, err := http.Get(onB.String()); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("A's secret page through B: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	post := func() int {
		resp, err := http.PostForm(onB.String(), url.Values{"value": {"s3cret-value"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(); code != http.StatusOK {
		t.Fatalf("post A's secret page through B: %d", code)
	}
	if r, _ := callTool(t, csA, "run_get", map[string]any{"run_id": secretRun.RunID}, nil); r.Pause == nil || r.Pause.Kind != "question" || r.Status != "waiting" {
		t.Fatalf("after the secret: %+v", r)
	} else if strings.Contains(fmt.Sprint(r), "s3cret-value") {
		t.Fatal("the secret shows in the run")
	}
	if code := post(); code != http.StatusNotFound {
		t.Fatalf("the page posted again: %d, want 404", code)
	}
	if resp, err := http.Get(secretRun.Pause.SecretURL); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the used page through A: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	// Neither home holds the library or a key: the database does.
	for _, h := range []string{homeA, homeB} {
		for _, f := range []string{"key", filepath.Join("workflows", "hello.yaml")} {
			if _, err := os.Stat(filepath.Join(h, f)); err == nil {
				t.Errorf("%s in the home %s", f, h)
			}
		}
	}
}

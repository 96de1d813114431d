//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// taskClient speaks stateless 2026-07-28 JSON-RPC over HTTP, every request
// declaring the Tasks extension (or not), as a client of the extension's
// spec does: raw requests, the routing headers set.
type taskClient struct {
	t *testing.T
	n int
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

const tasksExt = "io.modelcontextprotocol/tasks"

func (c *taskClient) post(url, method string, params map[string]any, declare bool) (map[string]any, *rpcError) {
	c.t.Helper()
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if declare {
		caps["extensions"] = map[string]any{tasksExt: map[string]any{}}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": caps,
	}
	c.n++
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.n, "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	} else if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id) // the extension's routing header
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var msgs [][]byte
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				msgs = append(msgs, []byte(rest))
			}
		}
	} else {
		b, _ := io.ReadAll(res.Body)
		msgs = append(msgs, b)
	}
	for _, m := range msgs {
		var resp struct {
			ID     any            `json:"id"`
			Result map[string]any `json:"result"`
			Error  *rpcError      `json:"error"`
		}
		if json.Unmarshal(m, &resp) != nil || resp.ID != float64(c.n) {
			continue
		}
		return resp.Result, resp.Error
	}
	c.t.Fatalf("%s: no response (HTTP %d)", method, res.StatusCode)
	return nil, nil
}

func (c *taskClient) ok(url, method string, params map[string]any) map[string]any {
	c.t.Helper()
	r, e := c.post(url, method, params, true)
	if e != nil {
		c.t.Fatalf("%s: %d %s", method, e.Code, e.Message)
	}
	return r
}

// until polls tasks/get at url until the task has status and, if key is
// set, offers that input request key.
func (c *taskClient) until(url, id, status, key string) map[string]any {
	c.t.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard, not a speed check
	for time.Now().Before(deadline) {
		got := c.ok(url, "tasks/get", map[string]any{"taskId": id})
		if got["status"] == status {
			if reqs, _ := got["inputRequests"].(map[string]any); key == "" || reqs[key] != nil {
				return got
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("task never reached %s %s", status, key)
	return nil
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// TestTasksAcrossReplicas: two `serve --http` on one PostgreSQL database.
// A task started through A is read, refused, answered and finished
// through B and A alike; a task is canceled through the other replica; a
// client without the extension gets today's result and -32021.
func TestTasksAcrossReplicas(t *testing.T) {
	db := pgFreshDatabase(t)
	bin := sharedBinary(t)
	urlA := startReplica(t, bin, t.TempDir(), db)
	urlB := startReplica(t, bin, t.TempDir(), db)
	c := &taskClient{t: t}
	if r := c.ok(urlA, "tools/call", map[string]any{"name": "workflow_save", "arguments": map[string]any{"content": replicaWorkflow}}); r["isError"] == true {
		t.Fatalf("save: %v", r)
	}

	created := c.ok(urlA, "tools/call", map[string]any{"name": "run_start", "arguments": map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Ada"}}})
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" {
		t.Fatalf("run_start through A: %v", created)
	}
	// Durably created: B resolves it at once.
	if got := c.ok(urlB, "tasks/get", map[string]any{"taskId": id}); got["taskId"] != id {
		t.Fatalf("tasks/get through B right after the start through A: %v", got)
	}
	c.until(urlB, id, "input_required", "ask.1")
	c.ok(urlB, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"ask.1": map[string]any{"action": "decline"}}})
	// The refusal is the run's: A offers the new key.
	got := c.ok(urlA, "tasks/get", map[string]any{"taskId": id})
	if reqs, _ := got["inputRequests"].(map[string]any); reqs["ask.1.r1"] == nil || reqs["ask.1"] != nil {
		t.Fatalf("A after a decline through B: %v", got)
	}
	c.ok(urlA, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"ask.1.r1": accept(map[string]any{"value": "hi"})}})
	done := c.until(urlB, id, "completed", "")
	sc, _ := done["result"].(map[string]any)["structuredContent"].(map[string]any)
	if sc["outputs"].(map[string]any)["said"] != "hi Ada" {
		t.Fatalf("the finished task through B: %v", done)
	}

	other := c.ok(urlB, "tools/call", map[string]any{"name": "run_start", "arguments": map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Grace"}}})["taskId"].(string)
	c.until(urlA, other, "input_required", "")
	c.ok(urlA, "tasks/cancel", map[string]any{"taskId": other})
	c.until(urlB, other, "cancelled", "")

	plain, e := c.post(urlB, "tools/call", map[string]any{"name": "run_start", "arguments": map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Bob"}, "wait_seconds": 0}}, false)
	if e != nil || plain["resultType"] == "task" || plain["structuredContent"] == nil {
		t.Fatalf("run_start without the extension: %v %v", plain, e)
	}
	if _, e := c.post(urlA, "tasks/get", map[string]any{"taskId": id}, false); e == nil || e.Code != -32021 {
		t.Fatalf("tasks/get without the extension: %v", e)
	}
}

// TestTasksSurviveRestart: a task started on `serve --http` over SQLite
// is answered after that process was killed and another started on the
// same home.
func TestTasksSurviveRestart(t *testing.T) {
	bin := sharedBinary(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "workflows", "hello.yaml"), []byte(replicaWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := func() (string, *exec.Cmd) {
		return serveProc(t, bin, "--home", home, "serve", "--http", "127.0.0.1:0")
	}

	c := &taskClient{t: t}
	url1, first := serve()
	id, _ := c.ok(url1, "tools/call", map[string]any{"name": "run_start", "arguments": map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Ada"}}})["taskId"].(string)
	if id == "" {
		t.Fatal("no task")
	}
	c.until(url1, id, "input_required", "ask.1")
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()

	url2, _ := serve()
	c.until(url2, id, "input_required", "ask.1")
	c.ok(url2, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"ask.1": accept(map[string]any{"value": "hello"})}})
	done := c.until(url2, id, "completed", "")
	if done["result"].(map[string]any)["structuredContent"].(map[string]any)["outputs"].(map[string]any)["said"] != "hello Ada" {
		t.Fatalf("after the restart: %v", done)
	}
}

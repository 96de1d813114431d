package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestServeRESTAPI: the built binary's `serve --http` serves the REST API
// behind its bearer token: greet is started, pauses on its question, then
// on its agent step, and succeeds with the answers; without the token the
// API answers 401; the OpenAPI document is served.
func TestServeRESTAPI(t *testing.T) {
	t.Parallel()
	const token = "e2e-token-0123456789"
	mcpURL, _ := startHTTP(t, sharedBinary(t), "--auth-token", token)
	base := strings.TrimSuffix(mcpURL, "/mcp") + "/api"
	call := func(method, path string, body any, auth bool) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			data, _ := json.Marshal(body)
			rd = bytes.NewReader(data)
		}
		req, err := http.NewRequest(method, base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %v", method, path, res.StatusCode, err)
		}
		return res.StatusCode, out
	}
	if st, p := call(http.MethodPost, "/runs", map[string]any{"workflow": "greet"}, false); st != http.StatusUnauthorized || p["code"] != "UNAUTHORIZED" {
		t.Fatalf("without the token: %d %v", st, p)
	}
	st, run := call(http.MethodPost, "/runs", map[string]any{"workflow": "greet", "inputs": map[string]any{"greeting": "Hi"}}, true)
	if st != http.StatusCreated || run["status"] != "waiting" {
		t.Fatalf("start: %d %v", st, run)
	}
	id := run["run_id"].(string)
	pause := run["pause"].(map[string]any)
	if pause["step_id"] != "name" || pause["kind"] != "question" {
		t.Fatalf("first pause: %v", pause)
	}
	st, run = call(http.MethodPost, "/runs/"+id+"/continue", map[string]any{"token": pause["token"], "value": "Ada"}, true)
	if st != http.StatusOK || run["status"] != "waiting" {
		t.Fatalf("answer: %d %v", st, run)
	}
	pause = run["pause"].(map[string]any)
	if pause["step_id"] != "write" || pause["kind"] != "agent" {
		t.Fatalf("second pause: %v", pause)
	}
	st, run = call(http.MethodPost, "/runs/"+id+"/continue", map[string]any{"token": pause["token"], "value": map[string]any{"line": "Hi, Ada!"}}, true)
	outputs, _ := run["outputs"].(map[string]any)
	if st != http.StatusOK || run["status"] != "succeeded" || outputs["line"] != "Hi, Ada!" || outputs["name"] != "Ada" {
		t.Fatalf("agent's result: %d %v", st, run)
	}
	if st, doc := call(http.MethodGet, "/openapi.json", nil, true); st != http.StatusOK || doc["openapi"] != "3.1.0" || !strings.HasPrefix(doc["servers"].([]any)[0].(map[string]any)["url"].(string), "http://127.0.0.1:") {
		t.Fatalf("openapi.json: %d %v", st, doc["servers"])
	}
}

package mcpserver

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postJSON posts body to url and decodes the JSON answer.
func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: not JSON: %s", url, data)
	}
	return resp.StatusCode, out
}

func errorCodeOf(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// A pause offers a one-time callback URL; POSTing the value answers it
// as run_continue would: a question, then an agent step, then the URL
// used again is refused. A refused value changes nothing. A secret
// question offers none.
func TestPauseCallback(t *testing.T) {
	e, base, _ := httpEnv(t, HTTPOptions{})
	cs := e.connect(nil)
	var r RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "greet", "wait_seconds": 10}, &r) || r.Pause == nil {
		t.Fatalf("run_start: %+v", r)
	}
	first := r.Pause.CallbackURL
	if !strings.HasPrefix(first, base+callbackPath) {
		t.Fatalf("callback_url %q", first)
	}
	if resp, err := http.Get(first); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %v %v", resp, err)
	}
	if status, out := postJSON(t, first, `not json`); status != http.StatusBadRequest || errorCodeOf(out) != "ARGUMENTS_INVALID" {
		t.Fatalf("bad JSON: %d %v", status, out)
	}
	status, out := postJSON(t, first, `"lowercase"`)
	if e, _ := out["error"].(map[string]any); status != http.StatusUnprocessableEntity || errorCodeOf(out) != "ANSWER_INVALID" || e["violations"] == nil {
		t.Fatalf("invalid answer: %d %v", status, out)
	}
	var still RunResult
	if call(t, cs, "run_get", map[string]any{"run_id": r.RunID}, &still) || still.Status != "waiting" || still.Pause == nil || still.Pause.StepID != "name" {
		t.Fatalf("after a refused value: %+v", still)
	}
	if status, out = postJSON(t, first, `"Ada"`); status != http.StatusOK || out["run_id"] != r.RunID || out["step_id"] != "name" {
		t.Fatalf("answer: %d %v", status, out)
	}
	if status, out = postJSON(t, first, `"Bob"`); status != http.StatusConflict || errorCodeOf(out) != "TOKEN_ALREADY_USED" {
		t.Fatalf("the URL again: %d %v", status, out)
	}
	var agent RunResult
	if call(t, cs, "run_get", map[string]any{"run_id": r.RunID, "wait_seconds": 10}, &agent) || agent.Pause == nil || agent.Pause.Kind != "agent" || agent.Pause.CallbackURL == "" {
		t.Fatalf("agent step: %+v", agent)
	}
	if status, out = postJSON(t, agent.Pause.CallbackURL, `{"line": "Hi Ada"}`); status != http.StatusOK {
		t.Fatalf("agent output: %d %v", status, out)
	}
	var done RunResult
	if call(t, cs, "run_get", map[string]any{"run_id": r.RunID, "wait_seconds": 10}, &done) || done.Status != "succeeded" || done.Outputs["line"] != "Hi Ada" {
		t.Fatalf("end: %+v", done)
	}
	if status, _ := postJSON(t, base+callbackPath+"forged.token", `"x"`); status != http.StatusNotFound {
		t.Fatalf("a forged token: %d", status)
	}
	var v RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "vault", "wait_seconds": 10}, &v) || v.Pause == nil || !v.Pause.Secret {
		t.Fatalf("vault: %+v", v)
	}
	if v.Pause.CallbackURL != "" {
		t.Fatalf("a secret question offers a callback: %s", v.Pause.CallbackURL)
	}
}

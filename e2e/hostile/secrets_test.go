//go:build linux

package hostile

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Item 8: secrets must not leak by derivation. A value computed from a
// secret (a secret input, a secret answer) is sealed where it is stored
// and shown as *** (only declassify(x) ends it); a prompt that shows a
// secret shows ***; inputs named like credentials but not secret are
// warned of.

// The secrets the cases give: the token as a secret input, the password
// as a secret answer, through serve's environment ($PW with --allow-env).
const (
	secretToken = "tok-abcdefghijklmnopqrstuvwxyz"
	secretPW    = "Hunter2-correct-horse"
)

// derivedFile is the workflow that computes values from a secret input and
// a secret answer (the three leaks of issue 21) and declassifies one.
const derivedFile = "../../testdata/secrets/derived.yaml"

// derivedFlow is derivedFile's text.
func derivedFlow(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(derivedFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// leaks are the texts no stored byte and no log line may hold: the
// secrets and what derivedFlow computes from them (the 2-byte slice aside:
// two bytes are found anywhere).
func leaks() map[string]string {
	return map[string]string{
		"the token":               secretToken,
		"the token in upper case": strings.ToUpper(secretToken),
		"the token in base64":     base64.StdEncoding.EncodeToString([]byte(secretToken)),
		"the token's 10 bytes":    secretToken[:10],
		"the password":            secretPW,
		"the password in base64":  base64.StdEncoding.EncodeToString([]byte(secretPW)),
	}
}

// secretCases are item 8's cases.
func secretCases() []Case {
	return []Case{
		{
			Name: "secrets: derived from a secret input and answer", Transport: Stdio, Want: "*** (4 derived)",
			Flags: []string{"--allow-env", "PW"}, Env: []string{"PW=" + secretPW},
			Serves: derivedMasked,
		},
		{
			Name: "secrets: a prompt showing a secret input", Transport: Stdio, Want: "Hint for ***?",
			Run: promptMasked,
		},
		{
			Name: "secrets: an input api_key not secret, validate", Transport: Stdio, Want: "warning secret-name",
			Run: credentialWarned,
		},
		{
			Name: "secrets: declassify(a, b), run_start", Transport: Stdio, Want: "WORKFLOW_INVALID",
			Run: declassifyRefused,
		},
	}
}

// derivedMasked runs derivedFlow (the password answered as $PW) and
// wants every derived output and step output shown as ***, the
// declassified one in clear; then stops the server and wants none of the
// leaks in the home's database files (stepwise.db and its WAL) nor in the
// server's log; then a second server on the home shows the run the same.
func derivedMasked(ctx context.Context, t *testing.T, ss *Servers) (string, error) {
	s, err := ss.Start(ctx, true)
	if err != nil {
		return "", err
	}
	r, err := s.conn.Tool(ctx, "run_start", map[string]any{"definition": derivedFlow(t), "inputs": map[string]any{"token": secretToken}, "wait_seconds": 20})
	if err != nil || r.IsError {
		return r.ErrorCode(), fmt.Errorf("run_start: %v %v", err, r.Structured)
	}
	pause, _ := r.Structured["pause"].(map[string]any)
	tok, _ := pause["token"].(string)
	id, _ := r.Structured["run_id"].(string)
	if r.Structured["status"] != "waiting" || tok == "" {
		return "", fmt.Errorf("run_start: status %v, pause %v", r.Structured["status"], pause)
	}
	r, err = s.conn.Tool(ctx, "run_continue", map[string]any{"token": tok, "value": "$PW", "wait_seconds": 20})
	if err != nil || r.IsError {
		return r.ErrorCode(), fmt.Errorf("run_continue: %v %v", err, r.Structured)
	}
	if err := derivedView(ctx, s.conn, id); err != nil {
		return "", err
	}
	if st := s.stopped(); !st.Success() {
		return "", fmt.Errorf("server ended with %v", st)
	}
	if err := noLeaks(ss.Home(), s.log()); err != nil {
		return "", err
	}
	// Read back by a server that did not compute the values.
	if s, err = ss.Start(ctx, true); err != nil {
		return "", err
	}
	if err := derivedView(ctx, s.conn, id); err != nil {
		return "", fmt.Errorf("after a restart: %w", err)
	}
	return "*** (4 derived)", nil
}

// derivedView wants run id succeeded, its outputs and steps' outputs
// derived from a secret shown as ***, the answer too, and the
// declassified length in clear.
func derivedView(ctx context.Context, c *Conn, id string) error {
	r, err := c.Tool(ctx, "run_get", map[string]any{"run_id": id, "wait_seconds": 20})
	if err != nil || r.IsError {
		return fmt.Errorf("run_get: %v %v", err, r.Structured)
	}
	if r.Structured["status"] != "succeeded" {
		return fmt.Errorf("run_get: status %v: %v", r.Structured["status"], r.Structured["error"])
	}
	outs, _ := r.Structured["outputs"].(map[string]any)
	for _, name := range []string{"up", "b64", "cut", "short"} {
		if outs[name] != "***" {
			return fmt.Errorf("output %s shown as %v", name, outs[name])
		}
	}
	if outs["size"] != float64(len(secretToken)) {
		return fmt.Errorf("declassified output size shown as %v", outs["size"])
	}
	steps, _ := r.Structured["steps"].(map[string]any)
	list, _ := steps["recent"].([]any)
	if len(list) != 6 {
		return fmt.Errorf("run_get: %d steps shown, want 6: %v", len(list), steps)
	}
	for _, v := range list {
		st, _ := v.(map[string]any)
		switch st["id"] {
		case "pw":
			if st["answer"] != "***" {
				return fmt.Errorf("answer shown as %v", st["answer"])
			}
		case "size":
			if st["output"] != float64(len(secretToken)) {
				return fmt.Errorf("step size output shown as %v", st["output"])
			}
		default:
			if st["output"] != "***" {
				return fmt.Errorf("step %v output shown as %v", st["id"], st["output"])
			}
		}
	}
	return nil
}

// noLeaks wants none of the leaks in the bytes of home's database files
// (stepwise.db*) nor in log.
func noLeaks(home, log string) error {
	files, err := filepath.Glob(filepath.Join(home, "stepwise.db*"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no database files in the home: %v", err)
	}
	var found []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for what, text := range leaks() {
			if bytes.Contains(data, []byte(text)) {
				found = append(found, fmt.Sprintf("%s in %s", what, filepath.Base(f)))
			}
		}
	}
	for what, text := range leaks() {
		if strings.Contains(log, text) {
			found = append(found, what+" in the server's log")
		}
	}
	if len(found) > 0 {
		return errors.New("leaked: " + strings.Join(found, ", "))
	}
	return nil
}

// promptFlow pauses at a question whose prompt shows a secret input.
const promptFlow = `version: 1
name: prompt
inputs:
  token: {type: string, secret: true}
steps:
  - id: hint
    ask: {prompt: "Hint for ${{ inputs.token }}?", type: string}
`

// promptMasked starts promptFlow and wants the pause's prompt shown with
// the secret as ***: the prompt is the outcome.
func promptMasked(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
	r, err := c.Tool(ctx, "run_start", map[string]any{"definition": promptFlow, "inputs": map[string]any{"token": secretToken}, "wait_seconds": 20})
	if err != nil || r.IsError {
		return r.ErrorCode(), fmt.Errorf("run_start: %v %v", err, r.Structured)
	}
	pause, _ := r.Structured["pause"].(map[string]any)
	prompt, _ := pause["prompt"].(string)
	if prompt == "" {
		return "", fmt.Errorf("run_start: no pause prompt: %v", r.Structured)
	}
	return prompt, nil
}

// credentialWarned validates a workflow with an input api_key that is
// not secret and wants it valid with one warning, whose rule is the
// outcome.
func credentialWarned(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
	content := "version: 1\nname: keyed\ninputs:\n  api_key: {type: string}\nsteps:\n  - {id: a, uses: noop}\n"
	r, err := c.Tool(ctx, "workflow_validate", map[string]any{"content": content})
	if err != nil || r.IsError {
		return r.ErrorCode(), fmt.Errorf("workflow_validate: %v %v", err, r.Structured)
	}
	ws, _ := r.Structured["warnings"].([]any)
	if r.Structured["valid"] != true || len(ws) != 1 {
		return "", fmt.Errorf("valid %v, warnings %v", r.Structured["valid"], ws)
	}
	w, _ := ws[0].(map[string]any)
	return fmt.Sprintf("warning %v", w["rule"]), nil
}

// declassifyRefused starts a run whose expression calls declassify with
// two arguments and wants WORKFLOW_INVALID, an expression violation
// saying so.
func declassifyRefused(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
	r, err := c.Tool(ctx, "run_start", map[string]any{"definition": oneStep(`${{ declassify("a", "b") }}`)})
	if err != nil {
		return "", err
	}
	if !r.IsError {
		return "", fmt.Errorf("run_start answered without an error: %.300v", r.Structured)
	}
	if text := fmt.Sprint(r.Structured); !strings.Contains(text, "too many arguments to call declassify") {
		return r.ErrorCode(), fmt.Errorf("run_start: %.300s does not say declassify takes one argument", text)
	}
	return r.ErrorCode(), nil
}

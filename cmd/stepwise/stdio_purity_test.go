//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// chatty logs a lot, at every level, in text that looks like JSON and spans
// lines, from a foreach running in parallel, a group and a failing run.
const chatty = `
version: 1
name: chatty
inputs:
  items: {type: array, default: [a, b, c, d, e, f, g, h, i, j, k, l]}
  fail: {type: boolean, default: false}
steps:
  - id: hello
    uses: log
    with: {message: "{\"jsonrpc\": \"2.0\", \"id\": 99}\nsecond line\n", level: debug}
  - id: each
    foreach: ${{ inputs.items }}
    concurrency: 4
    steps:
      - id: shout
        uses: log
        with: {message: "item ${{ item }} at ${{ index }}\n\tindented", level: warn}
      - id: whisper
        uses: log
        with: {message: "debug ${{ item }}", level: debug}
      - id: pause
        uses: noop
        with: {delay: 5ms}
  - id: both
    parallel:
      - id: left
        uses: log
        with: {message: left, level: error}
      - id: right
        uses: transform
        with: {value: {n: "${{ len(inputs.items) }}"}}
  - id: boom
    if: ${{ inputs.fail }}
    uses: log
    with: {message: "boom", level: nope}
outputs:
  n: ${{ steps.right.output.n }}
`

// rawSession drives the server with hand-written JSON-RPC so that every
// byte it writes to stdout is seen.
type rawSession struct {
	t     *testing.T
	in    io.Writer
	lines chan []byte
	id    int
}

func (s *rawSession) send(method string, params any) {
	s.t.Helper()
	s.id++
	msg := map[string]any{"jsonrpc": "2.0", "id": s.id, "method": method, "params": params}
	data, _ := json.Marshal(msg)
	if _, err := s.in.Write(append(data, '\n')); err != nil {
		s.t.Fatal(err)
	}
}

func (s *rawSession) notify(method string) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	_, _ = s.in.Write(append(data, '\n'))
}

// await reads messages until the response to the last request; it checks
// every line on the way.
func (s *rawSession) await() map[string]any {
	s.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("stdout closed while waiting for response %d", s.id)
			}
			msg := mustBeJSONRPC(s.t, line)
			if id, ok := msg["id"].(float64); ok && int(id) == s.id && msg["method"] == nil {
				return msg
			}
		case <-deadline:
			s.t.Fatalf("no response to request %d", s.id)
		}
	}
}

// mustBeJSONRPC fails unless line is one JSON-RPC 2.0 message.
func mustBeJSONRPC(t *testing.T, line []byte) map[string]any {
	t.Helper()
	var msg map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&msg); err != nil {
		t.Fatalf("stdout line is not JSON: %q (%v)", line, err)
	}
	if dec.More() {
		t.Fatalf("stdout line holds more than one JSON value: %q", line)
	}
	if msg["jsonrpc"] != "2.0" {
		t.Fatalf("stdout line is not JSON-RPC 2.0: %q", line)
	}
	_, hasID := msg["id"]
	_, hasMethod := msg["method"]
	_, hasResult := msg["result"]
	_, hasError := msg["error"]
	if !hasMethod && !(hasID && (hasResult != hasError)) {
		t.Fatalf("stdout line is neither a request, a notification nor a response: %q", line)
	}
	return msg
}

func TestServeStdoutIsOnlyJSONRPC(t *testing.T) {
	bin := sharedBinary(t)
	cmd := exec.Command(bin, "--home", libraryHome(t), "--durability", "normal", "serve", "--log-level", "debug")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &rawSession{t: t, in: stdin, lines: make(chan []byte, 1024)}
	raw := make(chan []byte, 1)
	go func() {
		// Keep every byte: the lines for the session, the whole for the
		// final check (a partial line at EOF would be junk too).
		w, split := lineSplitter(s.lines)
		all, _ := io.ReadAll(io.TeeReader(stdout, w))
		_ = w.Close()
		<-split
		close(s.lines)
		raw <- all
	}()

	s.send("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw", "version": "1"}})
	if r := s.await(); r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	s.notify("notifications/initialized")
	s.send("logging/setLevel", map[string]any{"level": "debug"})
	s.await()

	logs := 0
	for i, args := range []map[string]any{
		{"definition": chatty, "wait_seconds": 30},
		{"definition": chatty, "inputs": map[string]any{"fail": true}, "wait_seconds": 30},
		{"workflow": "greet", "wait_seconds": 5},
	} {
		s.send("tools/call", map[string]any{"name": "run_start", "arguments": args, "_meta": map[string]any{"progressToken": fmt.Sprint("p", i)}})
		r := s.await()
		res, _ := r["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		want := []string{"succeeded", "failed", "waiting"}[i]
		if sc["status"] != want {
			t.Fatalf("run %d: status %v, want %s: %v", i, sc["status"], want, r)
		}
	}
	s.send("tools/call", map[string]any{"name": "run_list", "arguments": map[string]any{}})
	s.await()
	_ = stdin.Close()
	if err := waitExit(cmd, 15*time.Second); err != nil {
		t.Fatalf("serve did not exit cleanly after stdin closed: %v\n%s", err, stderr.String())
	}

	all := <-raw
	if len(all) == 0 || all[len(all)-1] != '\n' {
		t.Fatalf("stdout does not end with a complete line: %q", tail(all))
	}
	for _, line := range bytes.Split(bytes.TrimSuffix(all, []byte("\n")), []byte("\n")) {
		msg := mustBeJSONRPC(t, line)
		if msg["method"] == "notifications/message" {
			logs++
		}
	}
	// The chatty steps' log lines reached the client as MCP log messages —
	// so they were produced, and none of them leaked onto stdout as text.
	t.Logf("%d lines of JSON-RPC, %d log messages", bytes.Count(all, []byte("\n")), logs)
	if logs < 12 {
		t.Fatalf("only %d notifications/message for runs that log dozens of lines", logs)
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

// lineSplitter sends each complete line written to it on ch; done closes
// once the writer is closed and every line was sent.
func lineSplitter(ch chan<- []byte) (w io.WriteCloser, done <-chan struct{}) {
	pr, pw := io.Pipe()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			ch <- append([]byte(nil), sc.Bytes()...)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	return pw, finished
}

func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return fmt.Errorf("still running after %s", d)
	}
}

func tail(b []byte) []byte {
	if len(b) > 200 {
		return b[len(b)-200:]
	}
	return b
}

//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileSession speaks raw lines to a `serve` over stdio.
type hostileSession struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan []byte
}

func startHostile(t *testing.T, args ...string) (*hostileSession, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(sharedBinary(t), append([]string{"--home", libraryHome(t), "serve"}, args...)...)
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
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &hostileSession{t: t, in: stdin, lines: make(chan []byte, 64)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			s.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(s.lines)
	}()
	return s, cmd, &stderr
}

// send writes a line.
func (s *hostileSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("write: %v", err)
	}
}

// next is the next message the server writes that is not a notification.
func (s *hostileSession) next() map[string]any {
	s.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatal("the server closed its output")
			}
			msg := mustBeJSONRPC(s.t, line)
			if _, isNote := msg["method"]; !isNote {
				return msg
			}
		case <-deadline:
			s.t.Fatal("no answer in 60s")
		}
	}
}

// expectError fails unless the next answer is a JSON-RPC error with this
// code and id (nil: null).
func (s *hostileSession) expectError(what string, code float64, id any) {
	s.t.Helper()
	msg := s.next()
	e, _ := msg["error"].(map[string]any)
	if e == nil || e["code"] != code || msg["id"] != id {
		s.t.Fatalf("%s: want error %v with id %v, got %v", what, code, id, msg)
	}
	if _, has := msg["id"]; !has {
		s.t.Fatalf("%s: an error answer without an id member: %v", what, msg)
	}
}

// ping must be answered.
func (s *hostileSession) ping(what string, id int) {
	s.t.Helper()
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	if msg := s.next(); msg["id"] != float64(id) || msg["result"] == nil {
		s.t.Fatalf("ping after %s: %v", what, msg)
	}
}

// peakRSS is the process's VmHWM in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// A stdio server answers every malformed, invalid or oversized message
// with JSON-RPC's error and goes on serving; a 100 MB line is read without
// being held (issue 21, item 4).
func TestServeStdioSurvivesHostileInput(t *testing.T) {
	s, cmd, stderr := startHostile(t)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if msg := s.next(); msg["result"] == nil {
		t.Fatalf("initialize: %v", msg)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.ping("initialize", 2)
	t.Logf("peak RSS %d MB after initialize", peakRSS(t, cmd.Process.Pid)>>20)

	const parse, invalid = -32700.0, -32600.0
	for i, tc := range []struct {
		name, line string
		code       float64
		id         any
	}{
		{"garbage", "hello, I am not JSON", parse, nil},
		{"truncated JSON", `{"jsonrpc":"2.0","id":3,"method":"tools/li`, parse, nil},
		{`"jsonrpc":"1.0"`, `{"jsonrpc":"1.0","id":4,"method":"ping"}`, invalid, 4.0},
		{"a numeric method", `{"jsonrpc":"2.0","id":"five","method":5}`, invalid, "five"},
		{"an object id", `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, invalid, nil},
		{"leading NULs", "\x00\x00\x00\x00" + `{"jsonrpc":"2.0","id":6,"method":"ping"}`, parse, nil},
		{"100,000-deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), parse, nil},
		{"100,000-deep params", `{"jsonrpc":"2.0","id":7,"method":"ping","params":` + strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000) + "}", parse, nil},
		{"a 10 MB message", `{"jsonrpc":"2.0","id":"ten","method":"tools/call","params":{"name":"run_list","arguments":{"x":"` + strings.Repeat("a", 10<<20) + `"}}}`, invalid, "ten"},
		{"a batch after 2025-06-18", `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, invalid, nil},
	} {
		s.send(tc.line)
		s.expectError(tc.name, tc.code, tc.id)
		s.ping(tc.name, 100+i)
	}

	// A 100 MB line, streamed: refused with its id, never held whole.
	before := peakRSS(t, cmd.Process.Pid)
	head := `{"jsonrpc":"2.0","id":"hundred","method":"tools/call","params":{"name":"run_list","arguments":{"x":"`
	chunk := bytes.Repeat([]byte("b"), 1<<20)
	if _, err := io.WriteString(s.in, head); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := s.in.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	s.send(`"}}}`)
	s.expectError("a 100 MB line", invalid, "hundred")
	s.ping("a 100 MB line", 200)
	after := peakRSS(t, cmd.Process.Pid)
	t.Logf("peak RSS %d MB before the 100 MB line, %d MB after", before>>20, after>>20)
	// Held, the line alone would add 100 MB; the binary's own size (the
	// libraries it links) is not the question, so the growth is measured.
	if after-before > 32<<20 {
		t.Errorf("peak RSS %d MB after a 100 MB line, %d MB before: it was held", after>>20, before>>20)
	}

	// A call after it is still answered.
	s.send(`{"jsonrpc":"2.0","id":300,"method":"tools/call","params":{"name":"run_list","arguments":{}}}`)
	if msg := s.next(); msg["id"] != 300.0 || msg["result"] == nil {
		t.Fatalf("run_list: %v", msg)
	}
	_ = s.in.Close()
	if err := waitExit(cmd, 15*time.Second); err != nil {
		t.Fatalf("serve did not exit cleanly after stdin closed: %v\n%s", err, stderr.String())
	}
}

// --max-message-bytes sets the limit.
func TestServeStdioMaxMessageBytes(t *testing.T) {
	s, _, _ := startHostile(t, "--max-message-bytes", "8192")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if msg := s.next(); msg["result"] == nil {
		t.Fatalf("initialize: %v", msg)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	s.send(`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"` + strings.Repeat("c", 8192) + `"}}`)
	s.expectError("a message over --max-message-bytes", -32600, 2.0)
	s.send(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"` + strings.Repeat("c", 8000) + `"}}`)
	if msg := s.next(); msg["id"] != 3.0 || msg["result"] == nil {
		t.Fatalf("a message within the limit: %v", msg)
	}
	out, err := exec.Command(sharedBinary(t), "--home", t.TempDir(), "serve", "--max-message-bytes", "10").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "--max-message-bytes") {
		t.Fatalf("--max-message-bytes 10: %v %s", err, out)
	}
}

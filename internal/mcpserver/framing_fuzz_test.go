package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzStdioFraming: whatever arrives on stdin, the line reader hands out
// lines within the limit (the stream itself rebuilt from them when none
// was too long), and every line the decoder refuses gets a JSON-RPC error
// answer: a JSON object with "jsonrpc":"2.0", an id (null when unknown)
// and the code -32700 or -32600. The stdio guard, over the same bytes,
// lets through only lines that are JSON-RPC messages within the limit,
// and answers what it refuses with such errors (a batch's, in an array).
func FuzzStdioFraming(f *testing.F) {
	for _, seed := range []string{
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
		"hello, I am not JSON\n{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"ping\"}\n",
		"{\"jsonrpc\":\"2.0\",\"id\":\"five\",\"method\":5}\r\n[]\n17\nnull\n",
		"\x00\x00{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"ping\"}\n\n\n",
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]",
		"{\"id\":\"ten\",\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"x\":\"" + string(bytes.Repeat([]byte("y"), 300)) + "\"}}\n",
	} {
		f.Add([]byte(seed), uint16(64))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		max := 16 + int(limit)%4096
		lr := newLineReader(bytes.NewReader(data), max)
		var lines [][]byte
		tooLong := false
		for range len(data) + 2 {
			line, err := lr.next()
			var tl *lineTooLongError
			switch {
			case errors.As(err, &tl):
				tooLong = true
				checkAnswer(t, tooLarge(tl.Limit, tl.Head).answer())
				continue
			case err == io.EOF:
			case err != nil:
				t.Fatalf("reading from memory: %v", err)
			}
			if err == io.EOF {
				break
			}
			if len(line) > max {
				t.Fatalf("a line of %d bytes over the limit %d", len(line), max)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("a line holds a line end: %q", line)
			}
			lines = append(lines, line)
			if _, err := decodeMessage(line); err != nil {
				checkAnswer(t, refusal(err).answer())
			}
		}
		if !tooLong && bytes.IndexByte(data, '\r') < 0 {
			if got, want := bytes.Join(lines, []byte("\n")), bytes.TrimSuffix(data, []byte("\n")); !bytes.Equal(got, want) {
				t.Fatalf("lines %q do not rebuild the stream %q", got, want)
			}
		}
		guardStream(t, data, max)
	})
}

// guardStream runs the stdio guard over data and checks what it lets
// through and what it answers.
func guardStream(t *testing.T, data []byte, max int) {
	g := &stdioGuard{lines: newLineReader(bytes.NewReader(data), max),
		refusals: make(chan []byte, len(data)+2), done: make(chan struct{})}
	for range len(data) + 2 {
		passed, err := g.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading from memory: %v", err)
		}
		for _, line := range bytes.Split(bytes.TrimSuffix(passed, []byte("\n")), []byte("\n")) {
			if len(line) > max {
				t.Fatalf("let through a line of %d bytes over the limit %d", len(line), max)
			}
			if _, err := decodeMessage(line); err != nil {
				t.Fatalf("let through %q: %v", line, err)
			}
		}
	}
	close(g.refusals)
	for answer := range g.refusals {
		answer = bytes.TrimSuffix(answer, []byte("\n"))
		if len(answer) > 0 && answer[0] == '[' {
			var parts []json.RawMessage
			if err := json.Unmarshal(answer, &parts); err != nil || len(parts) == 0 {
				t.Fatalf("a batch's refusals: %s (%v)", answer, err)
			}
			for _, p := range parts {
				checkAnswer(t, p)
			}
			continue
		}
		checkAnswer(t, answer)
	}
}

func checkAnswer(t *testing.T, answer []byte) {
	t.Helper()
	var m struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Error   *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(answer, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil {
		t.Fatalf("not a JSON-RPC error answer: %s (%v)", answer, err)
	}
	if !bytes.Contains(answer, []byte(`"id":`)) {
		t.Fatalf("an error answer without an id: %s", answer)
	}
	if m.Error.Code != -32700 && m.Error.Code != -32600 {
		t.Fatalf("error code %d, want -32700 or -32600: %s", m.Error.Code, answer)
	}
}

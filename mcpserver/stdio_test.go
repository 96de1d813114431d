package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/service"
)

// serveStdio runs the server on StdioTransport over pipes and returns the
// client's ends: what it writes and what it reads.
func serveStdio(t *testing.T, e *env) (io.WriteCloser, io.ReadCloser) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := e.srv.MCP().Connect(context.Background(), &StdioTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
	return inW, outR
}

func TestStdioTransportWithGoClient(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	in, out := serveStdio(t, e)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: out, Writer: in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var started RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &started) || started.Pause == nil {
		t.Fatalf("run_start: %+v", started)
	}
	var got RunResult
	if call(t, cs, "run_get", map[string]any{"run_id": started.RunID}, &got) || got.Status != "waiting" || got.Pause == nil || got.Pause.Token != started.Pause.Token {
		t.Fatalf("run_get: %+v", got)
	}
}

// rawSession speaks JSON-RPC lines to the server.
type rawSession struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
}

func (r *rawSession) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rawSession) recv() (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() { l, err := r.out.ReadString('\n'); ch <- result{l, err} }()
	select {
	case res := <-ch:
		return res.line, res.err
	case <-time.After(30 * time.Second):
		r.t.Fatal("no answer in 30s")
		return "", nil
	}
}

func rawInit(t *testing.T, version string) *rawSession {
	e := newEnv(t, Options{}, service.Options{})
	in, out := serveStdio(t, e)
	r := &rawSession{t: t, in: in, out: bufio.NewReader(out)}
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	line, err := r.recv()
	if err != nil || !strings.Contains(line, `"protocolVersion":"`+version+`"`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// Before 2025-06-18 a batch is answered with one array, in the order of
// its calls (notifications in it get no answer).
func TestStdioTransportBatch(t *testing.T) {
	r := rawInit(t, "2025-03-26")
	r.send(`[{"jsonrpc":"2.0","id":"b","method":"ping"}, {"jsonrpc":"2.0","method":"notifications/roots/list_changed"}, {"jsonrpc":"2.0","id":7,"method":"tools/list"}]`)
	line, err := r.recv()
	if err != nil {
		t.Fatal(err)
	}
	var answers []struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(line), &answers); err != nil || len(answers) != 2 || answers[0].ID != "b" || answers[1].ID != float64(7) ||
		!strings.Contains(string(answers[1].Result), `"run_get"`) {
		t.Fatalf("batch answer: %.300s %v", line, err)
	}
	// A plain message after the batch is answered on its own.
	r.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if line, err := r.recv(); err != nil || !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":8,"result":{}`) {
		t.Fatalf("ping: %q %v", line, err)
	}
}

// From 2025-06-18 on a batch ends the connection, as with the go-sdk's own
// stdio transport.
func TestStdioTransportRefusesBatchesFrom20250618(t *testing.T) {
	r := rawInit(t, "2025-06-18")
	r.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	if line, err := r.recv(); err == nil {
		t.Fatalf("a batch got an answer: %q", line)
	}
}

func TestStdioDecodeMessage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "call", "notification", "response", "error"
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "call"},
		{`{"jsonrpc":"2.0","id":"x","method":"ping","params":{"a":1}}`, "call"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "notification"},
		{`{"jsonrpc":"2.0","ID":1,"method":"ping"}`, "notification"}, // keys match exactly
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "response"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, "response"},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, "error"},
		{`{"id":1,"method":"ping"}`, "error"},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "error"},
		{`{"jsonrpc":"2.0","result":{}}`, "error"},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, "error"},
	} {
		m, err := decodeMessage([]byte(tc.in))
		got := "error"
		switch m := m.(type) {
		case *jsonrpc.Request:
			got = "notification"
			if m.IsCall() {
				got = "call"
			}
		case *jsonrpc.Response:
			got = "response"
		}
		if got != tc.want {
			t.Errorf("%s: got %s (%v), want %s", tc.in, got, err, tc.want)
		}
	}
	m, _ := decodeMessage([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`))
	if r := m.(*jsonrpc.Response); r.Error == nil || r.Error.(*jsonrpc.Error).Code != -32601 {
		t.Errorf("error response: %+v", r)
	}
}

// A message followed by anything but its line's end ends the connection.
func TestStdioTransportTrailingData(t *testing.T) {
	r := rawInit(t, "2025-03-26")
	r.send(`{"jsonrpc":"2.0","id":2,"method":"ping"} x`)
	for {
		line, err := r.recv()
		if err != nil {
			return
		}
		if strings.Contains(line, `"id":2`) {
			t.Fatalf("a message with trailing data got an answer: %q", line)
		}
	}
}

package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
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

// From 2025-06-18 on a batch is refused as an invalid request (id null),
// and the session goes on.
func TestStdioTransportRefusesBatchesFrom20250618(t *testing.T) {
	r := rawInit(t, "2025-06-18")
	r.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	r.expectError(jsonrpc.CodeInvalidRequest, nil)
	r.ping(3)
}

// expectError reads the next line and fails unless it is a JSON-RPC error
// with this code and id (nil: null).
func (r *rawSession) expectError(code int64, id any) {
	r.t.Helper()
	line, err := r.recv()
	if err != nil {
		r.t.Fatalf("no answer: %v", err)
	}
	var msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" || msg.Error == nil {
		r.t.Fatalf("want a JSON-RPC error, got %q (%v)", line, err)
	}
	wantID, _ := json.Marshal(id)
	if msg.Error.Code != code || string(msg.ID) != string(wantID) {
		r.t.Fatalf("want error %d with id %s, got %q", code, wantID, line)
	}
}

// ping sends a ping and fails unless it is answered.
func (r *rawSession) ping(id int) {
	r.t.Helper()
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, id))
	want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, id)
	if line, err := r.recv(); err != nil || strings.TrimSpace(line) != want {
		r.t.Fatalf("ping %d: %q %v", id, line, err)
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

// A message followed by anything but its line's end is not JSON: a parse
// error, and the session goes on.
func TestStdioTransportTrailingData(t *testing.T) {
	r := rawInit(t, "2025-03-26")
	r.send(`{"jsonrpc":"2.0","id":2,"method":"ping"} x`)
	r.expectError(jsonrpc.CodeParseError, nil)
	r.ping(3)
}

// Every message that is not a JSON-RPC 2.0 message is answered with
// JSON-RPC's error, and the session goes on: through the transport alone
// and through ConnectStdio, as `serve` connects it.
func TestStdioTransportRefusesMalformed(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	deepObject := `{"jsonrpc":"2.0","id":9,"method":"ping","params":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + "}"
	cases := []struct {
		name, line string
		code       int64
		id         any
	}{
		{"garbage", "hello, server", jsonrpc.CodeParseError, nil},
		{"truncated", `{"jsonrpc":"2.0","id":4,"method":"pi`, jsonrpc.CodeParseError, nil},
		{"version 1.0", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, jsonrpc.CodeInvalidRequest, 5},
		{"no version", `{"id":"s","method":"ping"}`, jsonrpc.CodeInvalidRequest, "s"},
		{"numeric method", `{"jsonrpc":"2.0","id":6,"method":42}`, jsonrpc.CodeInvalidRequest, 6},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, jsonrpc.CodeInvalidRequest, nil},
		{"leading NULs", "\x00\x00\x00" + `{"jsonrpc":"2.0","id":7,"method":"ping"}`, jsonrpc.CodeParseError, nil},
		{"deep array", deep, jsonrpc.CodeParseError, nil},
		{"deep params", deepObject, jsonrpc.CodeParseError, nil},
		{"not an object", `17`, jsonrpc.CodeInvalidRequest, nil},
		{"null", `null`, jsonrpc.CodeInvalidRequest, nil},
		{"neither request nor response", `{"jsonrpc":"2.0"}`, jsonrpc.CodeInvalidRequest, nil},
		{"bad error", `{"jsonrpc":"2.0","id":8,"error":"no"}`, jsonrpc.CodeInvalidRequest, 8},
		{"empty batch", `[]`, jsonrpc.CodeInvalidRequest, nil},
		{"bad batch", `[1,`, jsonrpc.CodeParseError, nil},
		{"too long", `{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"` + strings.Repeat("a", 1<<20) + `"}}`, jsonrpc.CodeInvalidRequest, "big"},
		{"too long, id last", `{"jsonrpc":"2.0","method":"ping","params":{"x":"` + strings.Repeat("a", 1<<20) + `"},"id":3}`, jsonrpc.CodeInvalidRequest, nil},
	}
	for _, viaServer := range []bool{false, true} {
		t.Run(fmt.Sprint("ConnectStdio=", viaServer), func(t *testing.T) {
			e := newEnv(t, Options{}, service.Options{})
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			var ss *mcp.ServerSession
			var err error
			if viaServer {
				ss, err = e.srv.ConnectStdio(context.Background(), inR, outW)
			} else {
				ss, err = e.srv.MCP().Connect(context.Background(), &StdioTransport{Reader: inR, Writer: outW, MaxFrame: 1 << 20}, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
			r := &rawSession{t: t, in: inW, out: bufio.NewReader(outR)}
			r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			if line, err := r.recv(); err != nil || !strings.Contains(line, `"result"`) {
				t.Fatalf("initialize: %q %v", line, err)
			}
			r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			for i, tc := range cases {
				if viaServer && strings.HasPrefix(tc.name, "too long") {
					continue // ConnectStdio's limit is the default
				}
				r.send(tc.line)
				r.expectError(tc.code, tc.id)
				r.ping(100 + i)
			}
			// A batch: its good calls answered, its bad messages refused,
			// in one array.
			r.send(`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"1.0","id":"b","method":"ping"},42]`)
			line, err := r.recv()
			if err != nil {
				t.Fatal(err)
			}
			var answers []struct {
				ID    any            `json:"id"`
				Error *jsonrpc.Error `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &answers); err != nil || len(answers) != 3 ||
				answers[0].ID != "a" || answers[0].Error != nil ||
				answers[1].ID != "b" || answers[1].Error == nil || answers[1].Error.Code != jsonrpc.CodeInvalidRequest ||
				answers[2].ID != nil || answers[2].Error == nil || answers[2].Error.Code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("batch: %q %v", line, err)
			}
			// A batch with nothing to answer but refusals.
			r.send(`[{"jsonrpc":"2.0","method":5}]`)
			if line, err := r.recv(); err != nil || !strings.HasPrefix(line, `[{"jsonrpc":"2.0","id":null,"error":{"code":-32600`) {
				t.Fatalf("refused batch: %q %v", line, err)
			}
			r.ping(1000)
		})
	}
}

// What the guard refuses and what the SDK answers go out on one stream
// from two writers: every line the client reads is one whole message, and
// every call and every refused line is answered once.
func TestStdioAnswersNeverInterleave(t *testing.T) {
	r := rawInit(t, "2025-11-25")
	const n = 200
	go func() { // not r.send: no Fatal outside the test's goroutine
		for i := range n {
			if _, err := fmt.Fprintf(r.in, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\"}\nnot JSON, line %d\n", 1000+i, i); err != nil {
				return // the test failed and closed the session
			}
		}
	}()
	answers, refusals := map[float64]bool{}, 0
	for range 2 * n {
		line, err := r.recv()
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID     any             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a line that is not one message (%v): %.200q", err, line)
		}
		switch {
		case m.Error != nil && m.Error.Code == jsonrpc.CodeParseError && m.ID == nil:
			refusals++
		case m.Result != nil:
			id, _ := m.ID.(float64)
			if answers[id] {
				t.Fatalf("call %v answered twice", m.ID)
			}
			answers[id] = true
		default:
			t.Fatalf("unexpected: %.200s", line)
		}
	}
	if len(answers) != n || refusals != n {
		t.Fatalf("%d answers and %d refusals, want %d each", len(answers), refusals, n)
	}
}

package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// rawHTTP is a bare streamable-HTTP client: the tests see every status,
// header and event the transport sends.
type rawHTTP struct {
	t       *testing.T
	srv     *Server
	url     string
	session string
	token   string
}

// serveHTTPTest serves a fresh home's MCP surface over loopback HTTP.
func serveHTTPTest(t *testing.T, o HTTPOptions) *rawHTTP {
	t.Helper()
	e := newEnv(t, Options{Version: "test", BaseURL: "http://127.0.0.1"}, service.Options{})
	hs := httptest.NewServer(e.srv.HTTPHandler(o))
	t.Cleanup(hs.Close)
	return &rawHTTP{t: t, srv: e.srv, url: hs.URL + "/mcp"}
}

// do sends a request with the usual headers (hdr adds or, with "", removes).
func (c *rawHTTP) do(method, body string, hdr map[string]string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set(headerSession, c.session)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { res.Body.Close() })
	return res
}

// initialize opens a session and says initialized.
func (c *rawHTTP) initialize() {
	c.t.Helper()
	res := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil)
	if res.StatusCode != http.StatusOK || res.Header.Get(headerSession) == "" {
		c.t.Fatalf("initialize: %d, session %q", res.StatusCode, res.Header.Get(headerSession))
	}
	c.session = res.Header.Get(headerSession)
	if msgs := events(c.t, res); len(msgs) != 1 || msgs[0]["result"] == nil {
		c.t.Fatalf("initialize answered %v", msgs)
	}
	if res := c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, map[string]string{headerProtocol: "2025-11-25"}); res.StatusCode != http.StatusAccepted {
		c.t.Fatalf("initialized: %d", res.StatusCode)
	}
}

// events reads a response's server-sent events as JSON messages.
func events(t *testing.T, res *http.Response) []map[string]any {
	t.Helper()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("content type %q: %s", ct, body)
	}
	var out []map[string]any
	var data strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "data: "); ok {
			data.WriteString(rest)
			continue
		}
		if line == "" && data.Len() > 0 {
			var m map[string]any
			if err := json.Unmarshal([]byte(data.String()), &m); err != nil {
				t.Fatalf("event %q: %v", data.String(), err)
			}
			out = append(out, m)
			data.Reset()
		}
	}
	return out
}

func TestHTTPSessionLifecycle(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	c.initialize()
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	res := c.do(http.MethodPost, ping, nil)
	if msgs := events(t, res); len(msgs) != 1 || msgs[0]["id"] != 2.0 || msgs[0]["result"] == nil {
		t.Fatalf("ping answered %v", msgs)
	}
	if res := c.do(http.MethodDelete, "", nil); res.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", res.StatusCode)
	}
	if res := c.do(http.MethodPost, ping, nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("ping after DELETE: %d", res.StatusCode)
	}
	// A POST without a session that is not an initialize is answered and
	// leaves no session behind.
	c.session = ""
	res = c.do(http.MethodPost, ping, nil)
	if msgs := events(t, res); len(msgs) != 1 || res.Header.Get(headerSession) != "" {
		t.Fatalf("ping without a session: %v, session %q", msgs, res.Header.Get(headerSession))
	}
}

func TestHTTPRefusesBadRequests(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	c.initialize()
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	const parse, invalid = jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest
	for _, tc := range []struct {
		name, method, body string
		hdr                map[string]string
		status             int
		code               int64 // the JSON-RPC error of the body (0: not JSON-RPC)
		id                 any   // its id
	}{
		{"foreign Host on loopback", http.MethodPost, ping, map[string]string{"Host": "evil.example"}, http.StatusForbidden, 0, nil},
		{"foreign Host on loopback, malformed", http.MethodPost, `{"jsonrpc":`, map[string]string{"Host": "evil.example"}, http.StatusForbidden, 0, nil},
		{"not JSON", http.MethodPost, ping, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType, 0, nil},
		{"no event streams accepted", http.MethodPost, ping, map[string]string{"Accept": "application/json"}, http.StatusBadRequest, 0, nil},
		{"unknown protocol version", http.MethodPost, ping, map[string]string{headerProtocol: "1999-01-01"}, http.StatusBadRequest, 0, nil},
		{"unknown session", http.MethodPost, ping, map[string]string{headerSession: "nope"}, http.StatusNotFound, 0, nil},
		{"malformed", http.MethodPost, `{"jsonrpc":`, nil, http.StatusBadRequest, parse, nil},
		{"garbage", http.MethodPost, `hello, server`, nil, http.StatusBadRequest, parse, nil},
		{"leading NULs", http.MethodPost, "\x00\x00" + ping, nil, http.StatusBadRequest, parse, nil},
		{"deep", http.MethodPost, strings.Repeat("[", 100000) + strings.Repeat("]", 100000), nil, http.StatusBadRequest, parse, nil},
		{"version 1.0", http.MethodPost, `{"jsonrpc":"1.0","id":4,"method":"ping"}`, nil, http.StatusBadRequest, invalid, 4},
		{"numeric method", http.MethodPost, `{"jsonrpc":"2.0","id":"m","method":7}`, nil, http.StatusBadRequest, invalid, "m"},
		{"object id", http.MethodPost, `{"jsonrpc":"2.0","id":{},"method":"ping"}`, nil, http.StatusBadRequest, invalid, nil},
		{"empty", http.MethodPost, "", nil, http.StatusBadRequest, parse, nil},
		{"empty batch", http.MethodPost, "[]", nil, http.StatusBadRequest, invalid, nil},
		{"batch in 2025-06-18", http.MethodPost, "[" + ping + "]", map[string]string{headerProtocol: "2025-06-18"}, http.StatusBadRequest, invalid, nil},
		{"malformed, stateless", http.MethodPost, `{"jsonrpc":`, map[string]string{headerProtocol: statelessProtocol, headerSession: ""}, http.StatusBadRequest, parse, nil},
		{"batch, stateless", http.MethodPost, "[" + ping + "]", map[string]string{headerProtocol: statelessProtocol, headerSession: ""}, http.StatusBadRequest, invalid, nil},
		{"too large, stateless", http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"` + strings.Repeat("a", DefaultMaxMessageBytes) + `"}}`, map[string]string{headerProtocol: statelessProtocol, headerSession: ""}, http.StatusRequestEntityTooLarge, invalid, 5},
		{"too large", http.MethodPost, `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":"` + strings.Repeat("a", DefaultMaxMessageBytes) + `"}}`, nil, http.StatusRequestEntityTooLarge, invalid, 4},
		{"GET without a session", http.MethodGet, "", map[string]string{headerSession: ""}, http.StatusBadRequest, 0, nil},
		{"DELETE without a session", http.MethodDelete, "", map[string]string{headerSession: ""}, http.StatusBadRequest, 0, nil},
		{"PUT", http.MethodPut, ping, nil, http.StatusMethodNotAllowed, 0, nil},
	} {
		res := c.do(tc.method, tc.body, tc.hdr)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.name, res.StatusCode, tc.status, body)
		}
		if tc.code == 0 {
			continue
		}
		var answer struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *jsonrpc.Error  `json:"error"`
		}
		wantID, _ := json.Marshal(tc.id)
		if err := json.Unmarshal(body, &answer); err != nil || answer.JSONRPC != "2.0" || answer.Error == nil ||
			answer.Error.Code != tc.code || string(answer.ID) != string(wantID) || res.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: want JSON-RPC error %d with id %s, got %s (%v)", tc.name, tc.code, wantID, body, err)
		}
	}
	// None of it touched the session.
	if msgs := events(t, c.do(http.MethodPost, ping, nil)); len(msgs) != 1 {
		t.Fatalf("ping after the refusals: %v", msgs)
	}
}

func TestHTTPSessionEndsWhenIdle(t *testing.T) {
	// A timeout ten times the pings' spacing, so that a loaded machine's
	// stalls do not end the session while it is used.
	c := serveHTTPTest(t, HTTPOptions{SessionTimeout: time.Second})
	c.initialize()
	ping := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	for range 3 { // requests keep it alive
		time.Sleep(100 * time.Millisecond)
		if res := c.do(http.MethodPost, ping, nil); res.StatusCode != http.StatusOK {
			t.Fatalf("ping within the timeout: %d", res.StatusCode)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	if res := c.do(http.MethodPost, ping, nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("ping after the timeout: %d", res.StatusCode)
	}
}

func TestHTTPSessionBelongsToItsUser(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{AuthTokens: []string{"token-one-long-enough", "token-two-long-enough"}})
	c.token = "token-one-long-enough"
	c.initialize()
	ping := `{"jsonrpc":"2.0","id":6,"method":"ping"}`
	c.token = "token-two-long-enough"
	if res := c.do(http.MethodPost, ping, nil); res.StatusCode != http.StatusForbidden {
		t.Fatalf("another user's session: %d", res.StatusCode)
	}
	c.token = "token-one-long-enough"
	if res := c.do(http.MethodPost, ping, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("its own user: %d", res.StatusCode)
	}
}

// TestHTTPStatelessProtocol: a request in SEP-2575's protocol (2026-07-28)
// is served statelessly: answered without a session, and leaving none
// behind; server/discover offers the version; a header that disagrees with
// the request's _meta is refused. A stateful session goes on beside.
func TestHTTPStatelessProtocol(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	c.initialize()
	session := c.session
	c.session = ""
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	res := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{`+meta+`}}`,
		map[string]string{headerProtocol: statelessProtocol, "Mcp-Method": "tools/list"})
	if res.Header.Get(headerSession) != "" {
		t.Fatalf("a stateless request got session %q", res.Header.Get(headerSession))
	}
	msgs := events(t, res)
	if len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("tools/list at 2026-07-28: %v", msgs)
	}
	if tools, _ := msgs[0]["result"].(map[string]any)["tools"].([]any); len(tools) == 0 {
		t.Fatalf("tools/list at 2026-07-28 lists no tools: %v", msgs[0])
	}
	discover := `{"jsonrpc":"2.0","id":8,"method":"server/discover","params":{` + meta + `}}`
	msgs = events(t, c.do(http.MethodPost, discover, map[string]string{headerProtocol: statelessProtocol, "Mcp-Method": "server/discover"}))
	if len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("discover: %v", msgs)
	}
	if versions, _ := json.Marshal(msgs[0]["result"]); !strings.Contains(string(versions), statelessProtocol) {
		t.Fatalf("discover does not offer %s: %s", statelessProtocol, versions)
	}
	if res := c.do(http.MethodPost, discover, map[string]string{headerProtocol: "2025-11-25"}); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("discover whose header and _meta disagree: %d", res.StatusCode)
	}
	c.session = session
	if msgs := events(t, c.do(http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, map[string]string{headerProtocol: "2025-11-25"})); len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("the stateful session after: %v", msgs)
	}
}

// TestHTTPTaskMcpName: a tasks/get, tasks/update or tasks/cancel whose
// Mcp-Name header names another task than its taskId is refused with HTTP
// 400 and -32020 (SEP-2243, SEP-2663); a matching header, or none, goes
// through (to -32602 here: the task is unknown).
func TestHTTPTaskMcpName(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	for _, method := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		body := `{"jsonrpc":"2.0","id":5,"method":"` + method + `","params":{` + meta + `,"taskId":"swt_a","inputResponses":{}}}`
		hdr := map[string]string{headerProtocol: statelessProtocol, "Mcp-Method": method, "Mcp-Name": "swt_b"}
		answer := func() (int, float64, int64) {
			t.Helper()
			res := c.do(http.MethodPost, body, hdr)
			var msg struct {
				ID    float64
				Error struct{ Code int64 }
			}
			if err := json.NewDecoder(res.Body).Decode(&msg); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			return res.StatusCode, msg.ID, msg.Error.Code
		}
		if status, id, code := answer(); status != http.StatusBadRequest || code != mcp.CodeHeaderMismatch || id != 5 {
			t.Errorf("%s with a mismatched Mcp-Name: HTTP %d, id %v, code %d", method, status, id, code)
		}
		for _, name := range []string{"swt_a", ""} {
			hdr["Mcp-Name"] = name
			if status, id, code := answer(); code != jsonrpc.CodeInvalidParams || id != 5 { // the SDK's HTTP status for -32602
				t.Errorf("%s with Mcp-Name %q: HTTP %d, id %v, code %d", method, name, status, id, code)
			}
		}
	}
}

// TestHTTPProgressOnTheCallStream: what a tool sends during a call goes on
// that call's stream, before its answer.
func TestHTTPProgressOnTheCallStream(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	c.initialize()
	msgs := events(t, c.do(http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"run_start","arguments":{"workflow":"greet"}}}`, nil))
	if len(msgs) != 1 {
		t.Fatalf("run_start: %v", msgs)
	}
	var started struct {
		Pause struct {
			Token string `json:"token"`
		} `json:"pause"`
	}
	raw, _ := json.Marshal(msgs[0]["result"].(map[string]any)["structuredContent"])
	if err := json.Unmarshal(raw, &started); err != nil || started.Pause.Token == "" {
		t.Fatalf("run_start result: %s", raw)
	}
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"run_continue","arguments":{"token":%q,"value":"Alice","wait_seconds":5}}}`, started.Pause.Token)
	msgs = events(t, c.do(http.MethodPost, call, nil))
	if len(msgs) < 2 {
		t.Fatalf("run_continue with a progress token: %v", msgs)
	}
	for _, m := range msgs[:len(msgs)-1] {
		if m["method"] != "notifications/progress" {
			t.Fatalf("before the answer: %v", m)
		}
	}
	if last := msgs[len(msgs)-1]; last["id"] != 10.0 || last["result"] == nil {
		t.Fatalf("the answer: %v", last)
	}
}

// TestHTTPStandaloneStream: one GET stream per session.
func TestHTTPStandaloneStream(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	c.initialize()
	res := c.do(http.MethodGet, "", nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if second := c.do(http.MethodGet, "", nil); second.StatusCode != http.StatusConflict {
		t.Fatalf("a second GET: %d", second.StatusCode)
	}
	// Ending the session ends its stream.
	if del := c.do(http.MethodDelete, "", nil); del.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", del.StatusCode)
	}
	streamEnds(t, res)
	// So does a server shutting down (EndHTTPSessions).
	c.session = ""
	c.initialize()
	res = c.do(http.MethodGet, "", nil)
	c.srv.EndHTTPSessions()
	streamEnds(t, res)
	if res := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":11,"method":"ping"}`, nil); res.StatusCode != http.StatusNotFound {
		t.Fatalf("a session after EndHTTPSessions: %d", res.StatusCode)
	}
}

// streamEnds waits for a response's stream to end.
func streamEnds(t *testing.T, res *http.Response) {
	t.Helper()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(res.Body); done <- err }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the GET stream outlived its session")
	}
}

// TestHTTPGoSDKClient: the go-sdk's client works against the handler at
// 2026-07-28 (its default: server/discover, stateless) and at 2025-11-25
// (a session), progress notifications included.
func TestHTTPGoSDKClient(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) { goSDKClient(t, version) })
	}
}

func goSDKClient(t *testing.T, version string) {
	c := serveHTTPTest(t, HTTPOptions{})
	ctx := context.Background()
	progress := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Message
		}})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %s", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	var started struct {
		Pause struct {
			Token string `json:"token"`
		} `json:"pause"`
	}
	if isError := call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &started); isError || started.Pause.Token == "" {
		t.Fatalf("run_start: %+v", started)
	}
	params := &mcp.CallToolParams{Name: "run_continue", Arguments: map[string]any{"token": started.Pause.Token, "value": "Alice", "wait_seconds": 5}}
	params.SetProgressToken("p")
	if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
		t.Fatalf("run_continue: %v %v", res, err)
	}
	select {
	case <-progress:
	case <-time.After(5 * time.Second):
		t.Fatal("no progress notification")
	}
}

// TestHTTPElicitationDuringACall: a question the server asks the person
// during a call reaches the go-sdk client, and its answer reaches the
// waiting call: at 2026-07-28 (stateless) through the retried call
// (MRTR), at 2025-11-25 (a session) as the server's own request, answered
// with a POST of its own. (Which stream carries it is
// TestHTTPProgressOnTheCallStream's concern.)
func TestHTTPElicitationDuringACall(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			c := serveHTTPTest(t, HTTPOptions{})
			asked := 0
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked++
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}, nil
				}})
			cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: c.url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if stateful := cs.ID() != ""; stateful != (version < statelessProtocol) || cs.InitializeResult().ProtocolVersion != version {
				t.Fatalf("at %s: a session %v, protocol %s", version, stateful, cs.InitializeResult().ProtocolVersion)
			}
			var deleted struct {
				Name string `json:"name"`
			}
			if isError := call(t, cs, "workflow_delete", map[string]any{"name": "greet"}, &deleted); isError || deleted.Name != "greet" || asked != 1 {
				t.Fatalf("workflow_delete: error %v, %+v, asked %d times", isError, deleted, asked)
			}
		})
	}
}

// Options.MaxMessageBytes is the body limit: a body over it is refused
// with a JSON-RPC error, one within it served.
func TestHTTPMaxMessageBytes(t *testing.T) {
	e := newEnv(t, Options{Version: "test", BaseURL: "http://127.0.0.1", MaxMessageBytes: 8192}, service.Options{})
	hs := httptest.NewServer(e.srv.HTTPHandler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	c := &rawHTTP{t: t, srv: e.srv, url: hs.URL + "/mcp"}
	c.initialize()
	res := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"`+strings.Repeat("a", 8192)+`"}}`, nil)
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(string(body), `{"jsonrpc":"2.0","id":2,"error":{"code":-32600,`) ||
		!strings.Contains(string(body), "8192") {
		t.Fatalf("over the limit: %d %s", res.StatusCode, body)
	}
	if msgs := events(t, c.do(http.MethodPost, `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"`+strings.Repeat("a", 8000)+`"}}`, nil)); len(msgs) != 1 || msgs[0]["result"] == nil {
		t.Fatalf("within the limit: %v", msgs)
	}
}

// TestHTTPStreamResumes: the events of a call's stream carry ids, and a
// client that lost the stream gets what followed an event again with a GET
// naming it (Last-Event-ID), from the event store.
func TestHTTPStreamResumes(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	c.initialize()
	res := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"run_start","arguments":{"workflow":"greet"}}}`,
		map[string]string{headerProtocol: "2025-11-25"})
	var ids []string
	var data []string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			ids = append(ids, id)
		}
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(d, `"id":12`) {
			data = append(data, d)
		}
	}
	if len(ids) == 0 || len(data) != 1 {
		t.Fatalf("the call's stream: event ids %q, answers %q", ids, data)
	}
	// Resuming from before the answer replays it.
	replay := c.do(http.MethodGet, "", map[string]string{"Last-Event-ID": ids[0] + "x", headerProtocol: "2025-11-25"})
	if replay.StatusCode != http.StatusBadRequest {
		t.Fatalf("a malformed event id: %d", replay.StatusCode)
	}
	// From 2025-11-25 on a stream opens with a priming event (an id, no
	// data) before the answer.
	if len(ids) < 2 {
		t.Fatalf("the call's stream has no priming event: ids %q", ids)
	}
	first := ids[0]
	replay = c.do(http.MethodGet, "", map[string]string{"Last-Event-ID": first, headerProtocol: "2025-11-25"})
	if replay.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(replay.Body)
		t.Fatalf("resume: %d %s", replay.StatusCode, body)
	}
	got := events(t, replay)
	if len(got) == 0 || got[len(got)-1]["id"] != 12.0 || got[len(got)-1]["result"] == nil {
		t.Fatalf("replayed: %v", got)
	}
}

// TestHTTPEndSessionsEndsListenStreams: a stateless subscriptions/listen
// stream (2026-07-28) lasts as long as its POST; EndHTTPSessions ends it,
// as it ends the stateful sessions' streams.
func TestHTTPEndSessionsEndsListenStreams(t *testing.T) {
	c := serveHTTPTest(t, HTTPOptions{})
	listen := `{"jsonrpc":"2.0","id":13,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`
	res := c.do(http.MethodPost, listen, map[string]string{headerProtocol: statelessProtocol, "Mcp-Method": "subscriptions/listen"})
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("subscriptions/listen: %d %s", res.StatusCode, body)
	}
	// The acknowledgement comes first: the stream is being served.
	br := bufio.NewReader(res.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the listen stream ended before its acknowledgement: %v", err)
		}
		if strings.Contains(line, "notifications/subscriptions/acknowledged") {
			break
		}
	}
	c.srv.EndHTTPSessions()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(br); done <- err }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the listen stream outlived EndHTTPSessions")
	}
}

package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"

	"stepwise.dev/stepwise/service"
)

// quickPair opens two raw stdio sessions on one server: one the SDK
// answers alone (StdioTransport as it is), one with quick reads answered
// on the transport's reader (ConnectStdio). Both are initialized at
// version unless it is empty.
func quickPair(t *testing.T, version string) (sdk, quick *rawSession, q *quickAnswers, writes *atomic.Int64) {
	t.Helper()
	e := newEnv(t, Options{}, service.Options{})
	in, out := serveStdio(t, e)
	sdk = &rawSession{t: t, in: in, out: bufio.NewReader(out)}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	counted := &countedWriter{WriteCloser: outW}
	ss, q, err := e.srv.connectStdio(context.Background(), inR, counted)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
	quick = &rawSession{t: t, in: inW, out: bufio.NewReader(outR)}
	if version != "" {
		for _, r := range []*rawSession{sdk, quick} {
			r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			if line, err := r.recv(); err != nil || !strings.Contains(line, `"result"`) {
				t.Fatalf("initialize: %q %v", line, err)
			}
			r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		}
	}
	return sdk, quick, q, &counted.writes
}

// countedWriter counts the writes the server makes.
type countedWriter struct {
	io.WriteCloser
	writes atomic.Int64
}

func (w *countedWriter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	return w.WriteCloser.Write(p)
}

// ask sends one line and returns the answer, skipping notifications.
func (r *rawSession) ask(line string) string {
	r.t.Helper()
	r.send(line)
	for {
		got, err := r.recv()
		if err != nil {
			r.t.Fatalf("%s: %v", line, err)
		}
		if strings.Contains(got, `"id":`) {
			return got
		}
	}
}

var correlation = regexp.MustCompile(`"correlation_id":"[^"]*"`)

// structuredRun is the run in the structured content of an answer.
func structuredRun(t *testing.T, answer string) RunResult {
	t.Helper()
	var res struct {
		Result struct {
			StructuredContent RunResult `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(answer), &res); err != nil {
		t.Fatalf("answer %s: %v", answer, err)
	}
	return res.Result.StructuredContent
}

func toolCall(id int, params string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, id, params)
}

// Every call the quick way answers gets the bytes the SDK writes for it;
// every other call is the SDK's, on both sessions.
func TestQuickAnswersAreTheSDKs(t *testing.T) {
	sdk, quick, q, _ := quickPair(t, "2025-11-25")
	started := structuredRun(t, sdk.ask(toolCall(2, `{"name":"run_start","arguments":{"workflow":"greet"}}`)))
	if started.Status != "waiting" {
		t.Fatalf("run_start: %+v", started)
	}
	id := started.RunID
	for i, tc := range []struct {
		params string
		quick  bool
	}{
		{`{"name":"run_get","arguments":{"run_id":"` + id + `"}}`, true},
		{`{"arguments":{"run_id":"` + id + `"},"name":"run_get"}`, true},
		{`{"name":"run_get","arguments":{"run_id":"no-such-run"}}`, true},
		{`{"name":"run_get","arguments":{}}`, true},
		{`{"name":"run_get","arguments":{"run_id":5}}`, true},
		{`{"name":"run_get"}`, true},
		{`{"name":"run_get","arguments":null}`, true},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `","extra":1}}`, true},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `"},"_meta":{"progressToken":"p1"}}`, true},
		{`{"name":"run_list","arguments":{}}`, true},
		{`{"name":"run_list","arguments":{"status":"waiting","limit":1}}`, true},
		{`{"name":"run_list","arguments":{"limit":500}}`, true},
		{`{"name":"run_list","arguments":{"status":"bogus"}}`, true},
		// The SDK's: a wait, other _meta, other params, other tools.
		{`{"name":"run_get","arguments":{"run_id":"` + id + `","wait_seconds":0}}`, false},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `","wait\u005fseconds":0}}`, false},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `","WAIT_SECONDS":0}}`, false},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `"},"_meta":{"progressToken":1},"_meta":{"other":1}}`, false},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `"},"\u005fmeta":{},"_meta":{}}`, false},
		{`{"name":"run_list","arguments":{"workflow":` + strings.Repeat("[", maxQuickDepth) + strings.Repeat("]", maxQuickDepth) + `}}`, false},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `"},"_meta":{"other":1}}`, false},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `"},"Name":"run_get"}`, false},
		{`{"name":"run_get","arguments":{"run_id":"` + id + `"},"task":{}}`, false},
		{`{"name":"workflow_list","arguments":{}}`, false},
		{`{"name":"no_such_tool","arguments":{}}`, false},
		{`{"name":5,"arguments":{}}`, false},
		{`{"name":"","arguments":{}}`, false},
	} {
		before := q.answered.Load()
		line := toolCall(10+i, tc.params)
		want, got := sdk.ask(line), quick.ask(line)
		// A tool error has an id of its own, for the logs.
		want, got = correlation.ReplaceAllString(want, "C"), correlation.ReplaceAllString(got, "C")
		if got != want {
			t.Errorf("%s:\nquick %s\nSDK   %s", tc.params, got, want)
		}
		if answered := q.answered.Load() - before; answered != map[bool]int64{false: 0, true: 1}[tc.quick] {
			t.Errorf("%s: answered quickly %d times, want quick=%v", tc.params, answered, tc.quick)
		}
	}
}

// Calls read together are answered together, each once, and a call the
// SDK answers between them is answered too.
func TestQuickAnswersOfCallsReadTogether(t *testing.T) {
	_, quick, q, writes := quickPair(t, "2025-06-18")
	var lines []string
	for i := range 9 {
		if i == 4 {
			lines = append(lines, `{"jsonrpc":"2.0","id":104,"method":"tools/list"}`)
			continue
		}
		lines = append(lines, toolCall(100+i, `{"name":"run_list","arguments":{}}`))
	}
	before := writes.Load()
	quick.send(strings.Join(lines, "\n"))
	seen := map[string]bool{}
	for range lines {
		line, err := quick.recv()
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m.Result) == 0 || seen[string(m.ID)] {
			t.Fatalf("answer %q: %v (seen %v)", line, err, seen)
		}
		seen[string(m.ID)] = true
	}
	if got := q.answered.Load(); got != 8 {
		t.Errorf("answered quickly: %d, want 8", got)
	}
	// Answers wait for the next one's while a whole line is read: fewer
	// writes than answers (how many depends on how the lines were read).
	if n := writes.Load() - before; n >= int64(len(lines)) {
		t.Errorf("%d writes for %d answers", n, len(lines))
	}
}

// Before initialize, and for calls of the sessionless protocol
// (2026-07-28, its version in every call's _meta), the SDK answers.
func TestQuickAnswersOnlyInInitializedSessions(t *testing.T) {
	sdk, quick, q, _ := quickPair(t, "")
	for i, params := range []string{
		`{"name":"run_list","arguments":{}}`,
		`{"name":"run_list","arguments":{},"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"2026-07-28","` +
			mcp.MetaKeyClientCapabilities + `":{},"` + mcp.MetaKeyClientInfo + `":{"name":"raw","version":"1"}}}`,
	} {
		line := toolCall(2+i, params)
		if want, got := sdk.ask(line), quick.ask(line); got != want {
			t.Errorf("%s:\nquick %s\nSDK   %s", params, got, want)
		}
	}
	if q.answered.Load() != 0 {
		t.Error("answered outside an initialized session")
	}
}

// A server whose store is not open yet holds the call (the SDK's way) and
// answers it once it is.
func TestQuickAnswersWaitForTheStore(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	srv := NewUnattached(Options{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, q, err := srv.connectStdio(context.Background(), inR, outW)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
	r := &rawSession{t: t, in: inW, out: bufio.NewReader(outR)}
	if got := r.ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`); !strings.Contains(got, `"result"`) {
		t.Fatalf("initialize: %s", got)
	}
	r.send(toolCall(2, `{"name":"run_list","arguments":{}}`))
	// A ping read after it is answered at once: by then the call was read.
	if got := r.ask(`{"jsonrpc":"2.0","id":9,"method":"ping"}`); !strings.Contains(got, `"id":9`) {
		t.Fatalf("ping: %s", got)
	}
	srv.Attach(e.svc)
	srv.Start(context.Background())
	t.Cleanup(srv.Close)
	if got, err := r.recv(); err != nil || !strings.Contains(got, `"runs"`) {
		t.Fatalf("run_list: %q %v", got, err)
	}
	if q.answered.Load() != 0 {
		t.Error("answered before the store was open")
	}
	r.send(toolCall(3, `{"name":"run_list","arguments":{}}`))
	if got, err := r.recv(); err != nil || !strings.Contains(got, `"runs"`) || q.answered.Load() != 1 {
		t.Fatalf("run_list once open: %q %v, answered quickly %d", got, err, q.answered.Load())
	}
}

// encodeToolResult writes what the SDK writes for a result: json.Marshal
// without HTML escaping of the result (jsonrpc2's marshalling).
func TestEncodeToolResultIsTheSDKs(t *testing.T) {
	sdkBytes := func(res *mcp.CallToolResult) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			t.Fatal(err)
		}
		return bytes.TrimRight(b.Bytes(), "\n")
	}
	value := rapid.Deferred(func() *rapid.Generator[any] {
		return rapid.OneOf(
			rapid.Just[any](nil), rapid.Bool().AsAny(), rapid.Float64().AsAny(), rapid.String().AsAny(),
			rapid.StringOf(rapid.RuneFrom([]rune{'<', '>', '&', '"', '\\', '\n', '\u2028', 'é', '\x00'})).AsAny(),
			rapid.SliceOfN(rapid.Deferred(func() *rapid.Generator[any] { return rapid.String().AsAny() }), 0, 3).AsAny(),
			rapid.MapOfN(rapid.String(), rapid.Int().AsAny(), 0, 3).AsAny(),
		)
	})
	rapid.Check(t, func(t *rapid.T) {
		structured, err := json.Marshal(map[string]any{"v": value.Draw(t, "value")})
		if err != nil {
			t.Skip(err) // NaN and infinities have no JSON
		}
		text := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.RuneFrom([]rune{'<', '&', '"', '\n', '\t', '\u2029', '\ufffd'}))).Draw(t, "text")
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: rapid.Bool().Draw(t, "isError")}
		if rapid.Bool().Draw(t, "structured") {
			res.StructuredContent = json.RawMessage(structured)
		}
		switch rapid.IntRange(0, 4).Draw(t, "other") {
		case 1:
			res.Meta = mcp.Meta{"k": "v"}
		case 2:
			res.Content = append(res.Content, &mcp.TextContent{Text: "more"})
		case 3:
			res.Content[0].(*mcp.TextContent).Annotations = &mcp.Annotations{Priority: 0.5}
		case 4:
			res.Content = []mcp.Content{}
		}
		got, err := encodeToolResult(res)
		if err != nil {
			t.Fatal(err)
		}
		if want := sdkBytes(res); !bytes.Equal(got, want) {
			t.Fatalf("\ngot  %s\nwant %s", got, want)
		}
	})
}

// A client may write its calls before it reads any answer: the server
// keeps reading (as the SDK's reader does), whatever its answers wait for.
func TestQuickAnswersKeepReading(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ss, q, err := e.srv.connectStdio(context.Background(), inR, outW)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
	r := &rawSession{t: t, in: inW, out: bufio.NewReader(outR)}
	r.ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	const n = 3000 // far more answers than a pipe holds (64 KB)
	var calls strings.Builder
	for i := range n {
		calls.WriteString(toolCall(10+i, `{"name":"run_list","arguments":{}}`) + "\n")
	}
	wrote := make(chan error, 1)
	go func() { _, err := io.WriteString(inW, calls.String()); wrote <- err }()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the calls (%d bytes) were not read in 30s: the server stopped reading", calls.Len())
	}
	for i := range n {
		if line, err := r.recv(); err != nil || !strings.Contains(line, `"runs"`) {
			t.Fatalf("answer %d: %.200q %v", i, line, err)
		}
	}
	if got := q.answered.Load(); got != n {
		t.Errorf("answered quickly: %d, want %d", got, n)
	}
}

// A call reusing the id of a call the SDK still serves is the SDK's to
// refuse (it answers nothing): the quick way must not answer it either.
func TestQuickAnswersLeaveIDsInUseToTheSDK(t *testing.T) {
	_, quick, q, _ := quickPair(t, "2025-11-25")
	started := structuredRun(t, quick.ask(toolCall(2, `{"name":"run_start","arguments":{"definition":"version: 1\nname: nap\nsteps:\n  - {id: nap, sleep: 1h}\n","wait_seconds":0}}`)))
	if started.Status != "running" {
		t.Fatalf("run_start: %+v", started)
	}
	quick.send(toolCall(77, `{"name":"run_get","arguments":{"run_id":"`+started.RunID+`","wait_seconds":1}}`) + "\n" +
		toolCall(77, `{"name":"run_list","arguments":{}}`) + "\n" + `{"jsonrpc":"2.0","id":78,"method":"ping"}`)
	var got []string
	for len(got) < 2 {
		line, err := quick.recv()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(line, `"id":7`) {
			got = append(got, line)
		}
	}
	if !strings.Contains(got[0], `"id":78`) || !strings.Contains(got[1], `"id":77`) || !strings.Contains(got[1], `"running"`) {
		t.Errorf("answers: %.150q", got)
	}
	if q.answered.Load() != 0 {
		t.Errorf("answered quickly %d calls", q.answered.Load())
	}
}

// The context a session was connected with may end (serve: a signal)
// while it still reads: quick calls are not canceled by it, as the SDK's
// are not.
func TestQuickAnswersOutliveTheConnectContext(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, q, err := e.srv.connectStdio(ctx, inR, outW)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
	r := &rawSession{t: t, in: inW, out: bufio.NewReader(outR)}
	r.ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	cancel()
	if got := r.ask(toolCall(2, `{"name":"run_list","arguments":{}}`)); !strings.Contains(got, `"runs"`) || q.answered.Load() != 1 {
		t.Fatalf("run_list after the context ended: %s (answered quickly %d)", got, q.answered.Load())
	}
}

// run_get's paging arguments reach the handler on the quick way too: the
// page is the one the SDK gives.
func TestQuickRunGetPagesSteps(t *testing.T) {
	sdk, quick, q, _ := quickPair(t, "2025-11-25")
	started := structuredRun(t, sdk.ask(toolCall(2, `{"name":"run_start","arguments":{"workflow":"greet"}}`)))
	if started.Pause == nil {
		t.Fatalf("run_start: %+v", started)
	}
	next := structuredRun(t, sdk.ask(toolCall(3, `{"name":"run_continue","arguments":{"token":"`+started.Pause.Token+`","value":"Ada"}}`)))
	if next.Status != "waiting" {
		t.Fatalf("run_continue: %+v", next)
	}
	line := toolCall(4, `{"name":"run_get","arguments":{"run_id":"`+started.RunID+`","steps_cursor":"s1","steps_limit":1}}`)
	before := q.answered.Load()
	want, got := sdk.ask(line), quick.ask(line)
	if q.answered.Load()-before != 1 {
		t.Errorf("not answered the quick way")
	}
	if got != want {
		t.Errorf("quick %s\nSDK   %s", got, want)
	}
	r := structuredRun(t, got)
	if r.Steps == nil || len(r.Steps.Page) != 1 || r.Steps.Page[0].ID != "say" || r.Steps.From != 1 || r.Steps.NextCursor != "" || len(r.Steps.Recent) != 0 {
		t.Errorf("page: %+v", r.Steps)
	}
}

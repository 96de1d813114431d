package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Quick reads answered where they are read.
//
// A tools/call that the go-sdk serves passes through three goroutines (the
// transport's reader, the SDK's reader, its handler queue) and a fourth it
// starts for the call; every hand-off to an idle thread is a wake-up, which
// on a virtual machine costs more than a cheap read itself. Over stdio the
// server answers a few reads that never wait (run_get without
// wait_seconds, run_list) on the transport's reading goroutine instead,
// with the same handler the SDK would call and the same bytes it would
// write. Only the plainest calls take this way: a session initialized with
// a protocol before 2026-07-28, a server whose store is open, params with
// nothing but the tool's name, its arguments and at most a progress token;
// everything else, and any call whose handler fails, goes to the SDK as
// before. The tools it may answer are read-only, so a call handed on after
// its handler ran is only read twice.

// quickTool is a tool the stdio transport may answer itself.
type quickTool struct {
	handler mcp.ToolHandler
	// quick reports whether a call with these arguments answers at once.
	quick func(args json.RawMessage) bool
}

// addQuickTool lets the stdio transport answer calls of a read-only tool
// whose arguments say that it does not wait.
func (s *Server) addQuickTool(name string, h mcp.ToolHandler, quick func(json.RawMessage) bool) {
	if s.quick == nil {
		s.quick = map[string]quickTool{}
	}
	s.quick[name] = quickTool{handler: h, quick: quick}
}

// withoutKey: arguments that do not name key (they are checked against
// the tool's schema by its handler; this only decides the way they take).
func withoutKey(key string) func(json.RawMessage) bool {
	quoted := []byte(`"` + key + `"`)
	return func(args json.RawMessage) bool { return !bytes.Contains(args, quoted) }
}

// ConnectStdio serves one MCP session over a byte stream (stdin and
// stdout for `serve`) with the StdioTransport, answering quick reads on
// its reading goroutine.
func (s *Server) ConnectStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, error) {
	ss, _, err := s.connectStdio(ctx, r, w)
	return ss, err
}

func (s *Server) connectStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, *quickAnswers, error) {
	q := &quickAnswers{srv: s, ctx: ctx}
	ss, err := s.mcp.Connect(ctx, &StdioTransport{Reader: r, Writer: w, quick: q}, nil)
	if err != nil {
		return nil, nil, err
	}
	q.session.Store(ss)
	return ss, q, nil
}

// quickAnswers answers a connection's quick reads.
type quickAnswers struct {
	srv      *Server
	ctx      context.Context
	session  atomic.Pointer[mcp.ServerSession]
	answered atomic.Int64 // calls answered here
}

// The newest protocol version answered here: later ones carry per-request
// metadata that the SDK interprets.
const quickBefore = "2026-07-28"

// answer returns the encoded answer to msg when it is a quick read of a
// session negotiated at version; ok is false when the SDK must answer.
func (q *quickAnswers) answer(version string, msg jsonrpc.Message) (data []byte, ok bool) {
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || req.Method != "tools/call" || !req.IsCall() || version == "" || version >= quickBefore {
		return nil, false
	}
	ss := q.session.Load()
	if ss == nil || !q.srv.ready.isOpen() {
		return nil, false
	}
	params, ok := quickParams(req.Params)
	if !ok {
		return nil, false
	}
	tool, ok := q.srv.quick[params.Name]
	if !ok || !tool.quick(params.Arguments) {
		return nil, false
	}
	res, err := tool.handler(q.ctx, &mcp.CallToolRequest{Session: ss, Params: params})
	if err != nil || res == nil || res.InputRequests != nil || res.RequestState != "" {
		return nil, false
	}
	if res.Content == nil {
		res.Content = []mcp.Content{} // as the SDK answers: never null
	}
	result, err := encodeToolResult(res)
	if err != nil {
		return nil, false
	}
	data, err = encodeMessage(&jsonrpc.Response{ID: req.ID, Result: result})
	if err != nil {
		return nil, false
	}
	q.answered.Add(1)
	return data, true
}

// quickParams decodes a tools/call's params when they hold nothing but a
// name, arguments and a _meta with at most a progress token, keys matched
// exactly.
func quickParams(raw json.RawMessage) (*mcp.CallToolParamsRaw, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil, false
	}
	p := &mcp.CallToolParamsRaw{}
	for k, v := range fields {
		switch k {
		case "name":
			if json.Unmarshal(v, &p.Name) != nil || len(v) == 0 || v[0] != '"' {
				return nil, false
			}
		case "arguments":
			p.Arguments = nullAsAbsent(v)
		case "_meta":
			var meta map[string]json.RawMessage
			if json.Unmarshal(v, &meta) != nil {
				return nil, false
			}
			for mk, mv := range meta {
				if mk != "progressToken" {
					return nil, false
				}
				var token any
				if json.Unmarshal(mv, &token) != nil {
					return nil, false
				}
				p.Meta = mcp.Meta{mk: token}
			}
		default:
			return nil, false
		}
	}
	return p, p.Name != ""
}

// encodeToolResult is the result's JSON as the SDK writes it: json.Marshal
// of the result, which is its MarshalJSON compacted. The usual result of a
// tool here, one text and the structured content json.Marshal made, is
// written directly: MarshalJSON would copy and re-validate every byte of
// the structured content, then json.Marshal all of it once more (about a
// fifth of a quick call's CPU). Any other result takes MarshalJSON, whose output
// json.Marshal leaves as it is.
func encodeToolResult(res *mcp.CallToolResult) ([]byte, error) {
	structured, isRaw := res.StructuredContent.(json.RawMessage)
	text, isText := (*mcp.TextContent)(nil), len(res.Content) == 1
	if isText {
		text, isText = res.Content[0].(*mcp.TextContent)
	}
	if !isRaw || !isText || text == nil || text.Meta != nil || text.Annotations != nil || res.Meta != nil ||
		res.InputRequests != nil || res.RequestState != "" {
		return res.MarshalJSON()
	}
	quoted, err := json.Marshal(text.Text)
	if err != nil {
		return nil, err
	}
	const head, tail, sc, isErr = `{"content":[{"type":"text","text":`, `}]`, `,"structuredContent":`, `,"isError":true`
	data := make([]byte, 0, len(head)+len(quoted)+len(tail)+len(sc)+len(structured)+len(isErr)+1)
	data = append(append(append(data, head...), quoted...), tail...)
	if len(structured) > 0 {
		data = append(append(data, sc...), structured...)
	}
	if res.IsError {
		data = append(data, isErr...)
	}
	return append(data, '}'), nil
}

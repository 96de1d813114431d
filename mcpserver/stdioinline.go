package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
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
// nothing but the tool's name, its arguments and at most a progress token
// (each key once), an id that no call the SDK still serves has;
// everything else, and any call whose handler fails, goes to the SDK as
// before. The tools it may answer are read-only, so a call handed on after
// its handler ran is only read twice. The answers are written by the
// reader only when the output pipe takes them at once (stdiowriter.go),
// so that the reader never waits on the client.

// quickTool is a tool the stdio transport may answer itself.
type quickTool struct {
	handler mcp.ToolHandler
	// waits names the argument with which a call may wait ("": none).
	waits string
}

// addQuickTool lets the stdio transport answer calls of a read-only tool
// that never waits unless given the argument waits.
func (s *Server) addQuickTool(name string, h mcp.ToolHandler, waits string) {
	if !s.offers(name) {
		return
	}
	if s.quick == nil {
		s.quick = map[string]quickTool{}
	}
	s.quick[name] = quickTool{handler: h, waits: waits}
}

// quick reports whether a call with these arguments answers at once: it
// names no argument that may make it wait, however spelled (a key is
// compared decoded and without regard to case, as the handler's decoding
// matches it). Arguments that are not an object are the handler's to
// refuse, at once.
func (t quickTool) quick(args json.RawMessage) bool {
	if t.waits == "" {
		return true
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(args, &fields) != nil {
		return true
	}
	for k := range fields {
		if strings.EqualFold(k, t.waits) {
			return false
		}
	}
	return true
}

// ConnectStdio serves one MCP session over a byte stream (stdin and
// stdout for `serve`) with the StdioTransport, answering quick reads on
// its reading goroutine.
func (s *Server) ConnectStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, error) {
	ss, _, err := s.connectStdio(ctx, r, w)
	return ss, err
}

func (s *Server) connectStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, *quickAnswers, error) {
	// A call's context outlives the session's, as the SDK's calls' do.
	q := &quickAnswers{srv: s, ctx: context.WithoutCancel(ctx)}
	ss, err := s.mcp.Connect(ctx, &StdioTransport{Reader: r, Writer: w, MaxFrame: s.opts.MaxMessageBytes, quick: q}, nil)
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
// name, arguments and a _meta with at most a progress token: keys matched
// exactly, each at most once (the SDK's decoder merges repeated objects),
// nested no deeper than maxQuickDepth (the SDK refuses deep nesting with
// its own error).
func quickParams(raw json.RawMessage) (*mcp.CallToolParamsRaw, bool) {
	if nestedDeeper(raw, maxQuickDepth) {
		return nil, false
	}
	p := &mcp.CallToolParamsRaw{}
	var seen [3]bool
	ok := eachField(raw, func(k string, v json.RawMessage) bool {
		switch k {
		case "name":
			if seen[0] || json.Unmarshal(v, &p.Name) != nil || len(v) == 0 || v[0] != '"' {
				return false
			}
			seen[0] = true
		case "arguments":
			if seen[1] {
				return false
			}
			seen[1], p.Arguments = true, nullAsAbsent(v)
		case "_meta":
			if seen[2] {
				return false
			}
			seen[2] = true
			return eachField(v, func(mk string, mv json.RawMessage) bool {
				var token any
				if mk != "progressToken" || p.Meta != nil || json.Unmarshal(mv, &token) != nil {
					return false
				}
				p.Meta = mcp.Meta{mk: token}
				return true
			})
		default:
			return false
		}
		return true
	})
	return p, ok && p.Name != ""
}

// maxQuickDepth bounds the nesting of params answered quickly: far beyond
// any call of a quick tool, far below the SDK's limit.
const maxQuickDepth = 64

// eachField calls fn with each key (decoded) and value of the JSON object
// raw, in order, until fn returns false; it reports whether raw is an
// object and fn accepted every field.
func eachField(raw json.RawMessage, fn func(key string, value json.RawMessage) bool) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil || !fn(key, v) {
			return false
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return false
	}
	_, err := dec.Token()
	return err == io.EOF
}

// nestedDeeper reports whether JSON text nests arrays and objects more
// than limit deep (brackets in strings do not count).
func nestedDeeper(raw []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			if depth++; depth > limit {
				return true
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return false
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

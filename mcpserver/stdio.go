package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is the MCP transport over a byte stream (stdin and
// stdout): newline-delimited JSON-RPC messages, batches (JSON arrays) for
// protocol versions before 2025-06-18, as the go-sdk's mcp.IOTransport.
//
// It exists for speed: the go-sdk decodes each incoming message three times
// through a JSON decoder that allocates a 32 KB buffer per call (about 0.1 ms
// of CPU per message, a third of a cheap tool call). This one decodes each
// frame once, with encoding/json, keeping the same rules: keys match
// exactly, "jsonrpc" must be "2.0", an id is a number or a string, a message
// with a "method" key is a request (a call when it has an id), any other
// one a response. Server.ConnectStdio connects it with the server's quick
// reads (stdioinline.go); a StdioTransport built directly leaves every
// message to the SDK.
type StdioTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxFrame bounds the bytes of one incoming message (0:
	// mcp.DefaultMaxLineLength).
	MaxFrame int

	quick *quickAnswers // set by Server.ConnectStdio
}

var _ mcp.Transport = (*StdioTransport)(nil)

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxFrame
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	c := &stdioConn{r: t.Reader, w: t.Writer, quick: t.quick, frames: make(chan frame), done: make(chan struct{})}
	if c.quick != nil {
		c.answers = newAnswerWriter(t.Writer, &c.writeMu)
		go c.answers.run()
	}
	go c.readFrames(limit)
	return c, nil
}

// The protocol version from which JSON-RPC batches are refused.
const noBatchesFrom = "2025-06-18"

type frame struct {
	data []byte
	msg  jsonrpc.Message // data decoded, when the reader already did
	err  error
}

type stdioConn struct {
	r       io.ReadCloser
	w       io.WriteCloser
	quick   *quickAnswers // nil: the SDK answers everything
	answers *answerWriter // the quick answers' (stdiowriter.go), with quick

	frames chan frame        // from readFrames
	done   chan struct{}     // closed by Close
	queue  []jsonrpc.Message // the rest of a batch (Read is not concurrent)

	mu        sync.Mutex
	version   string                  // negotiated protocol version
	sdkCalls  map[jsonrpc.ID]int      // calls handed to the SDK and not answered yet
	initID    jsonrpc.ID              // the initialize call, until answered
	batches   map[jsonrpc.ID]*inBatch // open batches by the ids of their calls
	writeMu   sync.Mutex              // Write may be called concurrently
	closeOnce sync.Once
	closeErr  error
}

// inBatch is an incoming batch whose calls are not all answered: the
// answers go out together, as one array, in the order of the calls.
type inBatch struct {
	index   map[jsonrpc.ID]int
	answers []*jsonrpc.Response
	left    int
}

// readFrames reads one JSON value after another (each must end its line)
// and hands them to Read; it stops at the first error. Reading happens in
// its own goroutine so that Close unblocks a Read waiting for input.
func (c *stdioConn) readFrames(limit int) {
	lr := &limitedReader{r: c.r, left: limit}
	dec := json.NewDecoder(lr) // it buffers, reusing its buffer

	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil {
			// What follows a message on its line must be the line's end.
			var next [1]byte
			if n, rerr := dec.Buffered().Read(next[:]); n > 0 {
				if next[0] != '\n' && next[0] != '\r' {
					err = errors.New("invalid trailing data at the end of a message")
				}
			} else if rerr != nil && rerr != io.EOF {
				err = rerr
			}
		}
		f := frame{data: raw, err: err}
		if err == nil && c.quick != nil {
			var answer []byte
			if f.msg, answer, f.err = c.answerQuick(raw); answer != nil {
				// Answers to calls read together go out together.
				if f.err = c.answers.queue(answer, !lineBuffered(dec.Buffered())); f.err == nil {
					lr.left = limit
					continue
				}
			}
		}
		if c.quick != nil {
			if f.err == nil {
				// The SDK's calls are known before the next quick one is
				// read: it must not reuse their ids.
				f.msg, f.err = c.handOn(f)
			}
			if f.err != nil {
				c.answers.drain() // the session ends: what was answered goes out first
			} else {
				c.answers.flush()
			}
		}
		select {
		case c.frames <- f:
		case <-c.done:
			return
		}
		if f.err != nil {
			return
		}
		lr.left = limit
	}
}

// handOn records the calls of a frame the SDK is to answer, decoding it
// unless it is decoded already (a batch is decoded again by Read).
func (c *stdioConn) handOn(f frame) (jsonrpc.Message, error) {
	if f.msg != nil {
		c.handedOn(f.msg)
		return f.msg, nil
	}
	if i := firstByte(f.data); i < len(f.data) && f.data[i] == '[' {
		if raws, err := batchParts(f.data); err == nil {
			for _, raw := range raws {
				if m, err := decodeMessage(raw); err == nil {
					c.handedOn(m)
				}
			}
		}
		return nil, nil
	}
	m, err := decodeMessage(f.data)
	if err == nil {
		c.handedOn(m)
	}
	return m, err
}

// answerQuick answers a tools/call that the server answers on this
// goroutine (see quickAnswers); otherwise it returns the message decoded
// (nil when it is not a single tools/call) for the SDK.
func (c *stdioConn) answerQuick(raw []byte) (jsonrpc.Message, []byte, error) {
	if !bytes.Contains(raw, []byte(`"tools/call"`)) {
		return nil, nil, nil
	}
	if i := firstByte(raw); i == len(raw) || raw[i] != '{' {
		return nil, nil, nil // a batch: the SDK's way
	}
	msg, err := decodeMessage(raw)
	if err != nil {
		return nil, nil, err
	}
	version, busy := c.negotiated(msg)
	if busy {
		return msg, nil, nil // the SDK refuses a call reusing the id of one it serves
	}
	if answer, ok := c.quick.answer(version, msg); ok {
		return msg, answer, nil
	}
	return msg, nil, nil
}

// lineBuffered reports whether the rest of what the decoder has read
// holds another whole message (a line with something on it), so that an
// answer may wait to go out with the next one's.
func lineBuffered(r io.Reader) bool {
	var buf [4096]byte
	n, _ := r.Read(buf[:])
	rest := buf[:n]
	i := firstByte(rest)
	return i < len(rest) && bytes.IndexByte(rest[i:], '\n') >= 0
}

// errInvalidRequest is JSON-RPC's "invalid request".
var errInvalidRequest = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}

var errFrameTooLarge = errors.New("an incoming JSON-RPC message exceeded the maximum length")

// limitedReader fails once a frame has read more than its budget.
type limitedReader struct {
	r    io.Reader
	left int
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errFrameTooLarge
	}
	if len(p) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= n
	return n, err
}

// Read implements mcp.Connection.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	var f frame
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, io.EOF
	case f = <-c.frames:
	}
	if f.err != nil {
		return nil, f.err
	}
	m := f.msg
	if m == nil {
		if i := firstByte(f.data); i < len(f.data) && f.data[i] == '[' {
			return c.readBatch(f.data)
		}
		var err error
		if m, err = decodeMessage(f.data); err != nil {
			return nil, err
		}
	}
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == "initialize" && req.IsCall() {
		c.mu.Lock()
		c.initID = req.ID
		c.mu.Unlock()
	}
	return m, nil
}

func firstByte(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// readBatch splits an incoming batch and records its calls so that their
// answers go out together.
func (c *stdioConn) readBatch(data []byte) (jsonrpc.Message, error) {
	raws, err := batchParts(data)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if version >= noBatchesFrom {
		return nil, fmt.Errorf("JSON-RPC batching is not supported in %s and later (request version: %s)", noBatchesFrom, version)
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	b := &inBatch{index: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, dup := b.index[req.ID]; dup {
				return nil, fmt.Errorf("duplicate message ID %v in a batch", req.ID.Raw())
			}
			b.index[req.ID] = len(b.answers)
			b.answers = append(b.answers, nil)
		}
		msgs = append(msgs, m)
	}
	if b.left = len(b.answers); b.left > 0 {
		c.mu.Lock()
		for id := range b.index {
			if _, seen := c.batches[id]; seen {
				c.mu.Unlock()
				return nil, fmt.Errorf("%w: batch contains previously seen request %v", errInvalidRequest, id.Raw())
			}
		}
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*inBatch{}
		}
		for id := range b.index {
			c.batches[id] = b
		}
		c.mu.Unlock()
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

// batchParts splits a JSON-RPC batch into its messages, undecoded.
func batchParts(data []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("empty batch")
	}
	return raws, nil
}

// decodeMessage decodes one JSON-RPC message. Keys are matched exactly
// (encoding/json alone would match them case-insensitively).
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	var version string
	if v, ok := fields["jsonrpc"]; ok {
		if err := json.Unmarshal(v, &version); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	if version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
	}
	var rawID any
	if v, ok := fields["id"]; ok {
		if err := json.Unmarshal(v, &rawID); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if m, ok := fields["method"]; ok {
		var method string
		if err := json.Unmarshal(m, &method); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: nullAsAbsent(fields["params"])}, nil
	}
	if !id.IsValid() {
		return nil, errInvalidRequest
	}
	resp := &jsonrpc.Response{ID: id, Result: nullAsAbsent(fields["result"])}
	if e, ok := fields["error"]; ok && string(e) != "null" {
		var we jsonrpc.Error
		if err := json.Unmarshal(e, &we); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		resp.Error = &we
	}
	return resp, nil
}

// nullAsAbsent: a JSON null decodes into a json.RawMessage as nothing.
func nullAsAbsent(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// Write implements mcp.Connection.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answered(resp)
		c.noteInitialized(resp)
		if all, inBatch := c.answerInBatch(resp); inBatch {
			if all == nil {
				return nil // the batch waits for its other answers
			}
			return c.writeBatch(all)
		}
	}
	data, err := encodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	return c.writeLine(data)
}

// encodeMessage is jsonrpc.EncodeMessage with a shorter way for a
// successful answer: the SDK made its result with json.Marshal (compact,
// valid, no HTML escaping), and encoding the answer around it would copy
// and re-validate every byte of it again (88 KB for tools/list, the
// largest answer of every session's start). The bytes are the same. A
// result with a line end in it (which json.Marshal never writes) takes
// the full encoding, which compacts it: a line end would end the frame.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || len(resp.Result) == 0 || !resp.ID.IsValid() ||
		bytes.IndexByte(resp.Result, '\n') >= 0 || bytes.IndexByte(resp.Result, '\r') >= 0 {
		return jsonrpc.EncodeMessage(msg)
	}
	var id []byte
	switch v := resp.ID.Raw().(type) {
	case int64:
		id = strconv.AppendInt(nil, v, 10)
	case string:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // as the SDK encodes
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		id = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	default:
		return jsonrpc.EncodeMessage(msg)
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	data := make([]byte, 0, len(head)+len(id)+len(mid)+len(resp.Result)+2) // room for the line's end
	data = append(data, head...)
	data = append(data, id...)
	data = append(data, mid...)
	data = append(data, resp.Result...)
	return append(data, '}'), nil
}

// negotiated is the protocol version of the session ("" before its
// initialize is answered), and whether msg is a call whose id is that of
// a call the SDK has not answered yet.
func (c *stdioConn) negotiated(msg jsonrpc.Message) (version string, busy bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		busy = c.sdkCalls[req.ID] > 0
	}
	return c.version, busy
}

// handedOn records a call handed to the SDK (only when quick answers are
// given, which must not reuse the id of one of them).
func (c *stdioConn) handedOn(m jsonrpc.Message) {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sdkCalls == nil {
		c.sdkCalls = map[jsonrpc.ID]int{}
	}
	c.sdkCalls[req.ID]++
}

// answered records the SDK's answer to a call handed on.
func (c *stdioConn) answered(resp *jsonrpc.Response) {
	if c.quick == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.sdkCalls[resp.ID]; n > 1 {
		c.sdkCalls[resp.ID] = n - 1
	} else if n == 1 {
		delete(c.sdkCalls, resp.ID)
	}
}

// noteInitialized records the protocol version the server chose, from its
// answer to initialize (batches are refused from 2025-06-18 on).
func (c *stdioConn) noteInitialized(resp *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initID.IsValid() || resp.ID != c.initID {
		return
	}
	c.initID = jsonrpc.ID{}
	if resp.Error != nil {
		return
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(resp.Result, &res) == nil {
		c.version = res.ProtocolVersion
	}
}

// answerInBatch files an answer to a call that came in a batch. It reports
// whether it did, and returns the batch's answers once they are all there.
func (c *stdioConn) answerInBatch(resp *jsonrpc.Response) ([]*jsonrpc.Response, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, resp.ID)
	b.answers[b.index[resp.ID]] = resp
	if b.left--; b.left > 0 {
		return nil, true
	}
	return b.answers, true
}

func (c *stdioConn) writeBatch(answers []*jsonrpc.Response) error {
	raws := make([]json.RawMessage, len(answers))
	for i, a := range answers {
		raw, err := jsonrpc.EncodeMessage(a)
		if err != nil {
			return fmt.Errorf("encoding batch message: %w", err)
		}
		raws[i] = raw
	}
	data, err := json.Marshal(raws)
	if err != nil {
		return err
	}
	return c.writeLine(data)
}

func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Close implements mcp.Connection.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
		close(c.done)
		if c.answers != nil {
			c.answers.close()
		}
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: a stream has one session, unnamed.
func (c *stdioConn) SessionID() string { return "" }

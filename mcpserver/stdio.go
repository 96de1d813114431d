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
// stdout): newline-delimited JSON-RPC messages, one per line as MCP's
// stdio transport defines them, batches (JSON arrays) for protocol
// versions before 2025-06-18.
//
// It exists for speed, and to survive what a client sends: the go-sdk's
// mcp.IOTransport decodes each incoming message three times through a JSON
// decoder that allocates a 32 KB buffer per call (about 0.1 ms of CPU per
// message, a third of a cheap tool call), and ends the session at the
// first message it cannot decode. This one decodes each line once, with
// encoding/json, keeping the same rules: keys match exactly, "jsonrpc"
// must be "2.0", an id is a number or a string, a message with a "method"
// key is a request (a call when it has an id), any other one a response.
// A line that breaks them, or is longer than MaxFrame, is answered with
// JSON-RPC's error (rpcrefuse.go) and the session goes on. Server.ConnectStdio connects it with the server's quick
// reads (stdioinline.go); a StdioTransport built directly leaves every
// message to the SDK.
type StdioTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxFrame bounds the bytes of one incoming message, its line's end
	// aside (0: DefaultMaxMessageBytes). A longer one is refused, and
	// dropped as it is read, never held whole.
	MaxFrame int

	quick *quickAnswers // set by Server.ConnectStdio
}

var _ mcp.Transport = (*StdioTransport)(nil)

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxFrame
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	c := &stdioConn{r: t.Reader, w: t.Writer, quick: t.quick, frames: make(chan frame), done: make(chan struct{})}
	c.answers = newAnswerWriter(t.Writer, &c.writeMu)
	go c.answers.run()
	go c.readFrames(limit)
	return c, nil
}

// The protocol version from which JSON-RPC batches are refused.
const noBatchesFrom = "2025-06-18"

// frame is what the reader hands to Read: a message, a batch undecoded,
// or the error that ends the stream.
type frame struct {
	batch []byte
	msg   jsonrpc.Message
	err   error
}

type stdioConn struct {
	r       io.ReadCloser
	w       io.WriteCloser
	quick   *quickAnswers // nil: the SDK answers everything
	answers *answerWriter // what the transport answers itself (stdiowriter.go): quick answers, refusals

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
	refused [][]byte // the errors of its messages that were refused, encoded
	left    int
}

// readFrames reads one line after another and hands the messages on them
// to Read; it stops at the first error reading. Reading happens in its own
// goroutine so that Close unblocks a Read waiting for input. A line that
// is not a JSON-RPC message, or is too long, is answered here with
// JSON-RPC's error (rpcrefuse.go), and the reading goes on.
func (c *stdioConn) readFrames(limit int) {
	lines := newLineReader(c.r, limit)
	for {
		data, err := lines.next()
		var f frame
		var tooLong *lineTooLongError
		switch {
		case errors.As(err, &tooLong):
			if f.err = c.refuse(tooLarge(tooLong.Limit, tooLong.Head)); f.err == nil {
				continue
			}
		case err != nil:
			f.err = err
		default:
			i := firstByte(data)
			if i == len(data) {
				continue // a blank line
			}
			if data[i] == '[' {
				f.batch = data
				break
			}
			var answer []byte
			f.msg, answer, err = c.decode(data)
			switch {
			case err != nil:
				f.err = c.refuse(refusal(err))
			case answer != nil:
				// Answers to calls read together go out together.
				f.err = c.answers.queue(answer, !lines.moreBuffered())
			}
			if f.err == nil && (err != nil || answer != nil) {
				continue // answered here
			}
		}
		if c.quick != nil && f.err == nil {
			// The SDK's calls are known before the next quick one is
			// read: it must not reuse their ids.
			c.handOn(f)
		}
		if f.err != nil {
			c.answers.drain() // the session ends: what was answered goes out first
		} else {
			c.answers.flush()
		}
		select {
		case c.frames <- f:
		case <-c.done:
			return
		}
		if f.err != nil {
			return
		}
	}
}

// refuse answers a refused message; it fails when the answer cannot be
// written.
func (c *stdioConn) refuse(e *messageError) error {
	return c.answers.queue(e.answer(), true)
}

// handOn records the calls of a frame the SDK is to answer (a batch is
// decoded again by Read).
func (c *stdioConn) handOn(f frame) {
	if f.msg != nil {
		c.handedOn(f.msg)
		return
	}
	if raws, err := batchParts(f.batch); err == nil {
		for _, raw := range raws {
			if m, err := decodeMessage(raw); err == nil {
				c.handedOn(m)
			}
		}
	}
}

// decode decodes a message; a tools/call that the server answers on this
// goroutine (see quickAnswers) comes with its answer.
func (c *stdioConn) decode(raw []byte) (jsonrpc.Message, []byte, error) {
	msg, err := decodeMessage(raw)
	if err != nil || c.quick == nil {
		return msg, nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); !ok || req.Method != "tools/call" {
		return msg, nil, nil
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
	for {
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
		if f.msg == nil {
			m, err := c.readBatch(f.batch)
			if err != nil {
				if err := c.refuse(refusal(err)); err != nil {
					return nil, err
				}
				continue
			}
			if m == nil {
				continue // every message in it was refused
			}
			return m, nil
		}
		if req, ok := f.msg.(*jsonrpc.Request); ok && req.Method == "initialize" && req.IsCall() {
			c.mu.Lock()
			c.initID = req.ID
			c.mu.Unlock()
		}
		return f.msg, nil
	}
}

func firstByte(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// readBatch splits an incoming batch and records its calls so that their
// answers go out together. A message of the batch that is not one gets
// its error among the batch's answers; a batch refused as a whole is an
// error (a *messageError). It returns the batch's first message for the
// SDK (nil when none is).
func (c *stdioConn) readBatch(data []byte) (jsonrpc.Message, error) {
	raws, err := batchParts(data)
	if err != nil {
		return nil, err
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	var refused [][]byte
	b := &inBatch{index: map[jsonrpc.ID]int{}}
	var dup error
	for _, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			refused = append(refused, refusal(err).answer())
			continue
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, seen := b.index[req.ID]; seen && dup == nil {
				dup = invalidRequest(jsonrpc.ID{}, "the id %v is used twice in the batch", req.ID.Raw())
			}
			b.index[req.ID] = len(b.answers)
			b.answers = append(b.answers, nil)
		}
		msgs = append(msgs, m)
	}
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if version >= noBatchesFrom {
		c.release(msgs)
		return nil, invalidRequest(jsonrpc.ID{}, "JSON-RPC batching is not supported in %s and later (the session's version: %s)", noBatchesFrom, version)
	}
	if dup != nil {
		c.release(msgs)
		return nil, dup
	}
	if b.left = len(b.answers); b.left > 0 {
		c.mu.Lock()
		for id := range b.index {
			if _, seen := c.batches[id]; seen {
				c.mu.Unlock()
				c.release(msgs)
				return nil, invalidRequest(jsonrpc.ID{}, "the batch reuses the id %v of a call not answered yet", id.Raw())
			}
		}
		if c.batches == nil {
			c.batches = map[jsonrpc.ID]*inBatch{}
		}
		for id := range b.index {
			c.batches[id] = b
		}
		b.refused = refused
		c.mu.Unlock()
	} else if len(refused) > 0 {
		// No call of the batch waits for an answer: its refusals go out now.
		if err := c.answers.queue(joinBatch(refused), true); err != nil {
			return nil, err
		}
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	c.queue = msgs[1:]
	return msgs[0], nil
}

// release forgets the calls of a batch the SDK will not see (see
// handOn).
func (c *stdioConn) release(msgs []jsonrpc.Message) {
	if c.quick == nil {
		return
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			c.answered(&jsonrpc.Response{ID: req.ID})
		}
	}
}

// joinBatch is the JSON array of encoded messages.
func joinBatch(parts [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}

// batchParts splits a JSON-RPC batch into its messages, undecoded.
func batchParts(data []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, parseError(err)
		}
		return nil, invalidRequest(jsonrpc.ID{}, "a batch must be an array of messages")
	}
	if len(raws) == 0 {
		return nil, invalidRequest(jsonrpc.ID{}, "empty batch")
	}
	return raws, nil
}

// decodeMessage decodes one JSON-RPC message. Keys are matched exactly
// (encoding/json alone would match them case-insensitively). It fails
// with a *messageError: a parse error for what is not JSON, an invalid
// request (with the message's id when it has a valid one) for JSON that
// is not a JSON-RPC 2.0 message.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, parseError(err)
		}
		return nil, invalidRequest(jsonrpc.ID{}, "a message must be a JSON object")
	}
	var id jsonrpc.ID
	if v, ok := fields["id"]; ok {
		var raw any
		if json.Unmarshal(v, &raw) == nil {
			id, ok = messageID(raw)
		}
		if !ok {
			return nil, invalidRequest(jsonrpc.ID{}, `"id" must be a string or a number`)
		}
	}
	var version string
	if v, ok := fields["jsonrpc"]; ok && json.Unmarshal(v, &version) != nil {
		version = "?"
	}
	if version != "2.0" {
		return nil, invalidRequest(id, `"jsonrpc" must be "2.0"`)
	}
	if m, ok := fields["method"]; ok {
		var method string
		if err := json.Unmarshal(m, &method); err != nil {
			return nil, invalidRequest(id, `"method" must be a string`)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: nullAsAbsent(fields["params"])}, nil
	}
	if !id.IsValid() {
		return nil, invalidRequest(id, `a message needs a "method" (a request) or an "id" (a response)`)
	}
	resp := &jsonrpc.Response{ID: id, Result: nullAsAbsent(fields["result"])}
	if e, ok := fields["error"]; ok && string(e) != "null" {
		var we jsonrpc.Error
		if err := json.Unmarshal(e, &we); err != nil {
			return nil, invalidRequest(id, `"error" must be an error object`)
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
		if b, inBatch := c.answerInBatch(resp); inBatch {
			if b == nil {
				return nil // the batch waits for its other answers
			}
			return c.writeBatch(b)
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
// whether it did, and returns the batch once its answers are all there.
func (c *stdioConn) answerInBatch(resp *jsonrpc.Response) (*inBatch, bool) {
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
	return b, true
}

// writeBatch writes a batch's answers, then the errors of its messages
// that were refused, as one array.
func (c *stdioConn) writeBatch(b *inBatch) error {
	raws := make([][]byte, 0, len(b.answers)+len(b.refused))
	for _, a := range b.answers {
		raw, err := jsonrpc.EncodeMessage(a)
		if err != nil {
			return fmt.Errorf("encoding batch message: %w", err)
		}
		raws = append(raws, raw)
	}
	return c.writeLine(joinBatch(append(raws, b.refused...)))
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
		c.answers.close()
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: a stream has one session, unnamed.
func (c *stdioConn) SessionID() string { return "" }

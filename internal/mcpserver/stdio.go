package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioTransport is the MCP transport over a byte stream (stdin and
// stdout): the go-sdk's mcp.IOTransport (newline-delimited JSON-RPC, one
// message a line; batches before 2025-06-18) behind a line guard.
//
// The guard exists because the SDK's transport ends the session at the
// first line it cannot decode, and holds a line of up to 16 MiB whole. The
// guard reads each line itself (linereader.go): a line longer than
// MaxFrame is dropped as it streams by, never held whole; a line that is
// not a JSON-RPC 2.0 message (decodeMessage) is answered with JSON-RPC's
// error (rpcrefuse.go); a batch the SDK would end the session for (from
// 2025-06-18 on, an id twice, the id of a call of an earlier batch still
// unanswered) is refused the same way. In each case the session goes on.
// Every message the guard lets through reaches the SDK unchanged, a line
// of its own (the guard keeps batches itself: see checkBatch). Refusals
// and the SDK's messages are written whole, one at a time, so that they
// never interleave within a line.
type StdioTransport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxFrame bounds the bytes of one incoming message, its line's end
	// aside (0: DefaultMaxMessageBytes).
	MaxFrame int
}

var _ mcp.Transport = (*StdioTransport)(nil)

// ConnectStdio serves one MCP session over a byte stream (stdin and
// stdout for `serve`) with the StdioTransport.
func (s *Server) ConnectStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) (*mcp.ServerSession, error) {
	return s.mcp.Connect(ctx, s.TaskTransport(&StdioTransport{Reader: r, Writer: w, MaxFrame: s.opts.MaxMessageBytes}), nil)
}

// The protocol version from which JSON-RPC batches are refused.
const noBatchesFrom = "2025-06-18"

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxFrame
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	out := &lineWriter{w: t.Writer}
	g := &stdioGuard{lines: newLineReader(t.Reader, limit), out: out,
		refusals: make(chan []byte, 256), done: make(chan struct{})}
	inner, err := (&mcp.IOTransport{
		Reader: &guardedReader{g: g, src: t.Reader},
		Writer: out,
		// The guard lets no longer line through: a message and its line's end.
		MaxLineLength: limit + 2,
	}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	go g.writeRefusals()
	return &guardedConn{Connection: inner, g: g}, nil
}

// lineWriter writes each message whole: the SDK's transport writes a
// message and its line's end in one Write, and so does the guard.
type lineWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return l.w.Close() }

// guardedReader is what the SDK's transport reads: the lines the guard
// lets through, read and checked on the SDK's reading goroutine (no
// goroutine of the guard's in between, so no hand-off per message).
// Closing it (the session ends) closes the byte stream too.
type guardedReader struct {
	g       *stdioGuard
	src     io.Closer
	pending []byte // what the SDK has yet to read of the lines let through
	err     error  // what ended the stream
}

// Read implements io.Reader; the SDK calls it from one goroutine.
func (r *guardedReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.pending, r.err = r.g.next()
		if r.err != nil {
			close(r.g.refusals) // the last refusals go out, then the writer ends
		}
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// Close implements io.Closer.
func (r *guardedReader) Close() error {
	r.g.closeOnce.Do(func() { close(r.g.done) })
	return r.src.Close()
}

// stdioGuard reads the client's lines, refuses those the SDK must not see
// and hands on the others.
type stdioGuard struct {
	lines     *lineReader
	out       *lineWriter
	refusals  chan []byte   // answers to refused lines, with their line's end; closed when the stream ends
	done      chan struct{} // closed when the transport is
	closeOnce sync.Once

	mu      sync.Mutex
	version string                  // the negotiated protocol version, from the answer to initialize
	initID  jsonrpc.ID              // the initialize call handed on, until answered
	batches map[jsonrpc.ID]*inBatch // open batches by the ids of their calls
}

// next reads lines until some are let through and returns them, each
// with its line's end; it fails with what ends the stream.
func (g *stdioGuard) next() ([]byte, error) {
	for {
		line, err := g.lines.next()
		var tooLong *lineTooLongError
		switch {
		case errors.As(err, &tooLong):
			g.refuse(tooLarge(tooLong.Limit, tooLong.Head))
			continue
		case err != nil:
			return nil, err
		}
		i := firstByte(line)
		if i == len(line) {
			continue // a blank line
		}
		if line[i] != '[' {
			if err := g.check(line); err != nil {
				g.refuse(refusal(err))
				continue
			}
			return append(line, '\n'), nil
		}
		pass, err := g.checkBatch(line)
		if err != nil {
			g.refuse(refusal(err))
			continue
		}
		if len(pass) > 0 {
			return append(bytes.Join(pass, []byte{'\n'}), '\n'), nil
		}
	}
}

// refuse answers a refused line.
func (g *stdioGuard) refuse(e *messageError) { g.send(append(e.answer(), '\n')) }

// send hands an answer of the guard's to writeRefusals (not once the
// transport is closed).
func (g *stdioGuard) send(answer []byte) {
	select {
	case g.refusals <- answer:
	case <-g.done:
	}
}

// writeRefusals writes the refusals apart from the reading, so that a
// client that writes before it reads does not stop the reader (the SDK's
// reader does not wait on the client either). After a failed write the
// rest are dropped: the session is over.
func (g *stdioGuard) writeRefusals() {
	var failed bool
	for {
		select {
		case answer, ok := <-g.refusals:
			if !ok {
				return
			}
			if !failed {
				_, err := g.out.Write(answer)
				failed = err != nil
			}
		case <-g.done:
			return
		}
	}
}

// check checks a line that is one message.
func (g *stdioGuard) check(line []byte) error {
	m, err := decodeMessage(line)
	if err != nil {
		return err
	}
	if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && req.Method == "initialize" {
		g.mu.Lock()
		g.initID = req.ID
		g.mu.Unlock()
	}
	return nil
}

// inBatch is an incoming batch whose calls are not all answered: the
// answers go out together, as one array, in the order of the calls, with
// the errors of its messages that were refused after them.
type inBatch struct {
	index   map[jsonrpc.ID]int
	answers []*jsonrpc.Response
	refused [][]byte
	left    int
}

// checkBatch checks a batch and returns its messages, each to be handed
// on as a line of its own: the guard keeps the batch (guardedConn.Write
// gathers its answers). The SDK's transport is not given the batch: it
// would end the session for a message of it that is not one, and it waits
// for an answer to every request of a batch, notifications included, so
// that a batch with one would never be answered. A message of the batch
// that is not one gets its error among the batch's answers; a batch
// refused as a whole is an error (a *messageError).
func (g *stdioGuard) checkBatch(line []byte) ([][]byte, error) {
	raws, err := batchParts(line)
	if err != nil {
		return nil, err
	}
	var pass [][]byte
	b := &inBatch{index: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		m, err := decodeMessage(raw)
		if err != nil {
			b.refused = append(b.refused, refusal(err).answer())
			continue
		}
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			if _, seen := b.index[req.ID]; seen {
				return nil, invalidRequest(jsonrpc.ID{}, "the id %v is used twice in the batch", req.ID.Raw())
			}
			b.index[req.ID] = len(b.answers)
			b.answers = append(b.answers, nil)
			if req.Method == "initialize" {
				g.mu.Lock()
				g.initID = req.ID
				g.mu.Unlock()
			}
		}
		pass = append(pass, raw)
	}
	if err := g.openBatch(b); err != nil {
		return nil, err
	}
	if b.left == 0 && len(b.refused) > 0 { // nothing waits for an answer: the refusals go out now
		g.send(append(joinBatch(b.refused), '\n'))
	}
	return pass, nil
}

// openBatch records a batch whose calls are to be answered together.
func (g *stdioGuard) openBatch(b *inBatch) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.version >= noBatchesFrom {
		return invalidRequest(jsonrpc.ID{}, "JSON-RPC batching is not supported in %s and later (the session's version: %s)", noBatchesFrom, g.version)
	}
	for id := range b.index {
		if _, seen := g.batches[id]; seen {
			return invalidRequest(jsonrpc.ID{}, "the batch reuses the id %v of a call not answered yet", id.Raw())
		}
	}
	if b.left = len(b.answers); b.left > 0 {
		if g.batches == nil {
			g.batches = map[jsonrpc.ID]*inBatch{}
		}
		for id := range b.index {
			g.batches[id] = b
		}
	}
	return nil
}

// joinBatch is the JSON array of encoded messages.
func joinBatch(parts [][]byte) []byte {
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}

// answered notes the SDK's answer to a call. For a call of a batch it
// reports so, and returns the batch's answers, encoded, once they are all
// there.
func (g *stdioGuard) answered(resp *jsonrpc.Response) (batch []byte, inBatch bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.initID.IsValid() && resp.ID == g.initID {
		g.initID = jsonrpc.ID{}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if resp.Error == nil && json.Unmarshal(resp.Result, &res) == nil {
			g.version = res.ProtocolVersion
		}
	}
	b, ok := g.batches[resp.ID]
	if !ok {
		return nil, false, nil
	}
	delete(g.batches, resp.ID)
	b.answers[b.index[resp.ID]] = resp
	if b.left--; b.left > 0 {
		return nil, true, nil
	}
	raws := make([][]byte, 0, len(b.answers)+len(b.refused))
	for _, a := range b.answers {
		raw, err := jsonrpc.EncodeMessage(a)
		if err != nil {
			return nil, true, fmt.Errorf("encoding batch message: %w", err)
		}
		raws = append(raws, raw)
	}
	return append(joinBatch(append(raws, b.refused...)), '\n'), true, nil
}

// guardedConn is the SDK's connection, with the guard told of the answers
// it writes.
type guardedConn struct {
	mcp.Connection
	g *stdioGuard
}

// Write implements mcp.Connection: the answers to the calls of a batch
// wait for each other, and go out as one array.
func (c *guardedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		batch, inBatch, err := c.g.answered(resp)
		if err != nil || inBatch {
			if err == nil && batch != nil {
				_, err = c.g.out.Write(batch)
			}
			return err
		}
	}
	return c.Connection.Write(ctx, msg)
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The driver of every MCP measurement is this file's client, the same for
// stepwise, the TypeScript peer and the floor server: a JSON-RPC client
// with no SDK, so that what a figure measures is the server. It still does
// what a client must: one request per id, every answer matched to its
// request by id and checked (a JSON-RPC error or a tool result with
// isError fails the load), requests from the server answered. The go-sdk
// client measured earlier cost more per call than the servers it drove
// (against a server doing no work it reached only 0.94–1.18× the
// TypeScript peer with 8 calls in flight): the figures then measured the
// client.

// driverProtocol is the protocol version the driver offers both servers:
// the newest that stepwise and the TypeScript peer both speak, so that
// both receive the same bytes.
const driverProtocol = "2025-11-25"

// Session is a connected MCP client session and the server process behind
// it (none when the server runs in this process).
type Session struct {
	wire     wire
	cmd      *exec.Cmd
	protocol string
	nextID   atomic.Int64
}

// wire carries JSON-RPC messages to a server and answers back.
type wire interface {
	// roundTrip sends the request msg, whose id is id, and returns its
	// answer.
	roundTrip(ctx context.Context, id int64, msg []byte) (envelope, error)
	// notify sends a notification.
	notify(ctx context.Context, msg []byte) error
	// setProtocol tells the wire the negotiated version (HTTP sends it
	// with every later request).
	setProtocol(version string)
	close()
}

// envelope is one JSON-RPC message as the driver reads it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// request is a JSON-RPC request or, without an id, a notification.
type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// connect performs the initialize handshake on w: initialize, then the
// initialized notification.
func connect(ctx context.Context, w wire, cmd *exec.Cmd) (*Session, error) {
	s := &Session{wire: w, cmd: cmd}
	res, err := s.request(ctx, "initialize", map[string]any{
		"protocolVersion": driverProtocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "stepwise-bench", "version": "1"},
	})
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res, &init); err != nil || init.ProtocolVersion == "" {
		return nil, fmt.Errorf("initialize: no protocol version in %s", res)
	}
	s.protocol = init.ProtocolVersion
	w.setProtocol(s.protocol)
	msg, err := json.Marshal(request{JSONRPC: "2.0", Method: "notifications/initialized"})
	if err != nil {
		return nil, err
	}
	if err := w.notify(ctx, msg); err != nil {
		return nil, fmt.Errorf("initialized: %w", err)
	}
	return s, nil
}

// request sends one request and returns its result.
func (s *Session) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := s.nextID.Add(1)
	msg, err := json.Marshal(request{JSONRPC: "2.0", ID: id, Method: method, Params: params})
	if err != nil {
		return nil, err
	}
	env, err := s.wire.roundTrip(ctx, id, msg)
	if err != nil {
		return nil, err
	}
	if env.Error != nil {
		return nil, env.Error
	}
	if len(env.Result) == 0 {
		return nil, fmt.Errorf("%s: answer %s has neither result nor error", method, env.ID)
	}
	return env.Result, nil
}

// Protocol is the protocol version the server chose.
func (s *Session) Protocol() string { return s.protocol }

// Pid is the server's process id.
func (s *Session) Pid() int { return s.cmd.Process.Pid }

// Close ends the session and the server: its input is closed, it gets two
// seconds to exit, then it is killed; it is reaped either way.
func (s *Session) Close() {
	s.wire.close()
	if s.cmd == nil || s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	exited := make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		_ = s.cmd.Process.Kill()
		<-exited
	}
}

// Result is a tool's result as the server sent it.
type Result struct{ raw json.RawMessage }

// call calls a tool and turns a tool error into an error. Only isError is
// decoded on the way: what the caller reads, it decodes (field).
func call(ctx context.Context, cs *Session, name string, args map[string]any) (Result, error) {
	raw, err := cs.request(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	var head struct {
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Result{}, fmt.Errorf("%s: result: %w", name, err)
	}
	if head.IsError {
		var body struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(raw, &body)
		text := ""
		if len(body.Content) > 0 {
			text = body.Content[0].Text
		}
		return Result{}, fmt.Errorf("%s: tool error: %s", name, text)
	}
	return Result{raw: raw}, nil
}

// field reads a string field of a structured tool result; path descends
// into nested objects ("pause", "token").
func field(res Result, path ...string) string {
	var body struct {
		StructuredContent any `json:"structuredContent"`
	}
	if json.Unmarshal(res.raw, &body) != nil {
		return ""
	}
	v := body.StructuredContent
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	s, _ := v.(string)
	return s
}

// stdioWire is a wire over a byte stream: one message a line each way.
type stdioWire struct {
	in      io.WriteCloser
	writeMu sync.Mutex
	out     *bufio.Writer

	mu      sync.Mutex
	waiting map[string]chan envelope // by the id's JSON text
	done    chan struct{}            // closed when the reader stops
	err     error                    // why it stopped
}

// newStdioWire starts reading answers from r; requests go to w.
func newStdioWire(w io.WriteCloser, r io.Reader) *stdioWire {
	s := &stdioWire{in: w, out: bufio.NewWriter(w), waiting: map[string]chan envelope{}, done: make(chan struct{})}
	go s.read(bufio.NewReaderSize(r, 64<<10))
	return s
}

func (s *stdioWire) read(r *bufio.Reader) {
	var err error
	defer func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	}()
	for {
		var line []byte
		if line, err = r.ReadBytes('\n'); err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the server closed its output")
			}
			return
		}
		var env envelope
		if err = json.Unmarshal(line, &env); err != nil {
			err = fmt.Errorf("the server sent %q: %w", line, err)
			return
		}
		switch {
		case env.Method != "" && len(env.ID) > 0:
			// A request from the server: the driver offers no client
			// capabilities, so only ping has an answer.
			answer := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, env.ID)
			if env.Method == "ping" {
				answer = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{}}`, env.ID)
			}
			if err = s.write(answer); err != nil {
				return
			}
		case env.Method != "":
			// A notification (log, progress, list changed): not measured.
		default:
			s.mu.Lock()
			ch := s.waiting[string(env.ID)]
			delete(s.waiting, string(env.ID))
			s.mu.Unlock()
			if ch != nil {
				ch <- env
			}
		}
	}
}

func (s *stdioWire) write(msg []byte) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.out.Write(msg)
	s.out.WriteByte('\n')
	return s.out.Flush()
}

func (s *stdioWire) roundTrip(ctx context.Context, id int64, msg []byte) (envelope, error) {
	key := strconv.FormatInt(id, 10)
	ch := make(chan envelope, 1)
	s.mu.Lock()
	s.waiting[key] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		delete(s.waiting, key)
		s.mu.Unlock()
	}
	if err := s.write(msg); err != nil {
		forget()
		return envelope{}, err
	}
	select {
	case env := <-ch:
		return env, nil
	case <-s.done:
		forget()
		s.mu.Lock()
		defer s.mu.Unlock()
		return envelope{}, s.err
	case <-ctx.Done():
		forget()
		return envelope{}, ctx.Err()
	}
}

func (s *stdioWire) notify(_ context.Context, msg []byte) error { return s.write(msg) }

func (s *stdioWire) setProtocol(string) {}

func (s *stdioWire) close() { _ = s.in.Close() }

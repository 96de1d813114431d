//go:build linux

package hostile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
)

// protocol is the MCP protocol version the client offers.
const protocol = "2025-11-25"

// Message is one JSON-RPC message, as sent or received.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// ToolResult is the result of a tools/call.
type ToolResult struct {
	IsError    bool           `json:"isError"`
	Structured map[string]any `json:"structuredContent"`
}

// ErrorCode is the structured error's error_code ("" when the result is
// not an error).
func (r ToolResult) ErrorCode() string {
	if !r.IsError {
		return ""
	}
	code, _ := r.Structured["error_code"].(string)
	return code
}

// wire carries JSON-RPC messages to one server session and answers back.
type wire interface {
	// roundTrip sends the request msg whose id is id and returns the
	// answer with that id; messages before it are dropped (notifications)
	// or answered (requests from the server).
	roundTrip(ctx context.Context, id string, msg []byte) (Message, error)
	// notify sends a notification (or any message that gets no answer).
	notify(ctx context.Context, msg []byte) error
	close()
}

// Conn is a client session with the server under test. Request and Tool
// serve every case; a case that needs to send what a client should not
// (malformed bytes, headers) uses Stdio or HTTP, one of which is set.
type Conn struct {
	wire   wire
	nextID atomic.Int64
	// Stdio is the session's pipes when the transport is stdio.
	Stdio *StdioWire
	// HTTP is the session's endpoint when the transport is HTTP.
	HTTP *HTTPWire
	// initialized is set once Handshake succeeded.
	initialized bool
}

// Request sends method with params and returns the answer, a result or a
// JSON-RPC error (not a Go error: err is for transport failures).
func (c *Conn) Request(ctx context.Context, method string, params any) (Message, error) {
	id := strconv.FormatInt(c.nextID.Add(1), 10)
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id), method, params})
	if err != nil {
		return Message{}, err
	}
	return c.wire.roundTrip(ctx, id, msg)
}

// Notify sends a notification.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	msg, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{"2.0", method, params})
	if err != nil {
		return err
	}
	return c.wire.notify(ctx, msg)
}

// Tool calls a tool. A JSON-RPC error comes back as err (an *RPCError).
func (c *Conn) Tool(ctx context.Context, name string, args any) (ToolResult, error) {
	m, err := c.Request(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return ToolResult{}, err
	}
	if m.Error != nil {
		return ToolResult{}, m.Error
	}
	var r ToolResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return ToolResult{}, fmt.Errorf("tools/call %s: result %.200s: %w", name, m.Result, err)
	}
	return r, nil
}

// Handshake performs initialize and the initialized notification (the
// harness does, unless the case says NoHandshake).
func (c *Conn) Handshake(ctx context.Context) error {
	m, err := c.Request(ctx, "initialize", map[string]any{
		"protocolVersion": protocol,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "hostile", "version": "1"},
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if m.Error != nil {
		return fmt.Errorf("initialize: %w", m.Error)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if c.HTTP != nil {
		c.HTTP.Protocol = res.ProtocolVersion
	}
	if err := c.Notify(ctx, "notifications/initialized", nil); err != nil {
		return err
	}
	c.initialized = true
	return nil
}

// StdioWire is newline-delimited JSON over the server's stdin and stdout.
type StdioWire struct {
	mu  sync.Mutex // serializes writes
	in  io.WriteCloser
	out chan Message
	// done is closed when the server's stdout ends; err says why.
	done chan struct{}
	err  error
	// quit is closed when the client leaves: the reader stops delivering.
	quit     chan struct{}
	quitOnce sync.Once
}

func newStdioWire(in io.WriteCloser, out io.Reader) *StdioWire {
	w := &StdioWire{in: in, out: make(chan Message, 64), done: make(chan struct{}), quit: make(chan struct{})}
	go w.read(bufio.NewReaderSize(out, 1<<16))
	return w
}

// read decodes the server's messages until its stdout ends. A line that
// is not JSON-RPC ends the session: stdout is reserved for the protocol.
func (w *StdioWire) read(r *bufio.Reader) {
	defer close(w.done)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m Message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				w.err = fmt.Errorf("server wrote a line that is not JSON-RPC: %.200q", line)
				return
			}
			if m.Method != "" && len(m.ID) > 0 {
				// A request from the server: this client offers no
				// capabilities, so it has none to serve.
				answer, _ := json.Marshal(Message{JSONRPC: "2.0", ID: m.ID, Error: &RPCError{Code: -32601, Message: "method not found"}})
				go func() { _ = w.WriteRaw(context.Background(), append(answer, '\n')) }()
				continue
			}
			select {
			case w.out <- m:
			case <-w.quit:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				w.err = err
			} else {
				w.err = errors.New("server closed its stdout")
			}
			return
		}
	}
}

// WriteRaw writes b to the server's stdin as it is. A server that stops
// reading blocks the write: ctx bounds the wait (the write itself ends
// when the server is stopped).
func (w *StdioWire) WriteRaw(ctx context.Context, b []byte) error {
	done := make(chan error, 1)
	go func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, err := w.in.Write(b)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("writing %d bytes: %w", len(b), ctx.Err())
	}
}

// Next returns the server's next message that is not a notification.
func (w *StdioWire) Next(ctx context.Context) (Message, error) {
	for {
		select {
		case m := <-w.out:
			if m.Method != "" {
				continue // a notification: progress, log messages, list changes
			}
			return m, nil
		case <-w.done:
			select {
			case m := <-w.out:
				if m.Method != "" {
					continue
				}
				return m, nil
			default:
			}
			return Message{}, w.err
		case <-ctx.Done():
			return Message{}, fmt.Errorf("no answer: %w", ctx.Err())
		}
	}
}

func (w *StdioWire) roundTrip(ctx context.Context, id string, msg []byte) (Message, error) {
	if err := w.WriteRaw(ctx, append(msg, '\n')); err != nil {
		return Message{}, err
	}
	for {
		m, err := w.Next(ctx)
		if err != nil {
			return Message{}, err
		}
		if string(m.ID) == id {
			return m, nil
		}
	}
}

func (w *StdioWire) notify(ctx context.Context, msg []byte) error {
	return w.WriteRaw(ctx, append(msg, '\n'))
}

// close closes the server's stdin (a stdio server exits at its end) and
// stops delivering its messages.
func (w *StdioWire) close() {
	w.quitOnce.Do(func() { close(w.quit) })
	_ = w.in.Close()
}

// HTTPWire is streamable HTTP: each message a POST to URL, its answer the
// response body (application/json, or an event stream).
type HTTPWire struct {
	// URL is the MCP endpoint.
	URL    string
	Client *http.Client
	// Session is the Mcp-Session-Id from the answer to initialize.
	Session string
	// Protocol is the negotiated version, sent with every later request.
	Protocol string
	// Token is the bearer token sent with every request, if any.
	Token string
}

func newHTTPWire(url string) *HTTPWire {
	return &HTTPWire{URL: url, Client: &http.Client{Transport: &http.Transport{DisableCompression: true}}}
}

// Post sends body as a POST with the session's headers (and header's);
// the caller closes the response.
func (h *HTTPWire) Post(ctx context.Context, body []byte, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.Session != "" {
		req.Header.Set("Mcp-Session-Id", h.Session)
	}
	if h.Protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", h.Protocol)
	}
	if h.Token != "" {
		req.Header.Set("Authorization", "Bearer "+h.Token)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return h.Client.Do(req)
}

func (h *HTTPWire) roundTrip(ctx context.Context, id string, msg []byte) (Message, error) {
	res, err := h.Post(ctx, msg, nil)
	if err != nil {
		return Message{}, err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return Message{}, fmt.Errorf("POST %s: %s: %s", h.URL, res.Status, bytes.TrimSpace(body))
	}
	if s := res.Header.Get("Mcp-Session-Id"); s != "" && h.Session == "" {
		h.Session = s
	}
	ct, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if ct != "text/event-stream" {
		var m Message
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			return Message{}, fmt.Errorf("answer to %s: %w", id, err)
		}
		return m, nil
	}
	return readStream(bufio.NewReader(res.Body), id)
}

// readStream reads server-sent events until the answer with id want.
func readStream(r *bufio.Reader, want string) (Message, error) {
	var data []byte
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return Message{}, fmt.Errorf("stream ended before the answer to %s: %w", want, err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(rest, []byte(" "))...)
			continue
		}
		if len(line) != 0 || len(data) == 0 {
			continue
		}
		var m Message
		if err := json.Unmarshal(data, &m); err != nil {
			return Message{}, fmt.Errorf("event %.200q: %w", data, err)
		}
		data = data[:0]
		if m.Method == "" && string(m.ID) == want {
			return m, nil
		}
	}
}

func (h *HTTPWire) notify(ctx context.Context, msg []byte) error {
	res, err := h.Post(ctx, msg, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20))
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s", h.URL, res.Status)
	}
	return nil
}

func (h *HTTPWire) close() { h.Client.CloseIdleConnections() }

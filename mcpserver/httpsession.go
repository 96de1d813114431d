package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// streamSession is one MCP session over streamable HTTP: the mcp.Server's
// Transport and Connection (it reads what POSTs bring and writes to their
// streams) and the streams themselves.
type streamSession struct {
	h    *httpTransport
	id   string
	user string // the token user that opened it ("" without tokens)
	ss   *mcp.ServerSession

	in        chan jsonrpc.Message
	done      chan struct{} // closed when the session ends
	closeOnce sync.Once

	mu sync.Mutex
	// calls maps the calls in flight to the stream their answer goes to;
	// related maps each call's RequestExtra (which the mcp.Server hands to
	// its handler, see relateToCall) to the same stream, so that what a
	// handler sends during the call (a question, progress) goes there too.
	calls      map[jsonrpc.ID]*httpCall
	related    map[*mcp.RequestExtra]*sseStream
	standalone *sseStream // the GET stream, when one is open
	active     int        // requests being served: the idle timer waits for none
	idleTimer  *time.Timer
}

// httpCall is a call in flight.
type httpCall struct {
	stream *sseStream
	extra  *mcp.RequestExtra
}

func newStreamSession(h *httpTransport, id string) *streamSession {
	return &streamSession{h: h, id: id, in: make(chan jsonrpc.Message, 16), done: make(chan struct{}),
		calls: map[jsonrpc.ID]*httpCall{}, related: map[*mcp.RequestExtra]*sseStream{}}
}

// Connect implements mcp.Transport: the session is its own connection.
func (s *streamSession) Connect(context.Context) (mcp.Connection, error) { return s, nil }

// SupportsProtocolVersion implements mcp.ProtocolVersionSupporter: a
// stateful session does not serve SEP-2575's stateless protocol, so
// server/discover does not offer it and a go-sdk client falls back to
// initialize.
func (s *streamSession) SupportsProtocolVersion(v string) bool { return v < statelessProtocol }

// Read implements mcp.Connection.
func (s *streamSession) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-s.in:
		return m, nil
	case <-s.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write implements mcp.Connection: an answer goes to the stream of its
// call; anything else the server sends goes to the stream of the call it
// was sent during, or else to the GET stream. With neither open, it is
// dropped, as the go-sdk drops it without an event store.
func (s *streamSession) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := encodeMessage(msg)
	if err != nil {
		return err
	}
	var st *sseStream
	answer := false
	s.mu.Lock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if c := s.calls[resp.ID]; c != nil {
			st, answer = c.stream, true
			delete(s.calls, resp.ID)
			delete(s.related, c.extra)
		}
	} else {
		if extra, ok := ctx.Value(callExtraKey{}).(*mcp.RequestExtra); ok {
			st = s.related[extra]
		}
		if st == nil {
			st = s.standalone
		}
	}
	s.mu.Unlock()
	if st != nil {
		st.send(data, answer)
	}
	return nil
}

// Close implements mcp.Connection.
func (s *streamSession) Close() error {
	s.close()
	return nil
}

// SessionID implements mcp.Connection.
func (s *streamSession) SessionID() string { return s.id }

// close ends the session: its streams end, the server's session with them.
func (s *streamSession) close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.h.forget(s.id)
		s.mu.Lock()
		if s.idleTimer != nil {
			s.idleTimer.Stop()
		}
		s.mu.Unlock()
		if s.ss != nil {
			go s.ss.Close() // it closes this connection again: not under closeOnce
		}
	})
}

// begin and end bracket a request; idle starts the idle timer when no
// request is being served.
func (s *streamSession) begin() {
	s.mu.Lock()
	s.active++
	if s.idleTimer != nil {
		s.idleTimer.Stop()
	}
	s.mu.Unlock()
}

func (s *streamSession) end() {
	s.mu.Lock()
	s.active--
	s.mu.Unlock()
	s.idle()
}

func (s *streamSession) idle() {
	if s.h.timeout <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return
	}
	if s.idleTimer == nil {
		s.idleTimer = time.AfterFunc(s.h.timeout, s.close)
		return
	}
	s.idleTimer.Reset(s.h.timeout)
}

// servePOST hands a POST's messages to the server and, when they hold
// calls, streams their answers (and whatever the server sends during
// them) as server-sent events until every call is answered.
func (s *streamSession) servePOST(w http.ResponseWriter, r *http.Request, version string, opened bool) {
	s.begin()
	defer s.end()
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	msgs, batch, err := decodeBody(body)
	if err != nil {
		writeRefusal(w, http.StatusBadRequest, refusal(err))
		return
	}
	effective := version
	if effective == "" {
		effective = defaultProtocol
	}
	if batch && effective >= noBatchesFrom {
		writeRefusal(w, http.StatusBadRequest, invalidRequest(jsonrpc.ID{},
			"JSON-RPC batching is not supported in %s and later (request version: %s)", noBatchesFrom, effective))
		return
	}
	ti := auth.TokenInfoFromContext(r.Context())
	var calls []*jsonrpc.Request
	initialize := false
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if req.IsCall() {
			if !statefulAccepts(w, req, version) {
				return
			}
			calls = append(calls, req)
		}
		initialize = initialize || req.Method == "initialize"
		req.Extra = &mcp.RequestExtra{TokenInfo: ti, Header: r.Header}
	}
	if len(calls) == 0 {
		if !s.deliver(msgs) {
			http.Error(w, "session is closing", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	st := newSSEStream(w, len(calls))
	s.mu.Lock()
	for _, c := range calls {
		if _, dup := s.calls[c.ID]; dup {
			s.mu.Unlock()
			writeRPCError(w, http.StatusBadRequest, c.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("duplicate in-flight request ID %v", c.ID.Raw())})
			return
		}
	}
	for _, c := range calls {
		extra := c.Extra.(*mcp.RequestExtra)
		s.calls[c.ID] = &httpCall{stream: st, extra: extra}
		s.related[extra] = st
	}
	s.mu.Unlock()
	sseHeaders(w)
	if opened && initialize {
		w.Header().Set(headerSession, s.id)
	}
	if s.deliver(msgs) {
		select {
		case <-st.done:
		case <-r.Context().Done():
		case <-s.done:
		}
	}
	st.end()
	s.mu.Lock()
	for _, c := range calls {
		if hc := s.calls[c.ID]; hc != nil && hc.stream == st {
			delete(s.calls, c.ID)
			delete(s.related, hc.extra)
		}
	}
	s.mu.Unlock()
}

// deliver hands msgs to the server, in order; false when the session ended
// first.
func (s *streamSession) deliver(msgs []jsonrpc.Message) bool {
	for _, m := range msgs {
		select {
		case s.in <- m:
		case <-s.done:
			return false
		}
	}
	return true
}

// serveGET keeps the session's standalone stream open until the client
// leaves or the session ends. One at a time. An open stream does not keep
// the session from ending when idle (as with the go-sdk's transport): a
// client that only listens and is gone without closing its connection
// would keep it forever.
func (s *streamSession) serveGET(w http.ResponseWriter, r *http.Request) {
	st := newSSEStream(w, 0)
	s.mu.Lock()
	if s.standalone != nil {
		s.mu.Unlock()
		http.Error(w, "Conflict: the session's stream is already open", http.StatusConflict)
		return
	}
	s.standalone = st
	s.mu.Unlock()
	sseHeaders(w)
	st.open()
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
	st.end()
	s.mu.Lock()
	if s.standalone == st {
		s.standalone = nil
	}
	s.mu.Unlock()
}

// statefulAccepts applies what a stateful server answers to SEP-2575's
// stateless protocol: a call that uses it (by header, or by
// `_meta.protocolVersion`) is refused with the versions this server speaks
// (a go-sdk client then falls back to initialize), server/discover aside,
// whose header and `_meta` must agree. It answers the POST when it refuses.
func statefulAccepts(w http.ResponseWriter, req *jsonrpc.Request, version string) bool {
	meta := metaProtocol(req.Params)
	if version < statelessProtocol && meta == "" {
		return true
	}
	if req.Method != methodDiscover {
		requested := version
		if requested == "" {
			requested = meta
		}
		legacy := slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= statelessProtocol })
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: legacy, Requested: requested})
		writeRPCError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion,
			Message: fmt.Sprintf("protocol version %q is not supported by this server", requested), Data: data})
		return false
	}
	switch {
	case version == "":
		writeRPCError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: fmt.Sprintf("%s header is required for requests carrying %q", headerProtocol, mcp.MetaKeyProtocolVersion)})
	case meta == "":
		writeRPCError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("missing or invalid _meta field %q", mcp.MetaKeyProtocolVersion)})
	case meta != version:
		writeRPCError(w, http.StatusBadRequest, req.ID, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch,
			Message: fmt.Sprintf("%s header %q does not match request %s %q", headerProtocol, version, mcp.MetaKeyProtocolVersion, meta)})
	default:
		return true
	}
	return false
}

// metaProtocol is the protocol version a request names in its `_meta`
// (mcp.MetaKeyProtocolVersion; "" without one).
// Parameters without `_meta` are not decoded.
func metaProtocol(params json.RawMessage) string {
	if !bytes.Contains(params, []byte(`"_meta"`)) {
		return ""
	}
	var p struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v
}

// decodeBody decodes a POST's message, or the messages of a batch; it
// fails with a *messageError (for a batch, that of its first message that
// is not one: the POST is refused whole).
func decodeBody(body []byte) ([]jsonrpc.Message, bool, error) {
	if i := firstByte(body); i < len(body) && body[i] == '[' {
		raws, err := batchParts(body)
		if err != nil {
			return nil, true, err
		}
		msgs := make([]jsonrpc.Message, 0, len(raws))
		for _, raw := range raws {
			m, err := decodeMessage(raw)
			if err != nil {
				return nil, true, err
			}
			msgs = append(msgs, m)
		}
		return msgs, true, nil
	}
	m, err := decodeMessage(body)
	if err != nil {
		return nil, false, err
	}
	return []jsonrpc.Message{m}, false, nil
}

// callExtraKey carries, in a handler's context, the RequestExtra of the
// call being handled: Write finds the call's stream by it.
type callExtraKey struct{}

// relateToCall is a receiving middleware: it puts each request's
// RequestExtra into its handler's context, so that what the handler sends
// during the call (a question, progress, a log line) is written to the
// call's stream.
func relateToCall(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if extra := req.GetExtra(); extra != nil {
			ctx = context.WithValue(ctx, callExtraKey{}, extra)
		}
		return next(ctx, method, req)
	}
}

package mcptasks

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk (v1.8.0) has no public way to send a custom notification
// (go-sdk issue #745), and its subscriptions/listen drops the fields it
// does not know (notifications.taskIds) and answers at once a listen that
// asks for nothing it knows. WithNotifications does the extension's part
// of subscriptions/listen on the transport instead, below the SDK: it
// works on any transport whose connection the application creates (stdio,
// in-memory, a command's pipes), not on the SDK's streamable HTTP
// handler, which makes its connections itself.

// Watcher is a Handler that can tell when tasks may have changed.
type Watcher interface {
	Handler
	// Watch calls changed with each task's id once it watches the tasks
	// (so that their state is sent from there on: no change is missed
	// between), then whenever a task may have changed, until ctx is done
	// (it returns then).
	Watch(ctx context.Context, taskIDs []string, changed func(taskID string))
}

// WithNotifications wraps t so that a subscriptions/listen naming
// notifications.taskIds gets notifications/tasks on its stream: the
// acknowledgement lists the task ids known to w, each task's state is
// sent at once and again at each change (a complete DetailedTask, as
// tasks/get gives it), until the client cancels the listen. A listen with
// task ids from a client that did not declare the extension on it is
// answered -32021, as the extension requires. Everything else passes
// through untouched.
func WithNotifications(t mcp.Transport, w Watcher) mcp.Transport {
	return &notifyTransport{inner: t, w: w}
}

type notifyTransport struct {
	inner mcp.Transport
	w     Watcher
}

func (t *notifyTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &notifyConn{Connection: c, w: t.w, listens: map[jsonrpc.ID]*listen{}}, nil
}

// listen is one subscriptions/listen stream that asked for tasks.
type listen struct {
	id     jsonrpc.ID
	tasks  []string
	ctx    context.Context
	cancel context.CancelFunc
	held   *jsonrpc.Response // the SDK's answer, held while the stream is on
	last   map[string][]byte // what was sent of each task last
	sendMu sync.Mutex
}

type notifyConn struct {
	mcp.Connection
	w       Watcher
	mu      sync.Mutex
	listens map[jsonrpc.ID]*listen
}

// listenParams are the parts of subscriptions/listen's parameters the
// extension reads.
type listenParams struct {
	Meta          map[string]any `json:"_meta"`
	Notifications struct {
		TaskIDs []string `json:"taskIds"`
	} `json:"notifications"`
}

func (c *notifyConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		switch req.Method {
		case "subscriptions/listen":
			if c.listen(ctx, req) {
				continue // answered here
			}
		case "notifications/cancelled":
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					c.end(ctx, id)
				}
			}
		}
		return msg, nil
	}
}

// listen takes note of a listen asking for tasks; it reports whether it
// answered the request itself (-32021).
func (c *notifyConn) listen(ctx context.Context, req *jsonrpc.Request) bool {
	var p listenParams
	if !req.ID.IsValid() || json.Unmarshal(req.Params, &p) != nil || len(p.Notifications.TaskIDs) == 0 {
		return false
	}
	if !declaresIn(p.Meta) {
		_ = c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: MissingCapability()})
		return true
	}
	l := &listen{id: req.ID, last: map[string][]byte{}}
	for _, id := range p.Notifications.TaskIDs {
		if _, err := c.w.Get(ctx, id); err == nil {
			l.tasks = append(l.tasks, id)
		}
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	c.mu.Lock()
	c.listens[req.ID] = l
	c.mu.Unlock()
	return false
}

// declaresIn reports whether a request's _meta declares the extension.
func declaresIn(meta map[string]any) bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[Extension]
	return ok
}

// end stops the listen id (the client canceled it) and sends the SDK's
// answer if it was held.
func (c *notifyConn) end(ctx context.Context, id jsonrpc.ID) {
	c.mu.Lock()
	l := c.listens[id]
	delete(c.listens, id)
	c.mu.Unlock()
	if l == nil {
		return
	}
	l.cancel()
	l.sendMu.Lock()
	held := l.held
	l.held = nil
	l.sendMu.Unlock()
	if held != nil {
		_ = c.Connection.Write(ctx, held)
	}
}

func (c *notifyConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "notifications/subscriptions/acknowledged" {
			return c.acknowledge(ctx, m)
		}
	case *jsonrpc.Response:
		c.mu.Lock()
		l := c.listens[m.ID]
		c.mu.Unlock()
		switch {
		case l != nil && m.Error == nil:
			// The SDK answered a listen it had nothing for: the stream
			// stays open for the tasks until the client cancels it.
			l.sendMu.Lock()
			l.held = m
			l.sendMu.Unlock()
			return nil
		case l != nil: // the SDK refused the listen: nothing to send
			c.mu.Lock()
			delete(c.listens, m.ID)
			c.mu.Unlock()
			l.cancel()
		}
	}
	return c.Connection.Write(ctx, msg)
}

// acknowledge adds the accepted task ids to a listen's acknowledgement,
// then starts sending the tasks' states.
func (c *notifyConn) acknowledge(ctx context.Context, m *jsonrpc.Request) error {
	var p map[string]any
	if json.Unmarshal(m.Params, &p) != nil {
		return c.Connection.Write(ctx, m)
	}
	meta, _ := p["_meta"].(map[string]any)
	id, err := jsonrpc.MakeID(meta[mcp.MetaKeySubscriptionID])
	if err != nil {
		return c.Connection.Write(ctx, m)
	}
	c.mu.Lock()
	l := c.listens[id]
	c.mu.Unlock()
	if l == nil {
		return c.Connection.Write(ctx, m)
	}
	n, _ := p["notifications"].(map[string]any)
	if n == nil {
		n = map[string]any{}
	}
	n["taskIds"] = append([]string{}, l.tasks...)
	p["notifications"] = n
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := c.Connection.Write(ctx, &jsonrpc.Request{Method: m.Method, Params: b}); err != nil {
		return err
	}
	go c.w.Watch(l.ctx, l.tasks, func(t string) { c.send(l, t) })
	return nil
}

// notifyParams are notifications/tasks' parameters: the task as tasks/get
// gives it, on the listen's stream.
type notifyParams struct {
	Meta map[string]any `json:"_meta,omitempty"`
	DetailedTask
}

// send sends the task's state unless it is what was sent last.
func (c *notifyConn) send(l *listen, taskID string) {
	if l.ctx.Err() != nil {
		return
	}
	t, err := c.w.Get(l.ctx, taskID)
	if err != nil {
		return
	}
	same := *t
	same.LastUpdatedAt = ""
	key, _ := json.Marshal(same)
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	if bytes.Equal(l.last[taskID], key) || l.ctx.Err() != nil {
		return
	}
	l.last[taskID] = key
	b, err := json.Marshal(notifyParams{Meta: map[string]any{mcp.MetaKeySubscriptionID: l.id.Raw()}, DetailedTask: *t})
	if err != nil {
		return
	}
	_ = c.Connection.Write(l.ctx, &jsonrpc.Request{Method: NotificationStatus, Params: b})
}

func (c *notifyConn) Close() error {
	c.mu.Lock()
	for id, l := range c.listens {
		l.cancel()
		delete(c.listens, id)
	}
	c.mu.Unlock()
	return c.Connection.Close()
}

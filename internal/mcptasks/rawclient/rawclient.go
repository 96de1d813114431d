// Package rawclient is a JSON-RPC client for tests of the Tasks extension:
// it speaks 2026-07-28 requests, each carrying its own capabilities in
// _meta, on a connection it writes to directly, so that a test sees the
// wire as the server sends it (no SDK client in between).
package rawclient

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client sends requests on Conn and reads their answers. Messages read
// that answer no pending call (notifications, server requests) are kept in
// Other, in order.
type Client struct {
	T    testing.TB
	Conn mcp.Connection
	// Caps are the client capabilities every request declares (nil: none);
	// Declared are added to them when a call declares (e.g. an extension).
	Caps, Declared map[string]any
	Other          []jsonrpc.Message

	n int
}

// Connect serves srv over in-memory transports (the server's end through
// wrap, when not nil) and returns a client on the other end; both are
// closed when the test ends.
func Connect(t testing.TB, srv *mcp.Server, wrap func(mcp.Transport) mcp.Transport) *Client {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	var server mcp.Transport = st
	if wrap != nil {
		server = wrap(st)
	}
	ss, err := srv.Connect(context.Background(), server, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); _ = ss.Close() })
	return &Client{T: t, Conn: conn}
}

// Call sends method with params (a map; _meta is added) and returns its
// result or its JSON-RPC error.
func (c *Client) Call(method string, params map[string]any, declare bool) (map[string]any, *jsonrpc.Error) {
	c.T.Helper()
	return c.Await(method, c.Send(method, params, declare))
}

// OK is Call with the declared capabilities, failing the test on an error.
func (c *Client) OK(method string, params map[string]any) map[string]any {
	c.T.Helper()
	out, we := c.Call(method, params, true)
	if we != nil {
		c.T.Fatalf("%s: error %d %s", method, we.Code, we.Message)
	}
	return out
}

// Send writes a request and returns its id.
func (c *Client) Send(method string, params map[string]any, declare bool) jsonrpc.ID {
	c.T.Helper()
	caps := map[string]any{}
	for k, v := range c.Caps {
		caps[k] = v
	}
	if declare {
		for k, v := range c.Declared {
			caps[k] = v
		}
	}
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw", "version": "1"},
		mcp.MetaKeyClientCapabilities: caps,
	}
	b, err := json.Marshal(params)
	if err != nil {
		c.T.Fatal(err)
	}
	c.n++
	id, _ := jsonrpc.MakeID(float64(c.n))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: b}); err != nil {
		c.T.Fatal(err)
	}
	return id
}

// Await reads up to the answer to id, keeping what else comes in Other.
func (c *Client) Await(method string, id jsonrpc.ID) (map[string]any, *jsonrpc.Error) {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		msg, err := c.Conn.Read(ctx)
		if err != nil {
			c.T.Fatalf("%s: %v", method, err)
		}
		resp, ok := msg.(*jsonrpc.Response)
		if !ok || resp.ID != id {
			c.Other = append(c.Other, msg)
			continue
		}
		if resp.Error != nil {
			var we *jsonrpc.Error
			if !errors.As(resp.Error, &we) {
				c.T.Fatalf("%s: %v", method, resp.Error)
			}
			return nil, we
		}
		var out map[string]any
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			c.T.Fatal(err)
		}
		return out, nil
	}
}

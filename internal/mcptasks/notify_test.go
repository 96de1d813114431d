package mcptasks_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/mcptasks"
)

// next reads messages (those read before first) until one satisfies ok.
func (r *raw) next(ok func(jsonrpc.Message) bool) jsonrpc.Message {
	r.T.Helper()
	for len(r.Other) > 0 {
		m := r.Other[0]
		r.Other = r.Other[1:]
		if ok(m) {
			return m
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		m, err := r.Conn.Read(ctx)
		if err != nil {
			r.T.Fatal(err)
		}
		if ok(m) {
			return m
		}
	}
}

func notification(method string) func(jsonrpc.Message) bool {
	return func(m jsonrpc.Message) bool {
		req, ok := m.(*jsonrpc.Request)
		return ok && !req.ID.IsValid() && req.Method == method
	}
}

func params(t *testing.T, m jsonrpc.Message) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(m.(*jsonrpc.Request).Params, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestListenForTasks: a subscriptions/listen naming tasks is acknowledged
// with the known ones, gets each task's state and its changes as
// notifications/tasks, and stays open until the client cancels it.
func TestListenForTasks(t *testing.T) {
	s, j := newServer(t)
	c := connectRawOver(t, s, func(tr mcp.Transport) mcp.Transport { return mcptasks.WithNotifications(tr, j) })
	id := c.OK("tools/call", map[string]any{"name": "hello"})["taskId"].(string)

	listenID := c.Send("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{id, "unknown"}}}, true)
	ack := params(t, c.next(notification("notifications/subscriptions/acknowledged")))
	ids, _ := ack["notifications"].(map[string]any)["taskIds"].([]any)
	if len(ids) != 1 || ids[0] != id {
		t.Fatalf("acknowledged: %v", ack)
	}
	first := params(t, c.next(notification(mcptasks.NotificationStatus)))
	if first["taskId"] != id || first["status"] != "input_required" || first["inputRequests"] == nil {
		t.Fatalf("the first notification: %v", first)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}})
	done := params(t, c.next(notification(mcptasks.NotificationStatus)))
	if done["status"] != "completed" || done["result"] == nil {
		t.Fatalf("the notification of the change: %v", done)
	}
	for _, m := range c.Other {
		if resp, ok := m.(*jsonrpc.Response); ok && resp.ID == listenID {
			t.Fatalf("the listen was answered while it listened: %v", resp)
		}
	}
	cancelled, _ := json.Marshal(map[string]any{"requestId": listenID.Raw()})
	if err := c.Conn.Write(context.Background(), &jsonrpc.Request{Method: "notifications/cancelled", Params: cancelled}); err != nil {
		t.Fatal(err)
	}
	c.next(func(m jsonrpc.Message) bool {
		resp, ok := m.(*jsonrpc.Response)
		return ok && resp.ID == listenID
	})
}

// TestListenForTasksNotDeclared: task notifications for a client that did
// not declare the extension are -32021.
func TestListenForTasksNotDeclared(t *testing.T) {
	s, j := newServer(t)
	c := connectRawOver(t, s, func(tr mcp.Transport) mcp.Transport { return mcptasks.WithNotifications(tr, j) })
	_, we := c.Call("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{"job-1"}}}, false)
	if we == nil || we.Code != mcp.CodeMissingRequiredClientCapabilities {
		t.Fatalf("want -32021, got %v", we)
	}
}

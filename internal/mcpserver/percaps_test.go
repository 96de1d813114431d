package mcpserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// rawCall sends one JSON-RPC request over conn and returns its response's
// result (decoded), skipping notifications.
func rawCall(t *testing.T, conn mcp.Connection, id int64, method string, params string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + jsonInt(id) + `,"method":"` + method + `","params":` + params + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(ctx, msg); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		resp, ok := m.(*jsonrpc.Response)
		if !ok {
			continue
		}
		if resp.Error != nil {
			t.Fatalf("%s: %v", method, resp.Error)
		}
		var out map[string]any
		if err := json.Unmarshal(resp.Result, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
}

// rawConnection is the client end of an in-memory session with e's server,
// for requests written by hand (no initialize: 2026-07-28 requests carry
// their _meta).
func rawConnection(t *testing.T, e *env) mcp.Connection {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); _ = ss.Wait() })
	return conn
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestCapabilitiesArePerRequest: from protocol 2026-07-28 a client's
// capabilities travel with each request, and one connection may declare
// elicitation on one call and not on the next: the question is put to the
// person (inputRequests) only on the call that declared it.
func TestCapabilitiesArePerRequest(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	conn := rawConnection(t, e)
	meta := func(caps string) string {
		return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	}
	start := func(id int64, caps string) map[string]any {
		return rawCall(t, conn, id, "tools/call", `{"name":"run_start","arguments":{"workflow":"greet","wait_seconds":10},`+meta(caps)+`}`)
	}
	asked := start(1, `{"elicitation":{"form":{}}}`)
	if asked["resultType"] != "input_required" || asked["inputRequests"] == nil {
		t.Fatalf("with elicitation declared on the request: %v", asked)
	}
	plain := start(2, `{}`)
	if plain["resultType"] == "input_required" || plain["inputRequests"] != nil {
		t.Fatalf("without elicitation on the request: %v", plain)
	}
	sc, _ := plain["structuredContent"].(map[string]any)
	if sc["status"] != "waiting" || sc["pause"] == nil {
		t.Fatalf("the pause goes to the agent: %v", plain)
	}
}

// TestTaskNeedsElicitation: a client that declares the Tasks extension but
// not elicitation could not answer a task's input requests (questions and
// agent steps come as forms): it gets the run's result, whose pause the
// agent answers with run_continue.
func TestTaskNeedsElicitation(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	conn := rawConnection(t, e)
	call := func(id int64, caps string) map[string]any {
		return rawCall(t, conn, id, "tools/call", `{"name":"run_start","arguments":{"workflow":"greet","wait_seconds":10},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":`+caps+`}}`)
	}
	if r := call(1, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`); r["resultType"] == "task" || r["taskId"] != nil {
		t.Fatalf("a task for a client that cannot elicit: %v", r)
	} else if sc, _ := r["structuredContent"].(map[string]any); sc["pause"] == nil {
		t.Fatalf("want the run's pause: %v", r)
	}
	if r := call(2, `{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`); r["resultType"] != "task" || r["taskId"] == nil {
		t.Fatalf("want a task for a client that declared both: %v", r)
	}
}

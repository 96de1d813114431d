package mcptasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/mcptasks"
	"stepwise.dev/stepwise/internal/mcptasks/rawclient"
)

// jobs is a toy application: a tool call becomes a job that asks one
// question ("name") and completes with a greeting.
type jobs struct {
	mu       sync.Mutex
	tasks    map[string]*mcptasks.DetailedTask
	n        int
	watchers []func(string)
}

// Watch implements mcptasks.Watcher.
func (j *jobs) Watch(ctx context.Context, ids []string, changed func(string)) {
	j.mu.Lock()
	j.watchers = append(j.watchers, changed)
	j.mu.Unlock()
	for _, id := range ids {
		changed(id)
	}
	<-ctx.Done()
}

// changed tells the watchers; j.mu is held.
func (j *jobs) changed(id string) {
	for _, w := range j.watchers {
		go w(id)
	}
}

func (j *jobs) Get(_ context.Context, id string) (*mcptasks.DetailedTask, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	t, ok := j.tasks[id]
	if !ok {
		return nil, mcptasks.ErrUnknownTask
	}
	c := *t
	return &c, nil
}

func (j *jobs) Update(_ context.Context, id string, rs mcp.InputResponseMap) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	t, ok := j.tasks[id]
	if !ok {
		return mcptasks.ErrUnknownTask
	}
	er, ok := rs["name"].(*mcp.ElicitResult)
	if t.Status != mcptasks.InputRequired || !ok || er.Action != "accept" {
		return nil // not outstanding: ignored
	}
	t.Status, t.InputRequests = mcptasks.Completed, nil
	t.Result = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Hello, %v!", er.Content["name"])}}}
	j.changed(id)
	return nil
}

func (j *jobs) Cancel(_ context.Context, id string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	t, ok := j.tasks[id]
	if !ok {
		return mcptasks.ErrUnknownTask
	}
	t.Status, t.InputRequests = mcptasks.Cancelled, nil
	return nil
}

func newServer(t *testing.T) (*mcp.Server, *jobs) {
	t.Helper()
	j := &jobs{tasks: map[string]*mcptasks.DetailedTask{}}
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}
	mcptasks.Advertise(caps)
	s := mcp.NewServer(&mcp.Implementation{Name: "jobs", Version: "1"}, &mcp.ServerOptions{Capabilities: caps})
	if err := mcptasks.Install(s, j); err != nil {
		t.Fatal(err)
	}
	s.AddTool(&mcp.Tool{Name: "hello", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if mcptasks.Declared(ctx) {
				j.mu.Lock()
				j.n++
				id := fmt.Sprintf("job-%d", j.n)
				now := mcptasks.Time(time.Now())
				task := mcptasks.Task{TaskID: id, Status: mcptasks.InputRequired, CreatedAt: now, LastUpdatedAt: now, PollIntervalMs: 100}
				j.tasks[id] = &mcptasks.DetailedTask{Task: task, InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
					Mode: "form", Message: "Your name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}
				j.mu.Unlock()
				if !mcptasks.Create(ctx, task) {
					t.Error("Create refused a declared call")
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Hello, stranger!"}}}, nil
		})
	return s, j
}

// raw is rawclient's client; a declaring call declares the extension.
type raw struct{ *rawclient.Client }

func connectRaw(t *testing.T, s *mcp.Server) *raw { return connectRawOver(t, s, nil) }

// connectRawOver connects through wrap(the server's transport) when wrap
// is not nil.
func connectRawOver(t *testing.T, s *mcp.Server, wrap func(mcp.Transport) mcp.Transport) *raw {
	t.Helper()
	c := rawclient.Connect(t, s, wrap)
	c.Declared = map[string]any{"extensions": map[string]any{mcptasks.Extension: map[string]any{}}}
	return &raw{c}
}

func TestDeclaringClientGetsTaskAndDrivesIt(t *testing.T) {
	s, _ := newServer(t)
	c := connectRaw(t, s)
	created := c.OK("tools/call", map[string]any{"name": "hello", "arguments": map[string]any{}})
	if created["resultType"] != "task" || created["taskId"] != "job-1" || created["content"] != nil {
		t.Fatalf("tools/call: want a CreateTaskResult, got %v", created)
	}
	if ttl, present := created["ttlMs"]; !present || ttl != nil {
		t.Errorf("ttlMs: want null, got %v (present %v)", ttl, present)
	}
	got := c.OK("tasks/get", map[string]any{"taskId": "job-1"})
	if got["resultType"] != "complete" || got["status"] != "input_required" {
		t.Fatalf("tasks/get: %v", got)
	}
	req, _ := got["inputRequests"].(map[string]any)["name"].(map[string]any)
	if req["method"] != "elicitation/create" {
		t.Fatalf("inputRequests: %v", got["inputRequests"])
	}
	// A key that is not outstanding is ignored.
	c.OK("tasks/update", map[string]any{"taskId": "job-1", "inputResponses": map[string]any{"other": map[string]any{"action": "accept", "content": map[string]any{}}}})
	if st := c.OK("tasks/get", map[string]any{"taskId": "job-1"})["status"]; st != "input_required" {
		t.Fatalf("after an unknown key: %v", st)
	}
	ack := c.OK("tasks/update", map[string]any{"taskId": "job-1", "inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"name": "Luca"}}}})
	delete(ack, "_meta") // the SDK's serverInfo
	if ack["resultType"] != "complete" || len(ack) != 1 {
		t.Errorf("tasks/update ack: %v", ack)
	}
	done := c.OK("tasks/get", map[string]any{"taskId": "job-1"})
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || res == nil {
		t.Fatalf("after update: %v", done)
	}
	text := res["content"].([]any)[0].(map[string]any)["text"]
	if text != "Hello, Luca!" {
		t.Errorf("result: %v", res)
	}
}

// A response the SDK cannot read is left out, not refused: under a key
// that is not outstanding it is ignored, under an outstanding one the
// request stays outstanding; the readable ones of the same update count.
func TestUpdateWithUnreadableResponses(t *testing.T) {
	s, _ := newServer(t)
	c := connectRaw(t, s)
	c.OK("tools/call", map[string]any{"name": "hello", "arguments": map[string]any{}})
	ack := c.OK("tasks/update", map[string]any{"taskId": "job-1", "inputResponses": map[string]any{
		"unknown-key": map[string]any{"ignored": true}, "name": map[string]any{"neither": "action"}}})
	if ack["resultType"] != "complete" {
		t.Fatalf("tasks/update ack: %v", ack)
	}
	if st := c.OK("tasks/get", map[string]any{"taskId": "job-1"})["status"]; st != "input_required" {
		t.Fatalf("after unreadable responses: %v, want input_required", st)
	}
	c.OK("tasks/update", map[string]any{"taskId": "job-1", "inputResponses": map[string]any{
		"unknown-key": map[string]any{"ignored": true}, "name": map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}}})
	if st := c.OK("tasks/get", map[string]any{"taskId": "job-1"})["status"]; st != "completed" {
		t.Fatalf("after a readable response beside an unreadable one: %v, want completed", st)
	}
	if _, we := c.Call("tasks/update", map[string]any{"taskId": "job-1", "inputResponses": []any{1}}, true); we == nil || we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("inputResponses not an object: want -32602, got %v", we)
	}
}

func TestCancel(t *testing.T) {
	s, _ := newServer(t)
	c := connectRaw(t, s)
	id := c.OK("tools/call", map[string]any{"name": "hello"})["taskId"]
	c.OK("tasks/cancel", map[string]any{"taskId": id})
	if st := c.OK("tasks/get", map[string]any{"taskId": id})["status"]; st != "cancelled" {
		t.Fatalf("status after cancel: %v", st)
	}
}

func TestNonDeclaringClient(t *testing.T) {
	s, j := newServer(t)
	c := connectRaw(t, s)
	res, we := c.Call("tools/call", map[string]any{"name": "hello"}, false)
	if we != nil || res["resultType"] == "task" || res["taskId"] != nil {
		t.Fatalf("a client without the extension got %v, %v", res, we)
	}
	if len(j.tasks) != 0 {
		t.Errorf("a task was created for a client without the extension")
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, we := c.Call(m, map[string]any{"taskId": "job-1"}, false)
		if we == nil || we.Code != mcp.CodeMissingRequiredClientCapabilities {
			t.Fatalf("%s: want -32021, got %v", m, we)
		}
		var data mcp.MissingRequiredClientCapabilityData
		if err := json.Unmarshal(we.Data, &data); err != nil || data.RequiredCapabilities == nil || data.RequiredCapabilities.Extensions[mcptasks.Extension] == nil {
			t.Errorf("%s: data %s", m, we.Data)
		}
	}
}

func TestUnknownTask(t *testing.T) {
	s, _ := newServer(t)
	c := connectRaw(t, s)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, we := c.Call(m, map[string]any{"taskId": "nope", "inputResponses": map[string]any{}}, true)
		if we == nil || we.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("%s of an unknown task: want -32602, got %v", m, we)
		}
	}
}

// TestGoSDKClient drives a task from the go-sdk's own client: the
// extension is advertised (server/discover, or initialize), the client's
// declaration travels in each request's _meta (2026-07-28), tasks/get
// through CallCustomMethod. The extension is one of 2026-07-28: a
// 2025-11-25 client that lists it in its initialize gets the tool's own
// result and -32021 on tasks/*.
func TestGoSDKClient(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			s, j := newServer(t)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := s.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			caps := &mcp.ClientCapabilities{}
			caps.AddExtension(mcptasks.Extension, map[string]any{})
			client := mcp.NewClient(&mcp.Implementation{Name: "go", Version: "1"}, &mcp.ClientOptions{Capabilities: caps})
			if err := mcp.AddSendingCustomMethod[*mcptasks.GetParams, *mcptasks.GetTaskResult](client, mcptasks.MethodGet); err != nil {
				t.Fatal(err)
			}
			cs, err := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, ok := cs.InitializeResult().Capabilities.Extensions[mcptasks.Extension]; !ok {
				t.Fatalf("the extension is not advertised: %+v", cs.InitializeResult().Capabilities)
			}
			// The go-sdk client has no task support: its CallTool sees a
			// result without content, but the task was made.
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hello"})
			if version < "2026-07-28" {
				if len(j.tasks) != 0 {
					t.Fatalf("a %s client was answered with %d tasks", version, len(j.tasks))
				}
				_, err := mcp.CallCustomMethod[*mcptasks.GetParams, *mcptasks.GetTaskResult](context.Background(), cs, mcptasks.MethodGet, &mcptasks.GetParams{TaskID: "job-1"})
				var we *jsonrpc.Error
				if !errors.As(err, &we) || we.Code != mcp.CodeMissingRequiredClientCapabilities {
					t.Fatalf("tasks/get from a %s client: want -32021, got %v", version, err)
				}
				return
			}
			if len(j.tasks) != 1 {
				t.Fatalf("the declaring client's call made %d tasks", len(j.tasks))
			}
			got, err := mcp.CallCustomMethod[*mcptasks.GetParams, *mcptasks.GetTaskResult](context.Background(), cs, mcptasks.MethodGet, &mcptasks.GetParams{TaskID: "job-1"})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != mcptasks.InputRequired || got.InputRequests["name"] == nil {
				t.Fatalf("tasks/get: %+v", got)
			}
		})
	}
}

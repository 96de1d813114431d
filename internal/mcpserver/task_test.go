package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/mcptasks"
	"stepwise.dev/stepwise/internal/mcptasks/rawclient"
	"stepwise.dev/stepwise/internal/service"
)

// rawClient speaks 2026-07-28 requests to a server over in-memory
// transports, each request with its own capabilities: form elicitation,
// and the Tasks extension when the call declares it.
type rawClient struct{ *rawclient.Client }

func connectRawTo(t testing.TB, srv *Server) *rawClient {
	t.Helper()
	return rawOn(t, rawclient.Connect(t, srv.MCP(), nil).Conn)
}

// rawOn is a rawClient on a connection made already.
func rawOn(t testing.TB, conn mcp.Connection) *rawClient {
	return &rawClient{&rawclient.Client{T: t, Conn: conn,
		Caps:     map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		Declared: map[string]any{"extensions": map[string]any{mcptasks.Extension: map[string]any{}}}}}
}

// start calls a tool that starts a run and returns the task's id.
func (r *rawClient) start(tool string, args map[string]any) string {
	r.T.Helper()
	res := r.OK("tools/call", map[string]any{"name": tool, "arguments": args})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["content"] != nil {
		r.T.Fatalf("%s: want a CreateTaskResult, got %v", tool, res)
	}
	for _, k := range []string{"status", "createdAt", "lastUpdatedAt"} {
		if res[k] == nil {
			r.T.Errorf("%s: CreateTaskResult without %s: %v", tool, k, res)
		}
	}
	// The seed state is the run's as recorded: a run that ended already
	// (a step that fails at once) has its retention as ttl.
	if st := res["status"]; st == "working" || st == "input_required" {
		if v, present := res["ttlMs"]; !present || v != nil {
			r.T.Errorf("ttlMs of a %s task: want null, got %v", st, v)
		}
	} else if _, present := res["ttlMs"]; !present {
		r.T.Errorf("a %s task without ttlMs: %v", st, res)
	}
	return id
}

// until polls tasks/get until the task is in status and (when key is not
// empty) offers that input request key.
func (r *rawClient) until(id, status, key string) map[string]any {
	r.T.Helper()
	deadline := time.Now().Add(time.Minute) // a hang guard, not a speed check
	for {
		if time.Now().After(deadline) {
			r.T.Fatalf("task %s never reached %s %s", id, status, key)
		}
		got := r.OK("tasks/get", map[string]any{"taskId": id})
		if got["resultType"] != "complete" {
			r.T.Fatalf("tasks/get resultType: %v", got)
		}
		if got["status"] == status {
			if key == "" {
				return got
			}
			if _, ok := got["inputRequests"].(map[string]any)[key]; ok {
				return got
			}
		}
		switch got["status"] {
		case "completed", "cancelled", "failed":
			r.T.Fatalf("task ended %v waiting for %s %s: %v", got["status"], status, key, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func answer(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

func newTaskEnv(t *testing.T) *env {
	return newEnv(t, Options{DefaultWait: 5 * time.Second, ExposeWorkflows: true}, service.Options{})
}

// TestTaskStartToCompleted drives greet as a task: its question (a refused
// answer re-offered under a new key, the old key ignored), its agent step,
// and the completed result that run_get gives.
func TestTaskStartToCompleted(t *testing.T) {
	e := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	id := c.start("run_start", map[string]any{"workflow": "greet"})

	got := c.until(id, "input_required", "name.1")
	req := got["inputRequests"].(map[string]any)["name.1"].(map[string]any)
	params := req["params"].(map[string]any)
	if req["method"] != "elicitation/create" || params["mode"] != "form" || !strings.Contains(params["message"].(string), "Your name?") {
		t.Fatalf("the question's request: %v", req)
	}
	if _, ok := params["requestedSchema"].(map[string]any)["properties"].(map[string]any)["value"]; !ok {
		t.Fatalf("the question's schema: %v", params["requestedSchema"])
	}

	// Refused (the pattern wants a capital): still input_required, under a new key.
	// The refusal is known when the update is acknowledged.
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name.1": answer(map[string]any{"value": "ada"})}})
	got = c.OK("tasks/get", map[string]any{"taskId": id})
	if got["status"] != "input_required" || got["inputRequests"].(map[string]any)["name.1.r1"] == nil {
		t.Fatalf("after a refused answer: %v", got)
	}
	if _, old := got["inputRequests"].(map[string]any)["name.1"]; old {
		t.Errorf("the refused key is offered again: %v", got["inputRequests"])
	}
	if msg, _ := got["statusMessage"].(string); !strings.Contains(msg, "refused") || !strings.Contains(msg, "pattern") {
		t.Errorf("statusMessage after a refused answer: %q", msg)
	}
	// The answered key is ignored now.
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name.1": answer(map[string]any{"value": "Ada"})}})
	if got := c.until(id, "input_required", ""); got["inputRequests"].(map[string]any)["name.1.r1"] == nil {
		t.Fatalf("an answer under a used key moved the task: %v", got)
	}

	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name.1.r1": answer(map[string]any{"value": "Ada"})}})
	got = c.until(id, "input_required", "write.2")
	agent := got["inputRequests"].(map[string]any)["write.2"].(map[string]any)["params"].(map[string]any)
	if !strings.Contains(agent["message"].(string), "Write a one-line greeting for Ada") {
		t.Errorf("the agent step's message: %v", agent["message"])
	}
	if _, ok := agent["requestedSchema"].(map[string]any)["properties"].(map[string]any)["line"]; !ok {
		t.Errorf("the agent step's schema is not its output schema: %v", agent["requestedSchema"])
	}

	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"write.2": answer(map[string]any{"line": "Hello, Ada!"})}})
	done := c.until(id, "completed", "")
	res := done["result"].(map[string]any)
	if res["isError"] == true {
		t.Fatalf("a succeeded run's result is an error: %v", res)
	}
	sc := res["structuredContent"].(map[string]any)
	if sc["status"] != "succeeded" || sc["outputs"].(map[string]any)["line"] != "Hello, Ada!" {
		t.Fatalf("the completed result: %v", sc)
	}
	// The same result run_get gives.
	var rg RunResult
	cs := e.connect(nil)
	call(t, cs, "run_get", map[string]any{"run_id": sc["run_id"]}, &rg)
	want, _ := json.Marshal(rg)
	have, _ := json.Marshal(sc)
	var a, b RunResult
	_ = json.Unmarshal(want, &a)
	_ = json.Unmarshal(have, &b)
	if a.Summary() != b.Summary() || a.Status != b.Status || a.Outputs["line"] != b.Outputs["line"] {
		t.Errorf("task result %s, run_get %s", have, want)
	}
}

// TestTaskFailedRunIsCompletedWithError: a failed run is a completed task
// whose result has isError, not a failed task.
// With a retention, a finished task's ttlMs runs to its purge.
func TestTaskFailedRunIsCompletedWithError(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{Retention: time.Hour})
	c := connectRawTo(t, e.srv)
	id := c.start("run_start", map[string]any{"definition": "version: 1\nname: boom\nsteps:\n  - id: stop\n    fail: stopped on purpose\n"})
	done := c.until(id, "completed", "")
	res := done["result"].(map[string]any)
	if res["isError"] != true || res["structuredContent"].(map[string]any)["status"] != "failed" {
		t.Fatalf("a failed run's task: %v", done)
	}
	if ttl, _ := done["ttlMs"].(float64); ttl < float64(time.Hour.Milliseconds()) {
		t.Fatalf("ttlMs of a finished run kept an hour: %v", done["ttlMs"])
	}
}

func TestTaskCancel(t *testing.T) {
	e := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	id := c.start("wf_greet", map[string]any{})
	c.until(id, "input_required", "")
	ack := c.OK("tasks/cancel", map[string]any{"taskId": id})
	if ack["resultType"] != "complete" {
		t.Errorf("tasks/cancel ack: %v", ack)
	}
	c.until(id, "cancelled", "")
	// Canceling again, a finished task: still acknowledged.
	c.OK("tasks/cancel", map[string]any{"taskId": id})
}

// TestTaskNotDeclared: a client without the extension gets today's
// results and -32021 on tasks/*.
func TestTaskNotDeclared(t *testing.T) {
	e := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	// No elicitation either: a run that reached its question within the
	// call would be asked through inputRequests instead of returned.
	c.Caps = nil
	disc, we := c.Call("server/discover", map[string]any{}, false)
	if we != nil || disc["capabilities"].(map[string]any)["extensions"].(map[string]any)[mcptasks.Extension] == nil {
		t.Fatalf("server/discover does not advertise the extension: %v %v", disc, we)
	}
	res, we := c.Call("tools/call", map[string]any{"name": "run_start", "arguments": map[string]any{"workflow": "greet", "wait_seconds": 0}}, false)
	if we != nil || res["resultType"] == "task" || res["taskId"] != nil {
		t.Fatalf("run_start without the extension: %v %v", res, we)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil || sc["run_id"] == nil {
		t.Fatalf("run_start without the extension has no run: %v", res)
	}
	id := e.srv.taskID(sc["run_id"].(string))
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		_, we := c.Call(m, map[string]any{"taskId": id, "inputResponses": map[string]any{}}, false)
		if we == nil || we.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(we.Data), mcptasks.Extension) {
			t.Fatalf("%s without the extension: %v", m, we)
		}
	}
}

// TestTaskForgedID: ids this server did not issue are -32602, whether made
// up, altered, or issued by a server with another key.
func TestTaskForgedID(t *testing.T) {
	e := newTaskEnv(t)
	other := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	real := c.start("run_start", map[string]any{"workflow": "greet"})
	runID, err := e.srv.taskRun(real)
	if err != nil {
		t.Fatal(err)
	}
	altered := real[:len(real)-2] + "xx"
	if altered == real {
		altered = real[:len(real)-2] + "yy"
	}
	for _, id := range []string{"swt_nope", runID, altered, other.srv.taskID(runID), ""} {
		for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
			_, we := c.Call(m, map[string]any{"taskId": id, "inputResponses": map[string]any{}}, true)
			if we == nil || we.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("%s of %q: want -32602, got %v", m, id, we)
			}
		}
	}
}

// TestTaskSurvivesRestart: a task started on one server is answered on a
// second one, opened on the same home after the first closed.
func TestTaskSurvivesRestart(t *testing.T) {
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "greet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lib, "greet.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() (*service.Service, *Server) {
		svc, err := service.Open(context.Background(), service.Options{Home: home, Durability: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		srv := New(svc, Options{})
		srv.Start(context.Background())
		return svc, srv
	}
	svc1, srv1 := open()
	c1 := connectRawTo(t, srv1)
	id := c1.start("run_start", map[string]any{"workflow": "greet"})
	c1.until(id, "input_required", "name.1")
	// A refused answer is recorded with the run: its new key outlives the server.
	c1.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name.1": answer(map[string]any{"value": "ada"})}})
	before := c1.until(id, "input_required", "name.1.r1")
	_ = c1.Conn.Close()
	srv1.Close()
	if err := svc1.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	svc2, srv2 := open()
	defer func() { srv2.Close(); _ = svc2.Close(context.Background()) }()
	c2 := connectRawTo(t, srv2)
	after := c2.OK("tasks/get", map[string]any{"taskId": id})
	if _, ok := after["inputRequests"].(map[string]any)["name.1.r1"]; !ok || after["createdAt"] != before["createdAt"] || after["statusMessage"] != before["statusMessage"] {
		t.Fatalf("the task changed over the restart: %v, then %v", before, after)
	}
	c2.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name.1.r1": answer(map[string]any{"value": "Ada"})}})
	c2.until(id, "input_required", "write.2")
	c2.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"write.2": answer(map[string]any{"line": "Hi, Ada"})}})
	done := c2.until(id, "completed", "")
	if done["result"].(map[string]any)["structuredContent"].(map[string]any)["outputs"].(map[string]any)["name"] != "Ada" {
		t.Fatalf("after the restart: %v", done)
	}
}

// TestTaskSecretQuestion: without a page to send the person to (stdio), a
// secret question's request asks for $NAME; a value in clear is refused,
// and the refusal does not repeat it.
func TestTaskSecretQuestion(t *testing.T) {
	t.Setenv("STEPWISE_TASK_TEST_SECRET", "s3cret-value")
	e := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	id := c.start("run_start", map[string]any{"workflow": "vault"})
	got := c.until(id, "input_required", "password.1")
	params := got["inputRequests"].(map[string]any)["password.1"].(map[string]any)["params"].(map[string]any)
	if params["mode"] != "form" || !strings.Contains(params["message"].(string), "$NAME") {
		t.Fatalf("a secret question's request: %v", params)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"password.1": answer(map[string]any{"value": "hunter2"})}})
	got = c.OK("tasks/get", map[string]any{"taskId": id})
	if got["inputRequests"].(map[string]any)["password.1.r1"] == nil || strings.Contains(toText(got), "hunter2") {
		t.Fatalf("after a secret in clear: %v", got)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"password.1.r1": answer(map[string]any{"value": "$STEPWISE_TASK_TEST_SECRET"})}})
	got = c.until(id, "input_required", "label.2")
	if !strings.Contains(toText(got["inputRequests"]), `"enum":["red","green"]`) {
		t.Errorf("the choice question's form: %v", got["inputRequests"])
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"label.2": answer(map[string]any{"value": "green"})}})
	done := c.until(id, "completed", "")
	out := done["result"].(map[string]any)["structuredContent"].(map[string]any)["outputs"].(map[string]any)
	if out["label"] != "green" || out["length"] != float64(len("s3cret-value")) || strings.Contains(toText(done), "s3cret-value") {
		t.Fatalf("the vault's task: %v", done)
	}
}

// TestTaskNotifications: over a transport wrapped by TaskTransport, a
// listen for a run's task gets its state and its changes.
// Over stdio too: the StdioTransport that serve uses, wrapped.
func TestTaskNotifications(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		ct, st := mcp.NewInMemoryTransports()
		testTaskNotifications(t, newTaskEnv(t), st, ct)
	})
	t.Run("stdio", func(t *testing.T) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
		testTaskNotifications(t, newTaskEnv(t), &StdioTransport{Reader: inR, Writer: outW}, &mcp.IOTransport{Reader: outR, Writer: inW})
	})
}

func testTaskNotifications(t *testing.T, e *env, server, client mcp.Transport) {
	ss, err := e.srv.MCP().Connect(context.Background(), e.srv.TaskTransport(server), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := client.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); _ = ss.Close() })
	c := rawOn(t, conn)
	id := c.start("run_start", map[string]any{"workflow": "greet"})
	c.until(id, "input_required", "name.1")

	b, _ := json.Marshal(map[string]any{"notifications": map[string]any{"taskIds": []string{id}},
		"_meta": map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{mcptasks.Extension: map[string]any{}}}}})
	listenID, _ := jsonrpc.MakeID("listen")
	if err := conn.Write(context.Background(), &jsonrpc.Request{ID: listenID, Method: "subscriptions/listen", Params: b}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	// nextTask reads up to the next notifications/tasks.
	nextTask := func() map[string]any {
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if req, ok := m.(*jsonrpc.Request); ok && req.Method == mcptasks.NotificationStatus {
				var p map[string]any
				if err := json.Unmarshal(req.Params, &p); err != nil {
					t.Fatal(err)
				}
				return p
			}
		}
	}
	first := nextTask()
	if first["taskId"] != id || first["inputRequests"].(map[string]any)["name.1"] == nil {
		t.Fatalf("the first notification: %v", first)
	}
	// The update's acknowledgement comes on the same connection: sent, not awaited.
	up, _ := json.Marshal(map[string]any{"taskId": id, "inputResponses": map[string]any{"name.1": answer(map[string]any{"value": "Ada"})},
		"_meta": map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{mcptasks.Extension: map[string]any{}}}}})
	upID, _ := jsonrpc.MakeID("update")
	if err := conn.Write(ctx, &jsonrpc.Request{ID: upID, Method: "tasks/update", Params: up}); err != nil {
		t.Fatal(err)
	}
	for {
		n := nextTask()
		if reqs, _ := n["inputRequests"].(map[string]any); reqs["write.2"] != nil {
			break // the agent step's request, told without polling
		}
		if n["status"] != "working" && n["status"] != "input_required" {
			t.Fatalf("unexpected notification: %v", n)
		}
	}
}

// TestTaskSecretPage: over HTTP a secret question's request is a url
// elicitation of its one-time page, the same page at every poll; an
// accepted response only says the person opened it, the value comes
// through the page.
func TestTaskSecretPage(t *testing.T) {
	e, base, logs := httpEnv(t, HTTPOptions{})
	c := connectRawTo(t, e.srv)
	id := c.start("run_start", map[string]any{"workflow": "vault"})
	got := c.until(id, "input_required", "password.1")
	params := got["inputRequests"].(map[string]any)["password.1"].(map[string]any)["params"].(map[string]any)
	link, _ := params["url"].(string)
	if params["mode"] != "url" || !strings.HasPrefix(link, base+"/secrets/") {
		t.Fatalf("a secret question's request over HTTP: %v", params)
	}
	again := c.OK("tasks/get", map[string]any{"taskId": id})
	if again["inputRequests"].(map[string]any)["password.1"].(map[string]any)["params"].(map[string]any)["url"] != link {
		t.Fatalf("a second poll offers another page: %v", again)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"password.1": map[string]any{"action": "accept"}}})
	if got := c.OK("tasks/get", map[string]any{"taskId": id}); got["inputRequests"].(map[string]any)["password.1"] == nil {
		t.Fatalf("accepting the page moved the task: %v", got)
	}
	resp, err := http.PostForm(link, url.Values{"value": {"correct-horse"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.until(id, "input_required", "label.2")
	if strings.Contains(logs.String(), "correct-horse") {
		t.Fatal("the secret reached the logs")
	}
}

// TestTaskSubWorkflowQuestion: a sub-workflow's question is the top-level
// task's input request, under a key of the child run's; a refusal is
// recorded with the child and re-keys it; the answer finishes the task.
func TestTaskSubWorkflowQuestion(t *testing.T) {
	e := newTaskEnv(t)
	lib := filepath.Join(e.svc.Home.Dir, "workflows")
	for name, doc := range map[string]string{
		"asking.yaml": "version: 1\nname: asking\nsteps:\n  - id: who\n    ask: {prompt: \"Who?\", type: string, pattern: '^[A-Z]'}\noutputs:\n  who: ${{ steps.who.answer }}\n",
		"outer.yaml":  "version: 1\nname: outer\nsteps:\n  - id: call\n    workflow: asking\noutputs:\n  who: ${{ steps.call.output.who }}\n",
	} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := connectRawTo(t, e.srv)
	id := c.start("run_start", map[string]any{"workflow": "outer"})
	var key string
	for key == "" {
		got := c.until(id, "input_required", "")
		for k := range got["inputRequests"].(map[string]any) {
			key = k
		}
	}
	if !strings.HasSuffix(key, ".who.1") || key == "who.1" {
		t.Fatalf("a child's question's key: %q", key)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: answer(map[string]any{"value": "ada"})}})
	got := c.OK("tasks/get", map[string]any{"taskId": id})
	if got["inputRequests"].(map[string]any)[key+".r1"] == nil {
		t.Fatalf("after a refused answer to the child's question: %v", got)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key + ".r1": answer(map[string]any{"value": "Ada"})}})
	done := c.until(id, "completed", "")
	if done["result"].(map[string]any)["structuredContent"].(map[string]any)["outputs"].(map[string]any)["who"] != "Ada" {
		t.Fatalf("the task: %v", done)
	}
}

// TestTaskWorkingSaysTheStep: a running run is a working task whose
// statusMessage names the step it is at; canceling it ends the task.
func TestTaskWorkingSaysTheStep(t *testing.T) {
	e := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	id := c.start("run_start", map[string]any{"definition": "version: 1\nname: nap\nsteps:\n  - id: first\n    uses: log\n    with: {message: hi}\n  - id: nap\n    sleep: 1h\n"})
	deadline := time.Now().Add(time.Minute) // a hang guard
	for {
		got := c.OK("tasks/get", map[string]any{"taskId": id})
		if got["status"] != "working" {
			t.Fatalf("a sleeping run's task: %v", got)
		}
		if msg, _ := got["statusMessage"].(string); strings.Contains(msg, "nap") {
			t.Logf("statusMessage: %s", msg)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the statusMessage never named the step nap: %v", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.OK("tasks/cancel", map[string]any{"taskId": id})
	c.until(id, "cancelled", "")
}

// TestTaskParallelQuestions: the questions of parallel branches are all
// outstanding together, each under its own key; refusing one re-keys that
// one only, even after the other was answered.
func TestTaskParallelQuestions(t *testing.T) {
	e := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	id := c.start("run_start", map[string]any{"definition": "version: 1\nname: both\nsteps:\n  - id: group\n    parallel:\n      - {id: a, ask: {prompt: \"A?\", type: string, pattern: '^[A-Z]'}}\n      - {id: b, ask: {prompt: \"B?\", type: string}}\noutputs:\n  a: ${{ steps.a.answer }}\n  b: ${{ steps.b.answer }}\n"})
	var keys []string
	for len(keys) < 2 {
		keys = keys[:0]
		for k := range c.until(id, "input_required", "")["inputRequests"].(map[string]any) {
			keys = append(keys, k)
		}
	}
	var ka, kb string
	for _, k := range keys {
		switch {
		case strings.HasPrefix(k, "a."):
			ka = k
		case strings.HasPrefix(k, "b."):
			kb = k
		}
	}
	if ka == "" || kb == "" {
		t.Fatalf("keys %v", keys)
	}
	// a refused and b answered in one update.
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{
		ka: answer(map[string]any{"value": "lower"}), kb: answer(map[string]any{"value": "bee"})}})
	got := c.until(id, "input_required", ka+".r1")
	if reqs := got["inputRequests"].(map[string]any); len(reqs) != 1 {
		t.Fatalf("after a refused and an answered question: %v", reqs)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{ka + ".r1": answer(map[string]any{"value": "Aye"})}})
	done := c.until(id, "completed", "")
	out := done["result"].(map[string]any)["structuredContent"].(map[string]any)["outputs"].(map[string]any)
	if out["a"] != "Aye" || out["b"] != "bee" {
		t.Fatalf("outputs %v", out)
	}
}

// TestTaskNotificationsOfSubWorkflow: a refusal recorded with a
// sub-workflow's run is told to the top-level task's listener.
func TestTaskNotificationsOfSubWorkflow(t *testing.T) {
	e := newTaskEnv(t)
	lib := filepath.Join(e.svc.Home.Dir, "workflows")
	for name, doc := range map[string]string{
		"asking.yaml": "version: 1\nname: asking\nsteps:\n  - id: who\n    ask: {prompt: \"Who?\", type: string, pattern: '^[A-Z]'}\n",
		"outer.yaml":  "version: 1\nname: outer\nsteps:\n  - id: call\n    workflow: asking\n",
	} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.MCP().Connect(context.Background(), e.srv.TaskTransport(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(); _ = ss.Close() })
	c := rawOn(t, conn)
	id := c.start("run_start", map[string]any{"workflow": "outer"})
	var key string
	for key == "" {
		for k := range c.until(id, "input_required", "")["inputRequests"].(map[string]any) {
			key = k
		}
	}
	meta := map[string]any{mcp.MetaKeyProtocolVersion: "2026-07-28", mcp.MetaKeyClientCapabilities: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{mcptasks.Extension: map[string]any{}}}}
	b, _ := json.Marshal(map[string]any{"notifications": map[string]any{"taskIds": []string{id}}, "_meta": meta})
	listenID, _ := jsonrpc.MakeID("listen")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	if err := conn.Write(ctx, &jsonrpc.Request{ID: listenID, Method: "subscriptions/listen", Params: b}); err != nil {
		t.Fatal(err)
	}
	up, _ := json.Marshal(map[string]any{"taskId": id, "inputResponses": map[string]any{key: answer(map[string]any{"value": "lower"})}, "_meta": meta})
	upID, _ := jsonrpc.MakeID("update")
	sent := false
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || req.Method != mcptasks.NotificationStatus {
			continue
		}
		if !sent { // the first state is told: now refuse an answer
			if err := conn.Write(ctx, &jsonrpc.Request{ID: upID, Method: "tasks/update", Params: up}); err != nil {
				t.Fatal(err)
			}
			sent = true
			continue
		}
		if strings.Contains(string(req.Params), key+".r1") {
			return // told of the child's refusal
		}
	}
}

// TestTaskRetryAndFork: run_retry answers with the task of the run it
// retries, run_fork with the new run's, and run_continue with the run's.
func TestTaskRetryAndFork(t *testing.T) {
	e := newTaskEnv(t)
	c := connectRawTo(t, e.srv)
	def := "version: 1\nname: boom\ninputs:\n  go: {type: boolean, default: false}\nsteps:\n  - id: first\n    uses: log\n    with: {message: hi}\n  - id: check\n    if: ${{ !inputs.go }}\n    fail: stopped on purpose\n"
	id := c.start("run_start", map[string]any{"definition": def})
	done := c.until(id, "completed", "")
	runID := done["result"].(map[string]any)["structuredContent"].(map[string]any)["run_id"].(string)
	if done["result"].(map[string]any)["isError"] != true {
		t.Fatalf("the first run: %v", done)
	}
	retried := c.start("run_retry", map[string]any{"run_id": runID, "inputs": map[string]any{"go": true}})
	if retried != id {
		t.Fatalf("run_retry's task %q, the run's %q", retried, id)
	}
	if res := c.until(id, "completed", "")["result"].(map[string]any); res["isError"] == true {
		t.Fatalf("the retried run: %v", res)
	}
	forked := c.start("run_fork", map[string]any{"run_id": runID, "from_step": "check", "inputs": map[string]any{"go": false}})
	if forked == id {
		t.Fatal("run_fork answered with the forked run's task")
	}
	if res := c.until(forked, "completed", "")["result"].(map[string]any); res["isError"] != true {
		t.Fatalf("the fork: %v", res)
	}

	q := c.start("run_start", map[string]any{"workflow": "greet"})
	c.until(q, "input_required", "name.1")
	cont, we := c.Call("tools/call", map[string]any{"name": "run_continue", "arguments": map[string]any{"token": e.pauseToken(t, q), "value": "Ada"}}, true)
	if we != nil || cont["resultType"] != "task" || cont["taskId"] != q {
		t.Fatalf("run_continue: %v %v", cont, we)
	}
	c.until(q, "input_required", "write.2")
}

// pauseToken is the token of the open pause of a task's run, as run_get
// gives it.
func (e *env) pauseToken(t *testing.T, taskID string) string {
	t.Helper()
	runID, err := e.srv.taskRun(taskID)
	if err != nil {
		t.Fatal(err)
	}
	var r RunResult
	call(t, e.connect(nil), "run_get", map[string]any{"run_id": runID}, &r)
	if r.Pause == nil {
		t.Fatalf("run %s has no pause", runID)
	}
	return r.Pause.Token
}

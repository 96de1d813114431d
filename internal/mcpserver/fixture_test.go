package mcpserver

//lint:file-ignore SA1019 the fixtures use sampling, which SEP-2577 deprecates: the suite calls it

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/mcptasks"
	"stepwise.dev/stepwise/internal/service"
)

// fixtureEnv is a server with the conformance suite's fixtures.
func fixtureEnv(t *testing.T) *env {
	e := newEnv(t, Options{}, service.Options{})
	e.srv.AddConformanceFixtures()
	return e
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func callRaw(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	return res
}

func TestConformanceFixturesOnlyWhenAdded(t *testing.T) {
	cs := newEnv(t, Options{}, service.Options{}).connect(nil)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if strings.HasPrefix(tool.Name, "test_") || strings.HasPrefix(tool.Name, "json_schema_") {
			t.Errorf("a server without fixtures lists %s", tool.Name)
		}
	}
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "test://static-text"}); err == nil {
		t.Error("a server without fixtures reads test://static-text")
	}
}

func TestConformanceFixturesAnswer(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			cs := connectVersion(t, fixtureEnv(t), nil, version)
			ctx := context.Background()

			if got := textOf(t, callRaw(t, cs, &mcp.CallToolParams{Name: "test_simple_text"})); got != "This is a simple text response for testing." {
				t.Errorf("test_simple_text: %q", got)
			}
			res := callRaw(t, cs, &mcp.CallToolParams{Name: "test_multiple_content_types", Arguments: map[string]any{}})
			if len(res.Content) != 3 {
				t.Fatalf("test_multiple_content_types: %d contents", len(res.Content))
			}
			if img, ok := res.Content[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
				t.Errorf("test_multiple_content_types: image %#v", res.Content[1])
			}
			res = callRaw(t, cs, &mcp.CallToolParams{Name: "test_error_handling", Arguments: map[string]any{}})
			if !res.IsError || !strings.Contains(textOf(t, res), "intentionally") {
				t.Errorf("test_error_handling: isError %v, %q", res.IsError, textOf(t, res))
			}

			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/4711/data"})
			if err != nil {
				t.Fatal(err)
			}
			var data struct{ ID string }
			if len(read.Contents) != 1 || json.Unmarshal([]byte(read.Contents[0].Text), &data) != nil || data.ID != "4711" {
				t.Errorf("test://template/4711/data: %+v", read.Contents)
			}
			prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a1", "arg2": "b2"}})
			if err != nil {
				t.Fatal(err)
			}
			if tc, ok := prompt.Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != "Prompt with arguments: arg1='a1', arg2='b2'" {
				t.Errorf("test_prompt_with_arguments: %#v", prompt.Messages[0].Content)
			}

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "json_schema_2020_12_tool" })
			if i < 0 {
				t.Fatal("json_schema_2020_12_tool is not listed")
			}
			schema, _ := json.Marshal(tools.Tools[i].InputSchema)
			for _, kw := range []string{`"$schema":"https://json-schema.org/draft/2020-12/schema"`, `"$anchor":"addressDef"`, `"additionalProperties":false`, `"else":`} {
				if !strings.Contains(string(schema), kw) {
					t.Errorf("json_schema_2020_12_tool's listed schema lacks %s: %s", kw, schema)
				}
			}
		})
	}
}

// A client on 2025-11-25 is asked through elicitation/create and sampling
// by the fixtures, on the call.
func TestConformanceFixturesAskTheClient(t *testing.T) {
	var asked []string
	cs := connectVersion(t, fixtureEnv(t), &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, r.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "username": "ada", "email": "ada@example.org"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked = append(asked, r.Params.Messages[0].Content.(*mcp.TextContent).Text)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
	}, "2025-11-25")
	if got := textOf(t, callRaw(t, cs, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "Capital?"}})); got != "LLM response: Paris" {
		t.Errorf("test_sampling: %q", got)
	}
	if got := textOf(t, callRaw(t, cs, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "Who?"}})); !strings.Contains(got, "action=accept") || !strings.Contains(got, `"username":"ada"`) {
		t.Errorf("test_elicitation: %q", got)
	}
	// An input-required result to an older client: the SDK asks the client
	// itself and calls the tool again with the answer.
	if got := textOf(t, callRaw(t, cs, &mcp.CallToolParams{Name: "test_input_required_result_elicitation"})); got != "Hello, Ada!" {
		t.Errorf("test_input_required_result_elicitation: %q", got)
	}
	if want := []string{"Capital?", "Who?", "What is your name?"}; !slices.Equal(asked, want) {
		t.Errorf("asked %q, want %q", asked, want)
	}
}

// On 2026-07-28 the input-required fixtures answer with inputRequests and
// a signed requestState that the retries carry; an altered state is refused.
func TestConformanceFixturesMultiRound(t *testing.T) {
	e := fixtureEnv(t)
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCP().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}).
		Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	const tool = "test_input_required_result_multi_round"
	answer := func(key string, content map[string]any) mcp.InputResponseMap {
		return mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: content}}
	}

	r1 := callRaw(t, cs, &mcp.CallToolParams{Name: tool})
	if !r1.NeedsInput() || r1.InputRequests["step1"] == nil || r1.RequestState == "" {
		t.Fatalf("round 1: %+v", r1)
	}
	r2 := callRaw(t, cs, &mcp.CallToolParams{Name: tool, InputResponses: answer("step1", map[string]any{"name": "Ada"}), RequestState: r1.RequestState})
	if !r2.NeedsInput() || r2.InputRequests["step2"] == nil || r2.RequestState == "" || r2.RequestState == r1.RequestState {
		t.Fatalf("round 2: %+v", r2)
	}
	r3 := callRaw(t, cs, &mcp.CallToolParams{Name: tool, InputResponses: answer("step2", map[string]any{"color": "teal"}), RequestState: r2.RequestState})
	if r3.NeedsInput() || textOf(t, r3) != "Multi-round complete: Ada likes teal" {
		t.Fatalf("round 3: %+v", r3)
	}

	// An altered state, and the state of another fixture, are refused.
	for _, state := range []string{r2.RequestState + "-TAMPERED", callRaw(t, cs, &mcp.CallToolParams{Name: "test_input_required_result_request_state"}).RequestState} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, InputResponses: answer("step2", map[string]any{"color": "teal"}), RequestState: state})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("state %.20q…: %v, want invalid params", state, err)
		}
	}
}

// A fixture's result passes the ceiling every result of the server passes.
func TestConformanceFixtureResultsAreBounded(t *testing.T) {
	e := fixtureEnv(t)
	e.srv.addFixtureTool("test_huge", "Answers more than a result may hold.", fixtureNoArgs, fixtureAnswer(fixtureText("%s", strings.Repeat("x", maxResultBytes+1))))
	res := callRaw(t, e.connect(nil), &mcp.CallToolParams{Name: "test_huge"})
	if !res.IsError || !strings.Contains(textOf(t, res), CodeResultTooLarge) {
		t.Fatalf("test_huge: isError %v, %.200q", res.IsError, textOf(t, res))
	}
	res = callRaw(t, e.connect(nil), &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{}})
	if !res.IsError || !strings.Contains(textOf(t, res), "prompt") {
		t.Fatalf("test_sampling without its prompt: isError %v, %q", res.IsError, textOf(t, res))
	}
}

// TestConformanceTaskFixtures drives the Tasks fixtures as the tasks-*
// scenarios do: tasks that complete (isError too), fail, are cancelled and
// ask for input (one request, two answered one at a time), a multi
// round-trip call that ends in a task, and what a client without the
// extension gets instead.
func TestConformanceTaskFixtures(t *testing.T) {
	c := connectRawTo(t, fixtureEnv(t).srv)
	start := func(tool string, args map[string]any) string {
		t.Helper()
		res := c.OK("tools/call", map[string]any{"name": tool, "arguments": args})
		id, _ := res["taskId"].(string)
		if res["resultType"] != "task" || !strings.HasPrefix(id, fixtureTaskPrefix) || res["content"] != nil || res["requestState"] != nil {
			t.Fatalf("%s: want a CreateTaskResult, got %v", tool, res)
		}
		if ttl, _ := res["ttlMs"].(float64); ttl <= 0 || ttl != float64(int64(ttl)) {
			t.Errorf("%s: ttlMs %v, want a positive integer", tool, res["ttlMs"])
		}
		if got := c.OK("tasks/get", map[string]any{"taskId": id}); got["taskId"] != id {
			t.Errorf("%s: tasks/get right after creation: %v", tool, got)
		}
		return id
	}
	resultText := func(got map[string]any) string {
		t.Helper()
		res, _ := got["result"].(map[string]any)
		content, _ := res["content"].([]any)
		if len(content) == 0 {
			t.Fatalf("no result content: %v", got)
		}
		text, _ := content[0].(map[string]any)["text"].(string)
		return text
	}

	done := c.until(start("slow_compute", map[string]any{"seconds": 0, "label": "zero"}), "completed", "")
	if !strings.Contains(resultText(done), "zero") || done["error"] != nil {
		t.Errorf("slow_compute: %v", done)
	}

	id := start("slow_compute", map[string]any{"seconds": 60, "label": "long"})
	if ack := c.OK("tasks/cancel", map[string]any{"taskId": id}); ack["resultType"] != "complete" || ack["status"] != nil {
		t.Errorf("tasks/cancel ack: %v", ack)
	}
	if got := c.OK("tasks/get", map[string]any{"taskId": id}); got["status"] != "cancelled" {
		t.Errorf("after tasks/cancel: %v", got)
	}
	c.OK("tasks/cancel", map[string]any{"taskId": id}) // a finished task: acknowledged again

	done = c.until(start("failing_job", map[string]any{}), "completed", "")
	if res, _ := done["result"].(map[string]any); res["isError"] != true {
		t.Errorf("failing_job: want completed with isError, got %v", done)
	}
	failed := c.until(start("protocol_error_job", map[string]any{}), "failed", "")
	if e, _ := failed["error"].(map[string]any); e["code"] != float64(jsonrpc.CodeInternalError) || e["message"] == "" || failed["result"] != nil {
		t.Errorf("protocol_error_job: want failed with an error and no result, got %v", failed)
	}

	id = start("confirm_delete", map[string]any{"filename": "a.txt"})
	got := c.until(id, "input_required", "confirm")
	if r, _ := got["inputRequests"].(map[string]any)["confirm"].(map[string]any); r["method"] != "elicitation/create" {
		t.Errorf("confirm_delete's request: %v", got["inputRequests"])
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"unknown-key": map[string]any{"ignored": true}}})
	c.until(id, "input_required", "confirm")
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"confirm": answer(map[string]any{"confirm": true})}})
	if text := resultText(c.until(id, "completed", "")); text != "deleted a.txt" {
		t.Errorf("confirm_delete: %q", text)
	}

	id = start("multi_input", map[string]any{})
	c.until(id, "input_required", "name")
	c.until(id, "input_required", "confirm")
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"name": answer(map[string]any{"name": "Ada"})}})
	got = c.OK("tasks/get", map[string]any{"taskId": id})
	if reqs, _ := got["inputRequests"].(map[string]any); got["status"] != "input_required" || len(reqs) != 1 || reqs["confirm"] == nil {
		t.Fatalf("multi_input after one answer: %v", got)
	}
	c.OK("tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{"confirm": answer(map[string]any{"confirm": true})}})
	if text := resultText(c.until(id, "completed", "")); text != "name=Ada confirm=true" {
		t.Errorf("multi_input: %q", text)
	}

	round1 := c.OK("tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{}})
	if round1["resultType"] != "input_required" || round1["taskId"] != nil || round1["inputRequests"].(map[string]any)["user_name"] == nil {
		t.Fatalf("test_tool_with_task round 1: %v", round1)
	}
	res := c.OK("tools/call", map[string]any{"name": "test_tool_with_task", "arguments": map[string]any{},
		"inputResponses": map[string]any{"user_name": answer(map[string]any{"name": "Alice"})}})
	id, _ = res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["requestState"] != nil || res["inputRequests"] != nil {
		t.Fatalf("test_tool_with_task round 2: %v", res)
	}
	if text := resultText(c.until(id, "completed", "")); !strings.Contains(text, "Alice") {
		t.Errorf("test_tool_with_task: %q", text)
	}

	// Without the extension: no task; -32021 naming it for the tools that
	// require one.
	for _, tool := range []string{"failing_job", "test_tool_with_task"} {
		_, we := c.Call("tools/call", map[string]any{"name": tool, "arguments": map[string]any{}}, false)
		if we == nil || we.Code != mcp.CodeMissingRequiredClientCapabilities || !strings.Contains(string(we.Data), mcptasks.Extension) {
			t.Errorf("%s without the extension: want -32021 naming it, got %v", tool, we)
		}
	}
	sync, we := c.Call("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0, "label": "sync"}}, false)
	if we != nil || sync["taskId"] != nil || sync["resultType"] != "complete" || !strings.Contains(string(must(json.Marshal(sync["content"]))), "sync") {
		t.Errorf("slow_compute without the extension: %v %v", sync, we)
	}
	greet, we := c.Call("tools/call", map[string]any{"name": "greet", "arguments": map[string]any{"name": "World"}, "task": map[string]any{"ttl": 60000}}, true)
	if we != nil || greet["taskId"] != nil || !strings.Contains(string(must(json.Marshal(greet["content"]))), "Hello, World!") {
		t.Errorf("greet: %v %v", greet, we)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestConformanceTaskIDsDispatch: with the fixtures, the server's task
// handler sends fixture ids to the fixtures and every other id to runs;
// without them, a fixture id is unknown (-32602) like any made-up one.
func TestConformanceTaskIDsDispatch(t *testing.T) {
	e := newTaskEnv(t)
	e.srv.AddConformanceFixtures()
	c := connectRawTo(t, e.srv)
	run := c.start("run_start", map[string]any{"workflow": "greet"})
	c.until(run, "input_required", "")
	fixture := c.OK("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 60}})["taskId"].(string)
	if got := c.OK("tasks/get", map[string]any{"taskId": fixture}); got["status"] != "working" {
		t.Errorf("the fixture task: %v", got)
	}
	for _, id := range []string{fixtureTaskPrefix + "0123", "swt_nope"} {
		if _, we := c.Call("tasks/get", map[string]any{"taskId": id}, true); we == nil || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("tasks/get %s: want -32602, got %v", id, we)
		}
	}
	c.OK("tasks/cancel", map[string]any{"taskId": run})
	c.until(run, "cancelled", "")
	if got := c.OK("tasks/get", map[string]any{"taskId": fixture}); got["status"] != "working" {
		t.Errorf("the fixture task after the run's cancel: %v", got)
	}

	plain := connectRawTo(t, newTaskEnv(t).srv)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if _, we := plain.Call(m, map[string]any{"taskId": fixture, "inputResponses": map[string]any{}}, true); we == nil || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s of a fixture id on a server without fixtures: want -32602, got %v", m, we)
		}
	}
}

// TestFixtureTasksBounded: past fixtureTaskMax tasks the oldest is dropped,
// and its work stopped.
func TestFixtureTasksBounded(t *testing.T) {
	f := &fixtureTasks{}
	stopped := make(chan struct{})
	first, err := f.start(func(ctx context.Context, _ fixtureAsk) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		close(stopped)
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range fixtureTaskMax {
		if _, err := f.start(func(ctx context.Context, _ fixtureAsk) (*mcp.CallToolResult, error) { return fixtureText("ok"), nil }); err != nil {
			t.Fatal(err)
		}
	}
	<-stopped
	if _, err := f.Get(ctx, first.TaskID); !errors.Is(err, mcptasks.ErrUnknownTask) {
		t.Errorf("the oldest task past the bound: %v, want ErrUnknownTask", err)
	}
	f.mu.Lock()
	n := len(f.byID)
	f.mu.Unlock()
	if n != fixtureTaskMax {
		t.Errorf("%d tasks kept, want %d", n, fixtureTaskMax)
	}
}

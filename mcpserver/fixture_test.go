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

	"stepwise.dev/stepwise/service"
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

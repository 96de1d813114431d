package mcpserver

// The MCP conformance suite's fixtures (e2e/conformance): the tools,
// resources and prompts its server scenarios call by name, each answering
// what its scenario checks. They exist only for that suite: `serve` adds
// them behind a hidden flag that also needs STEPWISE_TEST_FIXTURES=1, and
// they go through this server's own machinery (the SDK's tool, resource and
// prompt handlers, this server's middleware, transports and state signing),
// so that the suite measures how stepwise serves MCP.
//
// Where the suite fixes an answer (a text, a key of inputRequests, a
// schema), the fixture gives exactly that; read the scenario's source in
// e2e/conformance/node_modules/@modelcontextprotocol/conformance for why.

//lint:file-ignore SA1019 the fixtures exercise the APIs SEP-2577 deprecates (sampling, roots, logging): the suite's scenarios call them

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/mcptasks"
)

// A 1×1 PNG and a WAV file with one silent sample: the smallest valid
// contents of the media types the scenarios ask for.
var (
	fixturePNG = fixtureBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	fixtureWAV = fixtureBase64("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func fixtureBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// fixtureStep is how long the logging and progress fixtures wait between
// notifications: the scenarios want them spread over the call.
const fixtureStep = 50 * time.Millisecond

// fixtureNoArgs is the input schema of a fixture that takes no arguments.
var fixtureNoArgs = json.RawMessage(`{"type":"object"}`)

// AddConformanceFixtures registers the conformance suite's fixture tools,
// resources and prompts on s. Call it before the server serves; a server
// with fixtures is for that suite only (they are not stepwise's surface).
func (s *Server) AddConformanceFixtures() {
	s.addFixtureTools()
	s.addFixtureInputTools()
	s.addFixtureResources()
	s.addFixturePrompts()
	s.fixtureTasks = &fixtureTasks{}
	s.tasks.fixtures = s.fixtureTasks
	s.addFixtureTaskTools()
}

// text is a tool result of one text.
func fixtureText(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// fixed is a handler that always answers res.
func fixtureAnswer(res *mcp.CallToolResult) mcp.ToolHandler {
	return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil }
}

// pause waits d, or until ctx ends.
func fixtureWait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// addFixtureTool registers a fixture tool whose results pass the ceiling
// every result of this server passes (boundFixture).
func (s *Server) addFixtureTool(name, description string, schema json.RawMessage, h mcp.ToolHandler) {
	s.mcp.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: schema}, s.boundFixture(name, h))
}

// boundFixture refuses a fixture's result over maxResultBytes, as
// boundResult does stepwise's tools' results.
func (s *Server) boundFixture(name string, h mcp.ToolHandler) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil {
			return res, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		if len(b) > maxResultBytes {
			return errorResult(toolError(s.log, name, resultTooLarge(name, len(b), "", ""))), nil
		}
		return res, nil
	}
}

// fixtureArgs decodes a call's arguments into v, and checks that the
// strings required names are given: a tool error otherwise, as the SDK's
// typed tools answer arguments that fail their schema.
func fixtureArgs(req *mcp.CallToolRequest, v any, required ...string) *mcp.CallToolResult {
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var given map[string]any
	if err := json.Unmarshal(args, &given); err != nil {
		return fixtureError("the arguments are not a JSON object: %v", err)
	}
	for _, name := range required {
		if s, ok := given[name].(string); !ok || s == "" {
			return fixtureError("the argument %s (a string) is required", name)
		}
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fixtureError("the arguments do not fit the input schema: %v", err)
	}
	return nil
}

// failed is a tool result with isError: a tool's failure, not a protocol
// error.
func fixtureError(format string, args ...any) *mcp.CallToolResult {
	res := fixtureText(format, args...)
	res.IsError = true
	return res
}

// addFixtureTools adds the tools of the 2025 scenarios (tools-call-*,
// elicitation-*, json-schema-2020-12, server-sse-polling) and the
// diagnostic tools of server-stateless and http-custom-header-server-validation.
func (s *Server) addFixtureTools() {
	tool := func(name, description string, h mcp.ToolHandler) {
		s.addFixtureTool(name, description, fixtureNoArgs, h)
	}
	tool("test_simple_text", "Answers one text.", fixtureAnswer(fixtureText("This is a simple text response for testing.")))
	tool("test_image_content", "Answers an image (a 1x1 PNG).", fixtureAnswer(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.ImageContent{Data: fixturePNG, MIMEType: "image/png"}}}))
	tool("test_audio_content", "Answers an audio clip (WAV).", fixtureAnswer(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.AudioContent{Data: fixtureWAV, MIMEType: "audio/wav"}}}))
	tool("test_embedded_resource", "Answers an embedded text resource.", fixtureAnswer(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://embedded-resource", MIMEType: "text/plain",
			Text: "This is an embedded resource content."}}}}))
	tool("test_multiple_content_types", "Answers a text, an image and an embedded resource.", fixtureAnswer(&mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: "Multiple content types test:"},
		&mcp.ImageContent{Data: fixturePNG, MIMEType: "image/png"},
		&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json",
			Text: `{"test":"data","value":123}`}}}}))

	tool("test_tool_with_logging", "Logs three messages at info while it runs.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
			if i > 0 {
				if err := fixtureWait(ctx, fixtureStep); err != nil {
					return nil, err
				}
			}
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance", Data: msg}); err != nil {
				return nil, err
			}
		}
		return fixtureText("Tool with logging executed successfully"), nil
	})
	tool("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100 to the call's progress token.", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.GetProgressToken()
		for i, p := range []float64{0, 50, 100} {
			if i > 0 {
				if err := fixtureWait(ctx, fixtureStep); err != nil {
					return nil, err
				}
			}
			if token == nil {
				continue
			}
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100,
				Message: fmt.Sprintf("Completed step %v of 100", p)}); err != nil {
				return nil, err
			}
		}
		return fixtureText("%v", token), nil
	})
	tool("test_error_handling", "Always fails, as a tool result with isError (not a protocol error).",
		fixtureAnswer(fixtureError("This tool intentionally returns an error for testing")))

	s.addFixtureTool("test_sampling", "Asks the client's LLM (sampling/createMessage) and answers its reply.",
		json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"the prompt to send to the LLM"}},"required":["prompt"]}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Prompt string }
			if bad := fixtureArgs(req, &in, "prompt"); bad != nil {
				return bad, nil
			}
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}})
			if err != nil {
				return fixtureError("sampling: %v", err), nil
			}
			reply := "(no text)"
			if t, ok := res.Content.(*mcp.TextContent); ok {
				reply = t.Text
			}
			return fixtureText("LLM response: %s", reply), nil
		})
	s.addFixtureTool("test_elicitation", "Asks the user (elicitation/create) and answers what they said.",
		json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"the message to show the user"}},"required":["message"]}`),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Message string }
			if bad := fixtureArgs(req, &in, "message"); bad != nil {
				return bad, nil
			}
			return fixtureElicit(ctx, req, "User response", &mcp.ElicitParams{Message: in.Message, RequestedSchema: json.RawMessage(`{
				"type": "object",
				"properties": {"username": {"type": "string", "description": "User's response"},
					"email": {"type": "string", "description": "User's email address"}},
				"required": ["username", "email"]}`)})
		})
	tool("test_elicitation_sep1034_defaults", "Elicits a form whose fields have defaults (SEP-1034).",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return fixtureElicit(ctx, req, "Elicitation completed", &mcp.ElicitParams{Message: "Please review and update the form fields with defaults",
				RequestedSchema: json.RawMessage(`{"type": "object", "properties": {
					"name": {"type": "string", "description": "User name", "default": "John Doe"},
					"age": {"type": "integer", "description": "User age", "default": 30},
					"score": {"type": "number", "description": "User score", "default": 95.5},
					"status": {"type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active"},
					"verified": {"type": "boolean", "description": "Verification status", "default": true}}}`)})
		})
	tool("test_elicitation_sep1330_enums", "Elicits a form with every enum form of SEP-1330.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return fixtureElicit(ctx, req, "Elicitation completed", &mcp.ElicitParams{Message: "Please select options from the enum fields",
				RequestedSchema: json.RawMessage(`{"type": "object", "properties": {
					"untitledSingle": {"type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"]},
					"titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
						{"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
						{"const": "value3", "title": "Third Option"}]},
					"legacyEnum": {"type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"],
						"enumNames": ["Option One", "Option Two", "Option Three"]},
					"untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
						"items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
					"titledMulti": {"type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3,
						"items": {"anyOf": [{"const": "value1", "title": "First Choice"}, {"const": "value2", "title": "Second Choice"},
							{"const": "value3", "title": "Third Choice"}]}}}}`)})
		})

	// The input schema is given as written, so that tools/list shows every
	// keyword of it (SEP-1613, SEP-2106).
	s.addFixtureTool("json_schema_2020_12_tool", "Takes an input schema that uses JSON Schema 2020-12 keywords.",
		json.RawMessage(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"$defs": {"address": {"$anchor": "addressDef", "type": "object",
				"properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
			"properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
				"contactMethod": {"type": "string", "enum": ["phone", "email"]},
				"phone": {"type": "string"}, "email": {"type": "string"}},
			"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
			"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
			"then": {"required": ["phone"]},
			"else": {"required": ["email"]},
			"additionalProperties": false}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return fixtureText("JSON Schema 2020-12 tool called with: %s", req.Params.Arguments), nil
		})

	tool("test_reconnection", "Closes its SSE stream mid-call (SEP-1699); the result arrives on the stream the client resumes.",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 10 * time.Millisecond})
			}
			if err := fixtureWait(ctx, 2*fixtureStep); err != nil { // the client reconnects meanwhile
				return nil, err
			}
			return fixtureText("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."), nil
		})

	s.addFixtureTool("test_x_mcp_header", "Takes an argument mirrored into the Mcp-Param-Region header (SEP-2243).",
		json.RawMessage(`{"type": "object", "properties": {
			"region": {"type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region"},
			"level": {"type": "integer", "description": "not mirrored"}}}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				Region string
				Level  int
			}
			if bad := fixtureArgs(req, &in); bad != nil {
				return bad, nil
			}
			return fixtureText("region=%s", in.Region), nil
		})
	tool("test_missing_capability", "Needs the client's sampling capability: without it, -32021 naming it (SEP-2575).",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
				return fixtureText("The client declared sampling."), nil
			}
			data, err := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}}})
			if err != nil {
				return nil, err
			}
			return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "this tool needs the client's sampling capability", Data: data}
		})
	tool("test_streaming_elicitation", "Answers on its response stream without sending the client a request (SEP-2575).",
		fixtureAnswer(fixtureText("a result, and no request on the response stream")))
	tool("test_logging_tool", "Logs one message, which reaches only a client that asked for logs (SEP-2575).",
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "conformance", Data: "test_logging_tool ran"}); err != nil {
				return nil, err
			}
			return fixtureText("logged at info"), nil
		})
	tool("test_trigger_tool_change", "Adds a tool, which tells listening clients that the tool list changed.",
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tool("test_transient_tool", "Added by test_trigger_tool_change.", fixtureAnswer(fixtureText("transient")))
			return fixtureText("tools/list_changed sent"), nil
		})
	tool("test_trigger_prompt_change", "Adds a prompt, which tells listening clients that the prompt list changed.",
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.mcp.AddPrompt(&mcp.Prompt{Name: "test_transient_prompt", Description: "Added by test_trigger_prompt_change."},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "transient"}}}}, nil
				})
			return fixtureText("prompts/list_changed sent"), nil
		})
}

// elicited asks the client params and answers with what it said.
func fixtureElicit(ctx context.Context, req *mcp.CallToolRequest, label string, params *mcp.ElicitParams) (*mcp.CallToolResult, error) {
	res, err := req.Session.Elicit(ctx, params)
	if err != nil {
		return fixtureError("elicitation: %v", err), nil
	}
	content, err := json.Marshal(res.Content)
	if err != nil {
		return nil, err
	}
	return fixtureText("%s: action=%s, content=%s", label, res.Action, content), nil
}

// fixtureState is the requestState of the multi round-trip fixtures:
// which fixture issued it, at which round, with what was answered before.
// It is signed with the server's key (Service.SignState), as stepwise's
// own requestStates are, so that a state altered by the client is refused.
type fixtureState struct {
	Fixture string `json:"fixture"`
	Round   int    `json:"round"`
	Name    string `json:"name,omitempty"`
}

func (s *Server) signFixtureState(st fixtureState) string {
	b, _ := json.Marshal(st)
	return s.svc.SignState(b)
}

// openFixtureState opens a state signFixtureState made for fixture; an
// altered, foreign or missing one is invalid params.
func (s *Server) openFixtureState(state, fixture string) (fixtureState, error) {
	var st fixtureState
	b, err := s.svc.OpenState(state)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil || st.Fixture != fixture {
		return st, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState is not one this server issued for " + fixture}
	}
	return st, nil
}

// accepted is the content of the elicitation answered under key, when the
// user accepted it.
func fixtureAccepted(responses mcp.InputResponseMap, key string) map[string]any {
	if r, ok := responses[key].(*mcp.ElicitResult); ok && r != nil && r.Action == "accept" {
		return r.Content
	}
	return nil
}

// sampled is the text of the sampling answered under key.
func fixtureSampled(responses mcp.InputResponseMap, key string) (string, bool) {
	switch r := responses[key].(type) {
	case *mcp.CreateMessageWithToolsResult:
		if r == nil {
			return "", false
		}
		for _, c := range r.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				return t.Text, true
			}
		}
		return "", true
	case *mcp.CreateMessageResult:
		if r == nil {
			return "", false
		}
		if t, ok := r.Content.(*mcp.TextContent); ok {
			return t.Text, true
		}
		return "", true
	}
	return "", false
}

// listedRoots is the URIs of the roots answered under key.
func fixtureRoots(responses mcp.InputResponseMap, key string) ([]string, bool) {
	r, ok := responses[key].(*mcp.ListRootsResult)
	if !ok || r == nil {
		return nil, false
	}
	uris := []string{}
	for _, root := range r.Roots {
		uris = append(uris, root.URI)
	}
	return uris, true
}

// askForm is an elicitation of one field.
func fixtureForm(message, field, typ string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: message, RequestedSchema: json.RawMessage(
		fmt.Sprintf(`{"type":"object","properties":{%q:{"type":%q}},"required":[%q]}`, field, typ, field))}
}

func fixtureSampling(prompt string, maxTokens int64) *mcp.CreateMessageParams {
	return &mcp.CreateMessageParams{MaxTokens: maxTokens, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}}}
}

// needs is a result asking the client for inputs (SEP-2322): the SDK sends
// it as an input_required result to a client on 2026-07-28, and asks an
// older client itself, calling the handler again with its answers.
func fixtureNeeds(requests mcp.InputRequestMap, state string) *mcp.CallToolResult {
	return &mcp.CallToolResult{InputRequests: requests, RequestState: state}
}

// addFixtureInputTools adds the tools of the input-required-result
// scenarios (SEP-2322, multi round-trip requests).
func (s *Server) addFixtureInputTools() {
	tool := func(name, description string, h mcp.ToolHandler) {
		s.addFixtureTool(name, description, fixtureNoArgs, h)
	}
	tool("test_input_required_result_elicitation", "Asks the client for a name (user_name) and greets it.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if name, _ := fixtureAccepted(req.Params.InputResponses, "user_name")["name"].(string); name != "" {
				return fixtureText("Hello, %s!", name), nil
			}
			return fixtureNeeds(mcp.InputRequestMap{"user_name": fixtureForm("What is your name?", "name", "string")}, ""), nil
		})
	tool("test_input_required_result_sampling", "Asks the client's LLM a question (capital_question) and answers its reply.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if reply, ok := fixtureSampled(req.Params.InputResponses, "capital_question"); ok {
				return fixtureText("Sampling response: %s", reply), nil
			}
			return fixtureNeeds(mcp.InputRequestMap{"capital_question": fixtureSampling("What is the capital of France?", 100)}, ""), nil
		})
	tool("test_input_required_result_list_roots", "Asks the client for its roots (client_roots) and lists them.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if uris, ok := fixtureRoots(req.Params.InputResponses, "client_roots"); ok {
				return fixtureText("Client exposed %d root(s): %s", len(uris), strings.Join(uris, ", ")), nil
			}
			return fixtureNeeds(mcp.InputRequestMap{"client_roots": &mcp.ListRootsParams{}}, ""), nil
		})
	confirm := func(fixture string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState != "" {
				if _, err := s.openFixtureState(req.Params.RequestState, fixture); err != nil {
					return nil, err
				}
				if fixtureAccepted(req.Params.InputResponses, "confirm") != nil {
					return fixtureText("state-ok: requestState received and confirmation accepted"), nil
				}
			}
			return fixtureNeeds(mcp.InputRequestMap{"confirm": fixtureForm("Please confirm", "ok", "boolean")},
				s.signFixtureState(fixtureState{Fixture: fixture, Round: 1})), nil
		}
	}
	tool("test_input_required_result_request_state", "Asks for a confirmation with a signed requestState, checked on the retry.",
		confirm("test_input_required_result_request_state"))
	tool("test_input_required_result_tampered_state", "Asks for a confirmation with a signed requestState; an altered one is refused (-32602).",
		confirm("test_input_required_result_tampered_state"))
	const multiple = "test_input_required_result_multiple_inputs"
	tool(multiple, "Asks for a name, an LLM greeting and the client's roots in one round.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.Params.RequestState != "" {
				if _, err := s.openFixtureState(req.Params.RequestState, multiple); err != nil {
					return nil, err
				}
			}
			r := req.Params.InputResponses
			name, _ := fixtureAccepted(r, "user_name")["name"].(string)
			greeting, greeted := fixtureSampled(r, "greeting")
			roots, listed := fixtureRoots(r, "client_roots")
			if name != "" && greeted && listed {
				return fixtureText("%s %s (%d root(s) visible)", greeting, name, len(roots)), nil
			}
			return fixtureNeeds(mcp.InputRequestMap{
				"user_name":    fixtureForm("What is your name?", "name", "string"),
				"greeting":     fixtureSampling("Generate a greeting", 50),
				"client_roots": &mcp.ListRootsParams{},
			}, s.signFixtureState(fixtureState{Fixture: multiple, Round: 1})), nil
		})
	const multiRound = "test_input_required_result_multi_round"
	tool(multiRound, "Asks for a name, then for a colour (requestState carries the name), then answers both.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st := fixtureState{Fixture: multiRound}
			if req.Params.RequestState != "" {
				var err error
				if st, err = s.openFixtureState(req.Params.RequestState, multiRound); err != nil {
					return nil, err
				}
			}
			r := req.Params.InputResponses
			switch st.Round {
			case 1:
				if name, _ := fixtureAccepted(r, "step1")["name"].(string); name != "" {
					return fixtureNeeds(mcp.InputRequestMap{"step2": fixtureForm("Step 2: What is your favorite color?", "color", "string")},
						s.signFixtureState(fixtureState{Fixture: multiRound, Round: 2, Name: name})), nil
				}
			case 2:
				if color, _ := fixtureAccepted(r, "step2")["color"].(string); color != "" {
					return fixtureText("Multi-round complete: %s likes %s", st.Name, color), nil
				}
				return fixtureNeeds(mcp.InputRequestMap{"step2": fixtureForm("Step 2: What is your favorite color?", "color", "string")},
					req.Params.RequestState), nil
			}
			return fixtureNeeds(mcp.InputRequestMap{"step1": fixtureForm("Step 1: What is your name?", "name", "string")},
				s.signFixtureState(fixtureState{Fixture: multiRound, Round: 1})), nil
		})
	tool("test_input_required_result_capabilities", "Asks only for the inputs the client's declared capabilities allow.",
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				return fixtureText("The inputs the client can give were given."), nil
			}
			caps := req.ClientCapabilities()
			asks := mcp.InputRequestMap{}
			if caps != nil && caps.Elicitation != nil {
				asks["user_name"] = fixtureForm("What is your name?", "name", "string")
			}
			if caps != nil && caps.Sampling != nil {
				asks["greeting"] = fixtureSampling("Generate a short greeting", 50)
			}
			if caps != nil && (caps.RootsV2 != nil || caps.Roots.ListChanged) {
				asks["client_roots"] = &mcp.ListRootsParams{}
			}
			if len(asks) == 0 {
				return fixtureText("The client declared no capability to ask it through."), nil
			}
			return fixtureNeeds(asks, ""), nil
		})
}

// addFixtureResources adds the resources of the resources-* scenarios.
func (s *Server) addFixtureResources() {
	static := func(r *mcp.Resource, contents *mcp.ResourceContents) {
		s.addResource(r, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{contents}}, nil
		})
	}
	static(&mcp.Resource{URI: "test://static-text", Name: "static-text", Title: "Static Text Resource",
		Description: "A text that never changes.", MIMEType: "text/plain"},
		&mcp.ResourceContents{URI: "test://static-text", MIMEType: "text/plain", Text: "This is the content of the static text resource."})
	static(&mcp.Resource{URI: "test://static-binary", Name: "static-binary", Title: "Static Binary Resource",
		Description: "A 1x1 PNG.", MIMEType: "image/png"},
		&mcp.ResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: fixturePNG})
	static(&mcp.Resource{URI: "test://watched-resource", Name: "watched-resource", Title: "Watched Resource",
		Description: "A resource to subscribe to.", MIMEType: "text/plain"},
		&mcp.ResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content"})
	s.addResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://template/{id}/data", Name: "template", Title: "Resource Template",
		Description: "Data for the id in the URI.", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "test://template/"), "/data")
			b, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
			if err != nil {
				return nil, err
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}

// addFixturePrompts adds the prompts of the prompts-get-* scenarios and of
// input-required-result-non-tool-request.
func (s *Server) addFixturePrompts() {
	prompt := func(p *mcp.Prompt, h func(args map[string]string) []*mcp.PromptMessage) {
		s.mcp.AddPrompt(p, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Description: p.Description, Messages: h(req.Params.Arguments)}, nil
		})
	}
	user := func(c mcp.Content) *mcp.PromptMessage { return &mcp.PromptMessage{Role: "user", Content: c} }
	prompt(&mcp.Prompt{Name: "test_simple_prompt", Title: "Simple Test Prompt", Description: "A prompt without arguments."},
		func(map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{user(&mcp.TextContent{Text: "This is a simple prompt for testing."})}
		})
	prompt(&mcp.Prompt{Name: "test_prompt_with_arguments", Title: "Prompt With Arguments", Description: "A prompt with two required arguments.",
		Arguments: []*mcp.PromptArgument{{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true}}},
		func(a map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{user(&mcp.TextContent{Text: fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"])})}
		})
	prompt(&mcp.Prompt{Name: "test_prompt_with_embedded_resource", Title: "Prompt With Embedded Resource",
		Description: "A prompt that embeds the resource its argument names.",
		Arguments:   []*mcp.PromptArgument{{Name: "resourceUri", Description: "URI of the resource to embed", Required: true}}},
		func(a map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{
				user(&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: a["resourceUri"], MIMEType: "text/plain", Text: "Embedded resource content for testing."}}),
				user(&mcp.TextContent{Text: "Please process the embedded resource above."}),
			}
		})
	prompt(&mcp.Prompt{Name: "test_prompt_with_image", Title: "Prompt With Image", Description: "A prompt with an image."},
		func(map[string]string) []*mcp.PromptMessage {
			return []*mcp.PromptMessage{user(&mcp.ImageContent{Data: fixturePNG, MIMEType: "image/png"}),
				user(&mcp.TextContent{Text: "Please analyze the image above."})}
		})
	s.mcp.AddPrompt(&mcp.Prompt{Name: "test_input_required_result_prompt", Title: "Prompt That Asks",
		Description: "Asks the client for the context (user_context) before it answers (SEP-2322)."},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if c, _ := fixtureAccepted(req.Params.InputResponses, "user_context")["context"].(string); c != "" {
				return &mcp.GetPromptResult{Description: "A prompt with the context the client gave",
					Messages: []*mcp.PromptMessage{user(&mcp.TextContent{Text: "Context: " + c})}}, nil
			}
			return &mcp.GetPromptResult{InputRequests: mcp.InputRequestMap{
				"user_context": fixtureForm("What context should the prompt use?", "context", "string")}}, nil
		})
}

// The task fixtures of the Tasks extension scenarios (tasks-*): tools that
// a client which declared the extension gets answered as tasks, through
// mcptasks like stepwise's runs. Their tasks live in memory
// (fixtureTasks), under ids of their own (fixtureTaskPrefix), which this
// server's mcptasks.Handler sends here (tasks.fixtures).

// fixtureTaskPrefix starts a fixture task's id; 16 random bytes follow.
const fixtureTaskPrefix = "fxt_"

// fixtureTaskMax bounds the fixture tasks kept: past it, the oldest goes
// (canceled, if it still runs).
const fixtureTaskMax = 256

// fixtureTaskTTL is how long a fixture task runs and is kept at most.
const fixtureTaskTTL = 10 * time.Minute

// fixtureTasks is the in-memory store of the fixture tasks; it implements
// mcptasks.Handler for their ids.
type fixtureTasks struct {
	mu    sync.Mutex
	byID  map[string]*fixtureTask
	order []string // ids, oldest first
}

// fixtureTask is one task: its state, the input requests it waits on and
// the answers given to them. Its fields are guarded by fixtureTasks.mu.
type fixtureTask struct {
	d       mcptasks.DetailedTask
	pending mcp.InputRequestMap  // outstanding, while input_required
	answers mcp.InputResponseMap // given to the current requests
	ready   chan struct{}        // closed once every request is answered
	cancel  context.CancelFunc
}

// fixtureAsk asks the client for inputs and returns its answers: a task's
// requests wait for tasks/update, a call's (not a task) cannot be asked.
type fixtureAsk func(ctx context.Context, requests mcp.InputRequestMap) (mcp.InputResponseMap, error)

// fixtureWork is what a task fixture does; its result is the task's (an
// isError result completes it too), a *jsonrpc.Error fails it.
type fixtureWork func(ctx context.Context, ask fixtureAsk) (*mcp.CallToolResult, error)

// do runs the work; a panic is an internal error (-32603).
func (work fixtureWork) do(ctx context.Context, ask fixtureAsk) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	return work(ctx, ask)
}

// errFixtureNoTask is what a fixture that asks for input answers a call
// that is not a task.
var errFixtureNoTask = errors.New("this fixture asks for input only as a task: declare the extension " + mcptasks.Extension)

// start records a task running work and starts it.
func (f *fixtureTasks) start(work fixtureWork) (mcptasks.Task, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return mcptasks.Task{}, err
	}
	now := mcptasks.Time(time.Now())
	ttl := fixtureTaskTTL.Milliseconds()
	t := &fixtureTask{d: mcptasks.DetailedTask{Task: mcptasks.Task{TaskID: fixtureTaskPrefix + hex.EncodeToString(b[:]),
		Status: mcptasks.Working, CreatedAt: now, LastUpdatedAt: now, TTLMs: &ttl, PollIntervalMs: 100}}}
	ctx, cancel := context.WithTimeout(context.Background(), fixtureTaskTTL)
	t.cancel = cancel
	f.mu.Lock()
	if f.byID == nil {
		f.byID = map[string]*fixtureTask{}
	}
	for len(f.order) >= fixtureTaskMax {
		if old := f.byID[f.order[0]]; old != nil {
			old.cancel()
		}
		delete(f.byID, f.order[0])
		f.order = f.order[1:]
	}
	f.byID[t.d.TaskID] = t
	f.order = append(f.order, t.d.TaskID)
	created := t.d.Task
	f.mu.Unlock()
	go f.run(ctx, t, work)
	return created, nil
}

// run runs work and records how it ended, unless the task ended before
// (tasks/cancel).
func (f *fixtureTasks) run(ctx context.Context, t *fixtureTask, work fixtureWork) {
	defer t.cancel()
	res, err := work.do(ctx, func(ctx context.Context, requests mcp.InputRequestMap) (mcp.InputResponseMap, error) {
		return f.ask(ctx, t, requests)
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	if terminal(t.d.Status) {
		return
	}
	t.d.InputRequests = nil
	var we *jsonrpc.Error
	switch {
	case err == nil:
		t.d.Status, t.d.Result = mcptasks.Completed, res
	case ctx.Err() != nil:
		t.d.Status, t.d.StatusMessage = mcptasks.Cancelled, "the task's time ran out"
	case errors.As(err, &we):
		t.d.Status, t.d.Error = mcptasks.Failed, we
	default:
		t.d.Status, t.d.Error = mcptasks.Failed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	t.d.LastUpdatedAt = mcptasks.Time(time.Now())
}

func terminal(s mcptasks.Status) bool {
	return s == mcptasks.Completed || s == mcptasks.Failed || s == mcptasks.Cancelled
}

// ask makes the task input_required with requests until tasks/update has
// answered every one of them.
func (f *fixtureTasks) ask(ctx context.Context, t *fixtureTask, requests mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ready := make(chan struct{})
	f.mu.Lock()
	if terminal(t.d.Status) {
		f.mu.Unlock()
		return nil, context.Canceled
	}
	t.pending, t.answers, t.ready = mcp.InputRequestMap{}, mcp.InputResponseMap{}, ready
	for k, r := range requests {
		t.pending[k] = r
	}
	t.d.Status, t.d.InputRequests, t.d.LastUpdatedAt = mcptasks.InputRequired, t.pending, mcptasks.Time(time.Now())
	f.mu.Unlock()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	answers := t.answers
	t.answers, t.ready = nil, nil
	if !terminal(t.d.Status) {
		t.d.Status, t.d.InputRequests, t.d.LastUpdatedAt = mcptasks.Working, nil, mcptasks.Time(time.Now())
	}
	return answers, nil
}

func (f *fixtureTasks) task(id string) (*fixtureTask, error) {
	t, ok := f.byID[id]
	if !ok {
		return nil, mcptasks.ErrUnknownTask
	}
	return t, nil
}

// Get implements mcptasks.Handler.
func (f *fixtureTasks) Get(_ context.Context, id string) (*mcptasks.DetailedTask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.task(id)
	if err != nil {
		return nil, err
	}
	d := t.d
	if d.InputRequests != nil { // a copy: tasks/update shrinks the task's
		d.InputRequests = mcp.InputRequestMap{}
		for k, r := range t.d.InputRequests {
			d.InputRequests[k] = r
		}
	}
	return &d, nil
}

// Update implements mcptasks.Handler: an answer to an outstanding request
// is taken and the request is no longer outstanding; other keys are
// ignored. The task goes on once every request is answered.
func (f *fixtureTasks) Update(_ context.Context, id string, responses mcp.InputResponseMap) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.task(id)
	if err != nil {
		return err
	}
	if t.ready == nil || len(t.pending) == 0 {
		return nil
	}
	for k, r := range responses {
		if _, ok := t.pending[k]; ok {
			t.answers[k] = r
			delete(t.pending, k)
		}
	}
	t.d.LastUpdatedAt = mcptasks.Time(time.Now())
	if len(t.pending) == 0 {
		close(t.ready)
	}
	return nil
}

// Cancel implements mcptasks.Handler: a task not finished is cancelled at
// once and its work stopped; a finished one stays as it is.
func (f *fixtureTasks) Cancel(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, err := f.task(id)
	if err != nil {
		return err
	}
	if terminal(t.d.Status) {
		return nil
	}
	t.cancel()
	t.d.Status, t.d.StatusMessage, t.d.InputRequests = mcptasks.Cancelled, "canceled by tasks/cancel", nil
	t.d.LastUpdatedAt = mcptasks.Time(time.Now())
	return nil
}

// addFixtureTaskTool adds a fixture whose call, for a client that declared
// the Tasks extension, is answered with a task running the work made of
// the call (nil work: the handler's own result). Any other client gets the
// work's result as the call's, or -32021 when the tool requires a task.
func (s *Server) addFixtureTaskTool(name, description string, schema json.RawMessage, required bool,
	prepare func(req *mcp.CallToolRequest) (fixtureWork, *mcp.CallToolResult)) {
	s.addFixtureTool(name, description, schema, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !mcptasks.Declared(ctx) && required {
			return nil, mcptasks.MissingCapability()
		}
		work, answer := prepare(req)
		if work == nil {
			return answer, nil
		}
		if !mcptasks.Declared(ctx) {
			res, err := work.do(ctx, func(context.Context, mcp.InputRequestMap) (mcp.InputResponseMap, error) { return nil, errFixtureNoTask })
			if errors.Is(err, errFixtureNoTask) {
				return fixtureError("%v", err), nil
			}
			return res, err
		}
		t, err := s.fixtureTasks.start(work)
		if err != nil {
			return nil, err
		}
		mcptasks.Create(ctx, t)
		return fixtureText("task %s", t.TaskID), nil // replaced by the task
	})
}

// addFixtureTaskTools adds the tools of the tasks-* scenarios.
func (s *Server) addFixtureTaskTools() {
	s.addFixtureTool("greet", "Greets a name; never a task.",
		json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ Name string }
			if bad := fixtureArgs(req, &in, "name"); bad != nil {
				return bad, nil
			}
			return fixtureText("Hello, %s!", in.Name), nil
		})
	s.addFixtureTaskTool("slow_compute", "Sleeps the given seconds (at most 60), then answers; a task for a client with the Tasks extension.",
		json.RawMessage(`{"type":"object","properties":{"seconds":{"type":"number","minimum":0,"maximum":60},"label":{"type":"string"}}}`), false,
		func(req *mcp.CallToolRequest) (fixtureWork, *mcp.CallToolResult) {
			var in struct {
				Seconds float64
				Label   string
			}
			if bad := fixtureArgs(req, &in); bad != nil {
				return nil, bad
			}
			d := time.Duration(min(max(in.Seconds, 0), 60) * float64(time.Second))
			return func(ctx context.Context, _ fixtureAsk) (*mcp.CallToolResult, error) {
				if err := fixtureWait(ctx, d); err != nil {
					return nil, err
				}
				return fixtureText("computed %q in %v", in.Label, d), nil
			}, nil
		})
	s.addFixtureTaskTool("failing_job", "Fails as a tool (isError) after a moment; requires a task.", fixtureNoArgs, true,
		func(*mcp.CallToolRequest) (fixtureWork, *mcp.CallToolResult) {
			return func(ctx context.Context, _ fixtureAsk) (*mcp.CallToolResult, error) {
				if err := fixtureWait(ctx, 4*fixtureStep); err != nil {
					return nil, err
				}
				return fixtureError("failing_job failed, as it always does"), nil
			}, nil
		})
	s.addFixtureTaskTool("protocol_error_job", "Panics: its task fails with a JSON-RPC error.", fixtureNoArgs, false,
		func(*mcp.CallToolRequest) (fixtureWork, *mcp.CallToolResult) {
			return func(context.Context, fixtureAsk) (*mcp.CallToolResult, error) {
				panic("protocol_error_job panics, as it always does")
			}, nil
		})
	s.addFixtureTaskTool("confirm_delete", "Asks the user to confirm the deletion of a file (elicitation), then answers what was decided.",
		json.RawMessage(`{"type":"object","properties":{"filename":{"type":"string"}},"required":["filename"]}`), false,
		func(req *mcp.CallToolRequest) (fixtureWork, *mcp.CallToolResult) {
			var in struct{ Filename string }
			if bad := fixtureArgs(req, &in, "filename"); bad != nil {
				return nil, bad
			}
			return func(ctx context.Context, ask fixtureAsk) (*mcp.CallToolResult, error) {
				answers, err := ask(ctx, mcp.InputRequestMap{"confirm": fixtureForm("Delete "+in.Filename+"?", "confirm", "boolean")})
				if err != nil {
					return nil, err
				}
				if ok, _ := fixtureAccepted(answers, "confirm")["confirm"].(bool); ok {
					return fixtureText("deleted %s", in.Filename), nil
				}
				return fixtureText("kept %s", in.Filename), nil
			}, nil
		})
	s.addFixtureTaskTool("multi_input", "Asks two questions at once (a name and a confirmation), then answers both.", fixtureNoArgs, false,
		func(*mcp.CallToolRequest) (fixtureWork, *mcp.CallToolResult) {
			return func(ctx context.Context, ask fixtureAsk) (*mcp.CallToolResult, error) {
				answers, err := ask(ctx, mcp.InputRequestMap{
					"name":    fixtureForm("What is your name?", "name", "string"),
					"confirm": fixtureForm("Go on?", "confirm", "boolean"),
				})
				if err != nil {
					return nil, err
				}
				name, _ := fixtureAccepted(answers, "name")["name"].(string)
				ok, _ := fixtureAccepted(answers, "confirm")["confirm"].(bool)
				return fixtureText("name=%s confirm=%t", name, ok), nil
			}, nil
		})
	s.addFixtureTaskTool("test_tool_with_task", "Asks for a name (user_name, a multi round-trip request), then greets it in a task; requires a task.",
		fixtureNoArgs, true,
		func(req *mcp.CallToolRequest) (fixtureWork, *mcp.CallToolResult) {
			name, _ := fixtureAccepted(req.Params.InputResponses, "user_name")["name"].(string)
			if name == "" {
				return nil, fixtureNeeds(mcp.InputRequestMap{"user_name": fixtureForm("What is your name?", "name", "string")}, "")
			}
			return func(ctx context.Context, _ fixtureAsk) (*mcp.CallToolResult, error) {
				if err := fixtureWait(ctx, fixtureStep); err != nil {
					return nil, err
				}
				return fixtureText("Hello, %s! (from a task)", name), nil
			}, nil
		})
}

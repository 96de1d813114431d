//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The protocol versions the go-sdk client is pinned to against the binary:
// the stateless revision and the last one with initialize.
const (
	protocolStateless = "2026-07-28"
	protocolSessions  = "2025-11-25"
)

// askCityYAML is the workflow the go-sdk sessions save and run: one
// question (answered through elicitation), then a step that uses it.
const askCityYAML = `version: 1
name: ask-city
inputs:
  who: {type: string, default: Ada}
steps:
  - id: city
    ask: {prompt: 'Which city?', type: string, pattern: '^[A-Z][a-z]+$'}
  - id: say
    uses: log
    with: {message: '${{ inputs.who }} lives in ${{ steps.city.answer }}'}
outputs:
  city: ${{ steps.city.answer }}
  said: ${{ steps.say.output.message }}
`

// wireLog is what crossed the wire, both ways, as the transport saw it.
type wireLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *wireLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *wireLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// wireMsg is one JSON-RPC message of a wireLog.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		InputResponses json.RawMessage `json:"inputResponses"`
		RequestState   string          `json:"requestState"`
	} `json:"params"`
	Result struct {
		ResultType    string          `json:"resultType"`
		InputRequests json.RawMessage `json:"inputRequests"`
		RequestState  string          `json:"requestState"`
	} `json:"result"`
}

// messages are the JSON-RPC messages logged: lines of LoggingTransport
// ("read: …", "write: …"), request bodies and SSE data lines.
func (w *wireLog) messages() []wireMsg {
	var out []wireMsg
	for _, line := range strings.Split(w.String(), "\n") {
		for _, prefix := range []string{"read: ", "write: ", "data: "} {
			line = strings.TrimPrefix(line, prefix)
		}
		var m wireMsg
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// sent reports whether a message with the method went over the wire, as a
// request (with an id) when request is true.
func (w *wireLog) sent(method string, request bool) bool {
	return slices.ContainsFunc(w.messages(), func(m wireMsg) bool {
		return m.Method == method && (!request || len(m.ID) > 0)
	})
}

// teeTransport copies HTTP request and response bodies to a wireLog.
type teeTransport struct{ log *wireLog }

func (t teeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		_, _ = t.log.Write(append(b, '\n'))
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(b))
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	res.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(res.Body, t.log), res.Body}
	return res, nil
}

// sdkClient is a go-sdk client that answers elicitations ("Which city?":
// Paris, "Your name?": Ada) and records them and resource updates.
type sdkClient struct {
	mu      sync.Mutex
	asked   []string
	updated []string
}

func (c *sdkClient) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "stepwise-e2e-go", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.asked = append(c.asked, req.Params.Message)
			c.mu.Unlock()
			switch {
			case strings.Contains(req.Params.Message, "Which city?"):
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"value": "Paris"}}, nil
			case strings.Contains(req.Params.Message, "Your name?"):
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"value": "Ada"}}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			c.updated = append(c.updated, r.Params.URI)
			c.mu.Unlock()
		},
	})
}

func (c *sdkClient) takeAsked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.asked
	c.asked = nil
	return a
}

func (c *sdkClient) wasUpdated(uri string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.updated, uri)
}

// TestGoSDKClientSessions runs one scripted session from the go-sdk client
// against the real binary over stdio (CommandTransport) and streamable HTTP
// (StreamableClientTransport), pinned to each protocol version: the version
// it negotiated, tools/list, a saved workflow run to its question answered
// through elicitation (input requests at 2026-07-28, a server-initiated
// elicitation/create before), run_get, resources, prompts, a subscription's
// update and structured errors for bad arguments.
func TestGoSDKClientSessions(t *testing.T) {
	bin := sharedBinary(t)
	for _, transport := range []string{"stdio", "http"} {
		for _, version := range []string{protocolStateless, protocolSessions} {
			t.Run(transport+"/"+version, func(t *testing.T) {
				wire := &wireLog{}
				var tr mcp.Transport
				if transport == "stdio" {
					cmd := exec.Command(bin, "--home", libraryHome(t), "serve")
					tr = &mcp.LoggingTransport{Transport: &mcp.CommandTransport{Command: cmd}, Writer: wire}
				} else {
					url, _ := startHTTP(t, bin)
					tr = &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: teeTransport{wire}}}
				}
				c := &sdkClient{}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cs, err := c.client().Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
				if err != nil {
					t.Fatalf("connect at %s: %v", version, err)
				}
				defer cs.Close()
				goSDKSession(ctx, t, cs, c, wire, version)
			})
		}
	}
}

func goSDKSession(ctx context.Context, t *testing.T, cs *mcp.ClientSession, c *sdkClient, wire *wireLog, version string) {
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %s, want %s (no fallback)", got, version)
	}
	if sentInitialize := wire.sent("initialize", true); sentInitialize != (version < protocolStateless) {
		t.Errorf("initialize sent: %v at %s", sentInitialize, version)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"workflow_save", "run_start", "run_continue", "run_get", "run_cancel"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	if r, isErr := callTool(t, cs, "workflow_save", map[string]any{"content": askCityYAML}, nil); isErr || !r.Valid || r.Name != "ask-city" {
		t.Fatalf("workflow_save ask-city: %+v", r)
	}
	run, isErr := callTool(t, cs, "run_start", map[string]any{"workflow": "ask-city", "inputs": map[string]any{"who": "Grace"}}, nil)
	if isErr || run.Status != "succeeded" || run.Outputs["city"] != "Paris" || run.Outputs["said"] != "Grace lives in Paris" {
		t.Fatalf("run_start ask-city, its question answered through elicitation: %+v", run)
	}
	if asked := c.takeAsked(); len(asked) != 1 || !strings.Contains(asked[0], "Which city?") {
		t.Errorf("elicitations: %q, want one asking \"Which city?\"", asked)
	}
	var asked, retried bool
	for _, m := range wire.messages() {
		if m.Result.ResultType == "input_required" && len(m.Result.InputRequests) > 0 && m.Result.RequestState != "" {
			asked = true
			retried = retried || slices.ContainsFunc(wire.messages(), func(r wireMsg) bool {
				return r.Method == "tools/call" && len(r.Params.InputResponses) > 0 && r.Params.RequestState == m.Result.RequestState
			})
		}
	}
	mrtr := asked && retried
	serverAsked := wire.sent("elicitation/create", true)
	if version >= protocolStateless && (!mrtr || serverAsked) {
		t.Errorf("at %s the question must come back as input requests (MRTR: %v) and never as a server request (%v)", version, mrtr, serverAsked)
	}
	if version < protocolStateless && (mrtr || !serverAsked) {
		t.Errorf("at %s the question must be a server-initiated elicitation/create (%v), not input requests (%v)", version, serverAsked, mrtr)
	}

	if r, isErr := callTool(t, cs, "run_get", map[string]any{"run_id": run.RunID}, nil); isErr || r.Status != "succeeded" || r.Outputs["city"] != "Paris" {
		t.Errorf("run_get: %+v", r)
	}

	// greet: the name elicited, the agent step returned; subscribed, the
	// answer to the agent step brings an update of the run's resource.
	greet, isErr := callTool(t, cs, "run_start", map[string]any{"workflow": "greet"}, nil)
	if isErr || greet.Status != "waiting" || greet.Pause == nil || greet.Pause.Kind != "agent" {
		t.Fatalf("run_start greet: %+v", greet)
	}
	if asked := c.takeAsked(); len(asked) != 1 || !strings.Contains(asked[0], "Your name?") {
		t.Errorf("elicitations: %q, want one asking \"Your name?\"", asked)
	}
	uri := "stepwise://runs/" + greet.RunID
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	if version >= protocolStateless && !wire.sent("subscriptions/listen", true) {
		t.Errorf("at %s Subscribe must open subscriptions/listen", version)
	}
	done, isErr := callTool(t, cs, "run_continue", map[string]any{"token": greet.Pause.Token, "value": map[string]any{"line": "Hi Ada!"}}, nil)
	if isErr || done.Status != "succeeded" || done.Outputs["name"] != "Ada" {
		t.Fatalf("run_continue greet: %+v", done)
	}
	for deadline := time.Now().Add(15 * time.Second); !c.wasUpdated(uri); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no notifications/resources/updated for %s", uri)
		}
	}
	_ = cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil || len(res.Contents) != 1 {
		t.Fatalf("read %s: %v", uri, err)
	}
	var view struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &view); err != nil || view.Status != "succeeded" {
		t.Errorf("read %s: %s (%v)", uri, res.Contents[0].Text, err)
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil || !slices.ContainsFunc(resources.Resources, func(r *mcp.Resource) bool { return r.URI == "stepwise://docs/workflows" }) {
		t.Errorf("resources/list: %v", err)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) == 0 {
		t.Errorf("prompts/list: %v", err)
	}

	// Bad arguments: a structured tool error, not a protocol failure.
	if r, isErr := callTool(t, cs, "run_start", map[string]any{"workflow": 42}, nil); !isErr || r.ErrorCode != "ARGUMENTS_INVALID" || r.Category != "validation" {
		t.Errorf("run_start {workflow: 42}: %+v", r)
	}
	if r, isErr := callTool(t, cs, "run_get", map[string]any{"run_id": "no-such-run"}, nil); !isErr || r.ErrorCode != "RUN_NOT_FOUND" {
		t.Errorf("run_get of an unknown run: %+v", r)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool"}); err == nil || !regexp.MustCompile(`no_such_tool`).MatchString(err.Error()) {
		t.Errorf("tools/call of an unknown tool: %v, want an error naming it", err)
	}
}

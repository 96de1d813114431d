package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/docs"
	"stepwise.dev/stepwise/internal/service"
)

// The ceilings of what every session costs an agent's context: the bytes
// of the JSON results a client receives.
const (
	maxToolsListAll  = 24_000 // tools/list, every built-in tool
	maxToolsListCore = 10_000 // tools/list with --tools core
	maxShortLanguage = 8_000  // stepwise://docs/workflows and the author_workflow prompt
)

// resultSizes is a client transport that records the size of the result
// of every response it reads, as it came off the wire.
type resultSizes struct {
	mcp.Transport
	mu   sync.Mutex
	last int
}

func (r *resultSizes) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &sizeConn{Connection: c, r: r}, nil
}

// lastResult is the size of the last response's result.
func (r *resultSizes) lastResult() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

type sizeConn struct {
	mcp.Connection
	r *resultSizes
}

func (c *sizeConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.r.mu.Lock()
		c.r.last = len(resp.Result)
		c.r.mu.Unlock()
	}
	return msg, err
}

// measuredSession connects a client to a server with these options over
// in-memory transports, recording result sizes.
func measuredSession(t *testing.T, opts Options) (*mcp.ClientSession, *resultSizes) {
	t.Helper()
	e := newEnv(t, opts, service.Options{})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	sizes := &resultSizes{Transport: ct}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), sizes, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs, sizes
}

// TestToolsListSize measures tools/list as a client receives it, for every
// tool and for the core profile, and fails above the ceilings.
func TestToolsListSize(t *testing.T) {
	for _, c := range []struct {
		profile ToolProfile
		max     int
	}{{ToolsAll, maxToolsListAll}, {ToolsCore, maxToolsListCore}} {
		cs, sizes := measuredSession(t, Options{Tools: c.profile})
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		n := sizes.lastResult()
		t.Logf("tools/list --tools %s: %d tools, %d bytes (ceiling %d)", c.profile, len(res.Tools), n, c.max)
		if n == 0 || n > c.max {
			t.Errorf("tools/list --tools %s is %d bytes, over %d", c.profile, n, c.max)
		}
		if c.profile == ToolsAll && len(res.Tools) != len(builtinSchemas) {
			t.Errorf("--tools all lists %d tools, want all %d", len(res.Tools), len(builtinSchemas))
		}
	}
}

// TestCoreProfile checks that --tools core lists exactly the core tools
// and that the others are unknown to its sessions.
func TestCoreProfile(t *testing.T) {
	cs, _ := measuredSession(t, Options{Tools: ToolsCore})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	want := slices.Clone(coreTools)
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("core lists %v, want %v", names, want)
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_list", Arguments: map[string]any{}})
	if err == nil && !r.IsError {
		t.Errorf("run_list answered under --tools core: %v", r.StructuredContent)
	}
	var wl WorkflowListOut
	if call(t, cs, "workflow_list", map[string]any{}, &wl) || len(wl.Workflows) == 0 {
		t.Errorf("workflow_list under --tools core: %+v", wl)
	}
}

func TestParseToolProfile(t *testing.T) {
	for in, want := range map[string]ToolProfile{"": ToolsAll, "all": ToolsAll, "core": ToolsCore} {
		if got, err := ParseToolProfile(in); err != nil || got != want {
			t.Errorf("ParseToolProfile(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Core", "none", "all,core"} {
		if _, err := ParseToolProfile(in); err == nil || !strings.Contains(err.Error(), "all or core") {
			t.Errorf("ParseToolProfile(%q): %v, want an error naming the profiles", in, err)
		}
	}
}

// TestShortLanguageSize measures the language's short forms — the
// resource and the author_workflow prompt — and checks that the long
// forms stay reachable.
func TestShortLanguageSize(t *testing.T) {
	cs, sizes := measuredSession(t, Options{})
	ctx := context.Background()
	doc, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uriDocs})
	if err != nil {
		t.Fatal(err)
	}
	docSize := sizes.lastResult()
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "author_workflow", Arguments: map[string]string{"goal": "rotate keys"}}); err != nil {
		t.Fatal(err)
	}
	promptSize := sizes.lastResult()
	full, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uriDocsFull})
	if err != nil {
		t.Fatal(err)
	}
	fullSize := sizes.lastResult()
	fullPrompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "author_workflow", Arguments: map[string]string{"goal": "rotate keys", "language": "full"}})
	if err != nil {
		t.Fatal(err)
	}
	fullPromptSize := sizes.lastResult()
	t.Logf("%s: %d bytes; author_workflow: %d bytes; %s: %d bytes; author_workflow language=full: %d bytes",
		uriDocs, docSize, promptSize, uriDocsFull, fullSize, fullPromptSize)
	for what, n := range map[string]int{uriDocs: docSize, "author_workflow": promptSize} {
		if n == 0 || n > maxShortLanguage {
			t.Errorf("%s is %d bytes, over %d", what, n, maxShortLanguage)
		}
	}
	if !strings.Contains(doc.Contents[0].Text, uriDocsFull) {
		t.Errorf("the short language does not name %s", uriDocsFull)
	}
	if full.Contents[0].Text != docs.Workflows {
		t.Errorf("%s is not the full reference", uriDocsFull)
	}
	data, _ := json.Marshal(fullPrompt.Messages)
	if !strings.Contains(string(data), uriDocsFull) || !strings.Contains(string(data), uriSchema) || fullPromptSize < len(docs.Workflows) {
		t.Errorf("author_workflow language=full does not attach the reference and the schema (%d bytes)", fullPromptSize)
	}
}

// TestRunResultsFitOutputSchema checks what clients check: the structured
// content of the run tools' results — a run waiting, then succeeded, and
// an error — fits the output schema tools/list gives them.
func TestRunResultsFitOutputSchema(t *testing.T) {
	cs, _ := measuredSession(t, Options{})
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		data, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		if schemas[tool.Name], err = s.Resolve(nil); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
	}
	for name := range outputSchemaTools {
		if schemas[name] == nil {
			t.Errorf("%s has no output schema", name)
		}
	}
	check := func(name string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(res.StructuredContent)
		var v map[string]any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("%s: %s", name, data)
		}
		if err := schemas[name].Validate(v); err != nil {
			t.Errorf("%s (isError %v): %s does not fit its output schema: %v", name, res.IsError, data, err)
		}
		return v
	}
	started := check("run_start", map[string]any{"workflow": "greet", "wait_seconds": 5})
	pause, _ := started["pause"].(map[string]any)
	if started["status"] != "waiting" || pause == nil {
		t.Fatalf("run_start: %v", started)
	}
	asked := check("run_continue", map[string]any{"token": pause["token"], "value": "Ada", "wait_seconds": 5})
	pause, _ = asked["pause"].(map[string]any)
	if pause == nil {
		t.Fatalf("run_continue: %v", asked)
	}
	done := check("run_continue", map[string]any{"token": pause["token"], "value": map[string]any{"line": "Hello, Ada!"}, "wait_seconds": 5})
	if done["status"] != "succeeded" {
		t.Fatalf("run_continue: %v", done)
	}
	check("run_get", map[string]any{"run_id": done["run_id"]})
	if failed := check("run_get", map[string]any{"run_id": "no-such-run"}); failed["error_code"] == nil {
		t.Errorf("run_get of a missing run: %v", failed)
	}
}

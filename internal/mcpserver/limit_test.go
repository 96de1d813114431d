package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/clip"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// bigOpenAPI is an OpenAPI 3.0 document of n operations in the manner of
// GitHub's: operationIds with a slash (each renamed into an action name,
// each a warning), twenty tags, long descriptions and request bodies.
func bigOpenAPI(n int) []byte {
	paths := map[string]any{}
	desc := strings.Repeat("Lists the things of a repository, page by page, with their details. ", 4)
	for i := 0; i < n; i += 2 {
		tag := fmt.Sprintf("tag%02d", (i/2)%20)
		params := []any{
			map[string]any{"name": "owner", "in": "path", "required": true, "schema": map[string]any{"type": "string"}, "description": "The account owner."},
			map[string]any{"name": "per_page", "in": "query", "schema": map[string]any{"type": "integer", "default": 30}, "description": "Results per page (max 100)."},
		}
		body := map[string]any{"type": "object", "properties": map[string]any{}}
		for j := 0; j < 12; j++ {
			body["properties"].(map[string]any)[fmt.Sprintf("field_%d", j)] = map[string]any{"type": "string", "description": "A field of the thing, as the API documents it at length."}
		}
		ok := map[string]any{"200": map[string]any{"description": "OK"}}
		paths[fmt.Sprintf("/repos/{owner}/things%d", i)] = map[string]any{
			"get": map[string]any{"operationId": fmt.Sprintf("repos/list-things-%d", i), "summary": "List things " + fmt.Sprint(i),
				"description": desc, "tags": []any{tag}, "parameters": params, "responses": ok},
			"post": map[string]any{"operationId": fmt.Sprintf("repos/create-thing-%d", i), "summary": "Create a thing " + fmt.Sprint(i),
				"description": desc, "tags": []any{tag}, "parameters": params, "responses": ok,
				"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": body}}}},
		}
	}
	doc := map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Big", "version": "1"},
		"servers": []any{map[string]any{"url": "https://api.example.com"}}, "paths": paths}
	data, _ := json.Marshal(doc)
	return data
}

// checkToolSize fails when a tool result is over the ceiling.
func checkToolSize(t *testing.T, what string, res *mcp.CallToolResult) {
	t.Helper()
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > maxResultBytes {
		t.Errorf("%s: structured content of %d bytes, over %d", what, len(data), maxResultBytes)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && len(tc.Text) > maxResultBytes+maxSummaryBytes+1 {
			t.Errorf("%s: text of %d bytes, over %d", what, len(tc.Text), maxResultBytes+maxSummaryBytes+1)
		}
	}
}

// callSized calls a tool, checks its result's size and decodes it.
func callSized(t *testing.T, cs *mcp.ClientSession, name string, args, out any) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkToolSize(t, name, res)
	if out != nil && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
	}
	return res.IsError
}

// readSized reads a resource and checks its size.
func readSized(t *testing.T, cs *mcp.ClientSession, uri string) string {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	var text strings.Builder
	for _, c := range res.Contents {
		text.WriteString(c.Text)
	}
	if text.Len() > maxResultBytes {
		t.Errorf("%s: %d bytes, over %d", uri, text.Len(), maxResultBytes)
	}
	return text.String()
}

// TestResultsOfABigCatalogStayUnderTheCeiling imports a document of 1,500
// operations (GitHub's has 1,221) and reads everything about it through
// every tool and resource that shows catalogs or actions: each result is
// under the ceiling, and what does not fit whole is paged.
func TestResultsOfABigCatalogStayUnderTheCeiling(t *testing.T) {
	const ops = 1500
	doc := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(doc, bigOpenAPI(ops), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)

	var v struct {
		Valid      bool     `json:"valid"`
		Operations int      `json:"operations"`
		Warnings   []string `json:"warnings"`
	}
	if callSized(t, cs, "catalog_validate", map[string]any{"source": doc}, &v) || !v.Valid || v.Operations != ops {
		t.Fatalf("validate: %+v", v)
	}
	checkGrouped(t, "catalog_validate", v.Warnings, ops)

	// The preview is a summary; its operations come page by page.
	var p struct {
		OperationsTotal int              `json:"operations_total"`
		Operations      []map[string]any `json:"operations"`
		NextCursor      string           `json:"operations_next_cursor"`
		Tags            map[string]int   `json:"tags"`
		Safety          map[string]int   `json:"safety"`
		Warnings        []string         `json:"warnings"`
	}
	if callSized(t, cs, "catalog_preview", map[string]any{"source": doc, "title": "Big"}, &p) {
		t.Fatalf("preview: %+v", p)
	}
	if p.OperationsTotal != ops || len(p.Tags) != 20 || p.Safety["read-only"] != ops/2 || p.Safety["mutating"] != ops/2 || p.NextCursor == "" {
		t.Fatalf("preview summary: total %d, tags %v, safety %v, next %q", p.OperationsTotal, p.Tags, p.Safety, p.NextCursor)
	}
	checkGrouped(t, "catalog_preview", p.Warnings, ops)
	seen := map[string]bool{}
	for cursor, pages := "", 0; ; pages++ {
		if pages > ops {
			t.Fatal("the preview's pages do not end")
		}
		p.NextCursor, p.Operations = "", nil
		if callSized(t, cs, "catalog_preview", map[string]any{"source": doc, "title": "Big", "operations_cursor": cursor, "operations_limit": 200}, &p) {
			t.Fatalf("preview page %q failed", cursor)
		}
		for _, op := range p.Operations {
			seen[op["action"].(string)] = true
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if len(seen) != ops {
		t.Errorf("the preview's pages hold %d operations, want %d", len(seen), ops)
	}

	var imp struct {
		Operations   int      `json:"operations"`
		Actions      []string `json:"actions"`
		ActionsTotal int      `json:"actions_total"`
		Warnings     []string `json:"warnings"`
	}
	if callSized(t, cs, "catalog_import", map[string]any{"source": doc, "title": "Big"}, &imp) || imp.Operations != ops {
		t.Fatalf("import: %+v", imp)
	}
	checkGrouped(t, "catalog_import", imp.Warnings, ops)
	if len(imp.Actions) != catalogActionNames || imp.ActionsTotal != ops {
		t.Errorf("import: %d action names, actions_total %d", len(imp.Actions), imp.ActionsTotal)
	}
	var list struct {
		Catalogs []service.CatalogInfo `json:"catalogs"`
	}
	if callSized(t, cs, "catalog_list", map[string]any{}, &list) || len(list.Catalogs) != 1 || list.Catalogs[0].ActionsTotal != ops || len(list.Catalogs[0].Actions) != catalogActionNames {
		t.Errorf("catalog_list: %+v", list)
	}
	callSized(t, cs, "action_search", map[string]any{"query": "", "limit": 100}, nil)
	callSized(t, cs, "action_search", map[string]any{"query": "list things", "limit": 100}, nil)
	if callSized(t, cs, "action_get", map[string]any{"name": "big.repos_list-things-0"}, nil) {
		t.Error("action_get big.repos_list-things-0 failed")
	}
	readSized(t, cs, uriCatalogs)
}

// TestTheActionsResourceIsPaged: stepwise://actions of a catalog of 1,500
// operations (30 MB when it held every schema) comes a page at a time,
// each action's schemas in a resource of its own.
func TestTheActionsResourceIsPaged(t *testing.T) {
	const ops = 1500
	e := newEnv(t, Options{}, service.Options{})
	if _, err := e.svc.ImportCatalog(context.Background(), service.CatalogImportRequest{Source: string(bigOpenAPI(ops)), Title: "Big", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	cs := e.connect(nil)
	// stepwise://actions lists every action page by page; each action's
	// schemas are its own resource.
	names := map[string]bool{}
	for uri, pages := uriActions, 0; uri != ""; pages++ {
		if pages > ops {
			t.Fatal("the actions' pages do not end")
		}
		var page struct {
			Actions []struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"actions"`
			Total int    `json:"total"`
			Next  string `json:"next,omitempty"`
		}
		if err := json.Unmarshal([]byte(readSized(t, cs, uri)), &page); err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		for _, a := range page.Actions {
			names[a.Name] = true
		}
		uri = page.Next
	}
	if !names["big.repos_create-thing-1498"] || !names["noop"] || len(names) < ops {
		t.Errorf("stepwise://actions lists %d actions", len(names))
	}
	one := readSized(t, cs, uriActions+"/big.repos_create-thing-1498")
	if !strings.Contains(one, `"input_schema"`) || !strings.Contains(one, "field_11") {
		t.Errorf("the action's resource has no input schema: %.300s", one)
	}
}

// checkGrouped asserts that the warnings of renamed operationIds come as
// a few examples and a count, not one per operation.
func checkGrouped(t *testing.T, what string, warnings []string, renamed int) {
	t.Helper()
	if len(warnings) > 40 {
		t.Errorf("%s: %d warnings, want them grouped", what, len(warnings))
	}
	all := strings.Join(warnings, "\n")
	if want := fmt.Sprintf("(%d in all)", renamed); !strings.Contains(all, want) {
		t.Errorf("%s: no %q among %q", what, want, warnings)
	}
}

// TestErrorsDoNotEchoAHugeValue: a value of 3 MB in the arguments (a run
// id, a name, a token) comes back in the error cut short, not whole.
func TestErrorsDoNotEchoAHugeValue(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	huge := strings.Repeat("r", 3<<20)
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{"run_get", map[string]any{"run_id": huge}, "RUN_NOT_FOUND"},
		{"run_cancel", map[string]any{"run_id": huge}, "RUN_NOT_FOUND"},
		{"run_retry", map[string]any{"run_id": huge}, "RUN_NOT_FOUND"},
		{"run_start", map[string]any{"workflow": huge}, ""},
		{"workflow_get", map[string]any{"name": huge}, ""},
		{"action_get", map[string]any{"name": huge}, "ACTION_NOT_FOUND"},
		{"run_continue", map[string]any{"token": huge, "value": "x"}, "TOKEN_INVALID"},
		{"catalog_set_enabled", map[string]any{"name": huge, "enabled": true}, ""},
		{"run_list", map[string]any{"cursor": huge}, "ARGUMENTS_INVALID"},
		{"run_list", map[string]any{"limit": huge}, "ARGUMENTS_INVALID"},
		{"run_start", map[string]any{"workflow": "greet", "inputs": map[string]any{huge: 1, "greeting": map[string]any{"x": huge}}}, "INPUT_INVALID"},
		{"run_start", map[string]any{"definition": "version: 1\nname: " + huge + "\nsteps: []\n"}, ""},
		{"catalog_preview", map[string]any{"source": "x", "title": "x", "operations_cursor": huge}, "ARGUMENTS_INVALID"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		data, _ := json.Marshal(res)
		var te ToolError
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &te)
		if !res.IsError || (c.code != "" && te.ErrorCode != c.code) {
			t.Errorf("%s: %s, want an error %s", c.tool, te.ErrorCode, c.code)
		}
		if len(data) > 8<<10 {
			t.Errorf("%s: an error of %d bytes: %.300s", c.tool, len(data), data)
		}
		if strings.Contains(string(data), strings.Repeat("r", 200)) {
			t.Errorf("%s: the value comes back whole or nearly", c.tool)
		}
	}
	// Errors of the protocol: a resource, a tool or a prompt that does
	// not exist.
	for _, uri := range []string{uriRunPrefix + huge, uriRunPrefix + huge + "/history", uriWorkflows + "/" + huge, uriActions + "/" + huge, "stepwise://" + huge} {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		checkSmallError(t, "read "+uri[:20], err)
	}
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: huge, Arguments: map[string]any{}})
	checkSmallError(t, "call an unknown tool", err)
	_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: huge})
	checkSmallError(t, "get an unknown prompt", err)
	_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "run_workflow", Arguments: map[string]string{"name": huge}})
	checkSmallError(t, "get a prompt for an unknown workflow", err)
}

// checkSmallError asserts that err is an error that does not carry a
// caller's value whole.
func checkSmallError(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	size := len(err.Error())
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		size += len(we.Message) + len(we.Data)
	}
	if size > 8<<10 {
		t.Errorf("%s: an error of %d bytes: %.200s", what, size, err)
	}
}

// TestAResultOverTheCeilingIsRefused: a result larger than a result may
// hold is refused as RESULT_TOO_LARGE, naming how to read less, and the
// session goes on; a run's result sheds its largest values instead, so
// that its status and pause reach the agent.
func TestAResultOverTheCeilingIsRefused(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	def := "version: 1\nname: big\ninputs:\n  text: {type: string}\nsteps:\n  - {id: echo, uses: transform, with: {value: '${{ inputs.text }}'}}\n" +
		"  - {id: ok, ask: {prompt: 'Fine?', type: boolean}}\noutputs:\n  text: ${{ steps.echo.output }}\n"
	var r RunResult
	if callSized(t, cs, "run_start", map[string]any{"definition": def, "inputs": map[string]any{"text": strings.Repeat("x", maxResultBytes+1)}, "wait_seconds": 30}, &r) {
		t.Fatalf("run_start: %+v", r)
	}
	if r.Status != "waiting" || r.Pause == nil || r.Pause.Token == "" {
		t.Fatalf("run_start of a big output: %+v", r)
	}
	var ans RunResult
	if callSized(t, cs, "run_continue", map[string]any{"token": r.Pause.Token, "value": true, "wait_seconds": 30}, &ans) || ans.Status != "succeeded" {
		t.Fatalf("run_continue: %+v", ans)
	}
	if text, _ := ans.Outputs["text"].(string); !strings.HasPrefix(text, "(not shown: ") || !strings.Contains(ans.Next, "not shown") {
		t.Errorf("the big output: %.100s (next: %s)", text, ans.Next)
	}
	readSized(t, cs, uriRunPrefix+r.RunID)

	// A library workflow larger than a result.
	big := "version: 1\nname: huge\nsteps:\n  - {id: a, uses: noop}\n# " + strings.Repeat("x", maxResultBytes) + "\n"
	if err := os.WriteFile(filepath.Join(e.svc.Home.Dir, "workflows", "huge.yaml"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	var te ToolError
	if !callSized(t, cs, "workflow_get", map[string]any{"name": "huge"}, &te) || te.ErrorCode != CodeResultTooLarge || !strings.Contains(te.SuggestedAction, "sub-workflows") {
		t.Fatalf("workflow_get huge: %+v", te)
	}
	checkToolError(t, "workflow_get", te)

	// Its resource is refused the same way, as a JSON-RPC error.
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uriWorkflows + "/huge"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("read the workflow: %v", err)
	}
	var rte ToolError
	if err := json.Unmarshal(we.Data, &rte); err != nil || rte.ErrorCode != CodeResultTooLarge || rte.Context.URI != uriWorkflows+"/huge" {
		t.Fatalf("read the workflow: %s (%v)", we.Data, err)
	}
	var list RunListOut
	if callSized(t, cs, "run_list", map[string]any{}, &list) || len(list.Runs) != 1 {
		t.Fatalf("run_list after the refusals: %+v", list)
	}

	// A prompt that would quote a workflow larger than a result.
	content := "version: 1\nname: huge\nsteps:\n  - {id: a, uses: nope}\n# " + strings.Repeat("x", maxResultBytes) + "\n"
	_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "fix_workflow", Arguments: map[string]string{"content": content}})
	var pe *jsonrpc.Error
	var pte ToolError
	if !errors.As(err, &pe) || json.Unmarshal(pe.Data, &pte) != nil || pte.ErrorCode != CodeResultTooLarge || pte.Context.Prompt != "fix_workflow" {
		t.Fatalf("fix_workflow of a huge workflow: %v", err)
	}
}

// TestEveryResultPassesTheCeiling reads the package's source: every tool
// is registered with a handler made by toolHandler (boundResult) and every
// resource through addResource or addResourceTemplate (boundResource), so
// that no result escapes the ceiling.
func TestEveryResultPassesTheCeiling(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"limit.go:s.mcp.AddResource(r, s.boundResource(h))":                                                                       true,
		"limit.go:s.mcp.AddResourceTemplate(t, s.boundResource(h))":                                                               true,
		"tool.go:s.mcp.AddTool(t, handler)":                                                                                       true, // handler := s.toolHandler(…)
		"toolschema.go:srv.AddTool(t, h)":                                                                                         true, // addPrebuilt(s.mcp, t, handler) from addTool
		"expose.go:s.mcp.AddTool(exposedTool(name, w), s.toolHandler(name, s.runExposed(w.Name)))":                                true,
		"mount.go:s.mcp.AddTool(start, s.toolHandler(start.Name, s.runExposed(name)))":                                            true,
		"mount.go:s.mcp.AddTool(cont, h)":                                                                                         true, // h := addTool(…), a toolHandler
		"fixture.go:s.mcp.AddTool(&mcp.Tool{Name: name, Description: description, InputSchema: schema}, s.boundFixture(name, h))": true,
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if (strings.Contains(line, ".AddTool(") || strings.Contains(line, ".AddResource")) && !strings.HasPrefix(line, "//") && !allowed[f+":"+line] {
				t.Errorf("%s: %s registers a tool or resource past the ceiling: use addTool, toolHandler, addResource or addResourceTemplate", f, line)
			}
		}
	}
}

// TestBoundErrorKeepsWhatLocatesTheError: a deep JSON pointer of short
// segments stays whole; a segment that is a caller's huge key is cut; at
// most maxViolations are listed, the others counted.
func TestBoundErrorKeepsWhatLocatesTheError(t *testing.T) {
	deep := strings.Repeat("/steps/12/parallel/3", 10)
	vs := make([]workflow.Violation, 150)
	for i := range vs {
		vs[i] = workflow.Violation{Path: deep, Message: "bad"}
	}
	vs[0].Path = "/inputs/" + strings.Repeat("k", 1<<20)
	te := &ToolError{Context: ErrorContext{Path: deep, RunID: strings.Repeat("r", 1<<20)}, Violations: vs}
	boundError(te)
	if te.Context.Path != deep || te.Violations[1].Path != deep {
		t.Errorf("a deep pointer was cut: %q", te.Context.Path)
	}
	if p := te.Violations[0].Path; len(p) > len("/inputs/")+clip.ValueBytes || !strings.HasPrefix(p, "/inputs/kkk") {
		t.Errorf("a huge key: %q", p)
	}
	if len(te.Context.RunID) > clip.ValueBytes || len(te.Violations) != maxViolations || te.ViolationsTotal != 150 {
		t.Errorf("run id of %d bytes, %d violations (total %d)", len(te.Context.RunID), len(te.Violations), te.ViolationsTotal)
	}
}

// TestTheHistoryIsPaged: the history of a run of 600 steps, three of them
// with outputs of 100 KB, comes a page at a time under the ceiling, every
// event once and in order.
func TestTheHistoryIsPaged(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	var b strings.Builder
	b.WriteString("version: 1\nname: many\ninputs:\n  text: {type: string}\nsteps:\n")
	for i := range 600 {
		if i%200 == 1 {
			fmt.Fprintf(&b, "  - {id: s%d, uses: transform, with: {value: '${{ inputs.text }}'}}\n", i)
			continue
		}
		fmt.Fprintf(&b, "  - {id: s%d, uses: noop}\n", i)
	}
	var r RunResult
	if callSized(t, cs, "run_start", map[string]any{"definition": b.String(), "inputs": map[string]any{"text": strings.Repeat("x", 100<<10)}, "wait_seconds": 60}, &r) || r.Status != "succeeded" {
		t.Fatalf("run_start: %+v", r)
	}
	var seqs []int64
	pages := 0
	for uri := uriRunPrefix + r.RunID + "/history"; uri != ""; pages++ {
		if pages > 100 {
			t.Fatal("the history's pages do not end")
		}
		var page struct {
			Events []historyEvent `json:"events"`
			Next   string         `json:"next"`
		}
		if err := json.Unmarshal([]byte(readSized(t, cs, uri)), &page); err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Events {
			seqs = append(seqs, ev.Seq)
		}
		uri = page.Next
	}
	all, err := e.svc.Events(context.Background(), r.RunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != len(all) || pages < 3 {
		t.Fatalf("%d events in %d pages, want %d", len(seqs), pages, len(all))
	}
	for i, s := range seqs {
		if s != all[i].Seq {
			t.Fatalf("event %d: seq %d, want %d", i, s, all[i].Seq)
		}
	}
}

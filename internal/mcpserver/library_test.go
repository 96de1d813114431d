package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

const draftContent = `version: 1
name: hello
title: Say hello
tags: [demo]
inputs:
  who: {type: string}
steps:
  - id: say
    uses: log
    with: {message: "hi ${{ inputs.whom }}"}
`

// out decodes any tool result: successes and ToolErrors.
type out struct {
	Name            string           `json:"name"`
	Version         string           `json:"version"`
	Revision        string           `json:"revision"`
	Path            string           `json:"path"`
	Draft           bool             `json:"draft"`
	Valid           bool             `json:"valid"`
	DraftRemoved    bool             `json:"draft_removed"`
	Violations      []map[string]any `json:"violations"`
	ErrorCode       string           `json:"error_code"`
	Category        string           `json:"category"`
	Context         ErrorContext     `json:"context"`
	Workflows       []service.WorkflowSummary
	Content         string `json:"content"`
	RunID           string `json:"run_id"`
	Status          string `json:"status"`
	Outputs         map[string]any
	OldName         string `json:"old_name"`
	KeptIn          string `json:"kept_in"`
	CurrentVersion  string `json:"current_version"`
	SuggestedAction string `json:"suggested_action"`
}

func TestAuthorSaveRenameDelete(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	var mu sync.Mutex
	var updated []string
	cs := e.connect(&mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		mu.Lock()
		updated = append(updated, r.Params.URI)
		mu.Unlock()
	}})
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "stepwise://workflows"}); err != nil {
		t.Fatal(err)
	}
	// The client does not wait for the server to take the subscription
	// (see TestSubscriptionProgressAndLogs).
	waitFor(t, func() bool { return e.srv.subs.watched("stepwise://workflows") }, "the subscription to reach the server")
	lib := filepath.Join(e.svc.Home.Dir, "workflows")

	// An invalid workflow is refused by the library and nothing is written.
	var o out
	if !call(t, cs, "workflow_save", map[string]any{"content": draftContent}, &o) || o.ErrorCode != "WORKFLOW_INVALID" || len(o.Violations) == 0 {
		t.Fatalf("save invalid: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(lib, "hello.yaml")); !os.IsNotExist(err) {
		t.Fatal("an invalid save wrote the file")
	}
	// As a draft it is kept, with its violations.
	o = out{}
	if call(t, cs, "workflow_save", map[string]any{"content": draftContent, "draft": true}, &o) || !o.Draft || o.Valid || len(o.Violations) == 0 {
		t.Fatalf("save draft: %+v", o)
	}
	o = out{}
	call(t, cs, "workflow_list", map[string]any{"include_drafts": true, "tag": "demo"}, &o)
	if len(o.Workflows) != 1 || !o.Workflows[0].Draft || o.Workflows[0].Name != "hello" {
		t.Fatalf("list drafts by tag: %+v", o.Workflows)
	}
	o = out{}
	call(t, cs, "workflow_list", map[string]any{}, &o)
	for _, w := range o.Workflows {
		if w.Name == "hello" {
			t.Fatal("a draft listed without include_drafts")
		}
	}
	// Fixed and saved to the library: the draft goes.
	fixed := strings.Replace(draftContent, "inputs.whom", "inputs.who", 1)
	o = out{}
	if call(t, cs, "workflow_save", map[string]any{"content": fixed}, &o) || !o.Valid || !o.DraftRemoved || o.Version == "" {
		t.Fatalf("save fixed: %+v", o)
	}
	v1, r1 := o.Version, o.Revision
	o = out{}
	if !call(t, cs, "workflow_get", map[string]any{"name": "hello", "draft": true}, &o) || o.ErrorCode != "WORKFLOW_NOT_FOUND" {
		t.Fatalf("the draft is still there: %+v", o)
	}
	// Saving again without the version is a conflict carrying it.
	changed := strings.Replace(fixed, "Say hello", "Say hello nicely", 1)
	o = out{}
	if !call(t, cs, "workflow_save", map[string]any{"content": changed}, &o) || o.ErrorCode != "VERSION_CONFLICT" || o.Context.CurrentVersion != v1 ||
		o.Context.CurrentRevision != r1 || o.Category != "conflict" {
		t.Fatalf("save over without version: %+v", o)
	}
	o = out{}
	if call(t, cs, "workflow_save", map[string]any{"content": changed, "expected_version": r1}, &o) || o.Version == v1 || o.Revision == r1 {
		t.Fatalf("save with revision: %+v", o)
	}
	// A run of it, then a rename: the run keeps its version.
	o = out{}
	if call(t, cs, "run_start", map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Ada"}}, &o) || o.Status != "succeeded" {
		t.Fatalf("run: %+v", o)
	}
	runID := o.RunID
	o = out{}
	if call(t, cs, "workflow_rename", map[string]any{"name": "hello", "new_name": "greeting"}, &o) || o.Name != "greeting" || o.OldName != "hello" {
		t.Fatalf("rename: %+v", o)
	}
	data, err := os.ReadFile(filepath.Join(lib, "greeting.yaml"))
	if err != nil || !strings.Contains(string(data), "name: greeting\n") || strings.Contains(string(data), "name: hello") || !strings.Contains(string(data), "title: Say hello nicely") {
		t.Fatalf("renamed file: %s %v", data, err)
	}
	o = out{}
	if call(t, cs, "run_get", map[string]any{"run_id": runID}, &o) || o.Status != "succeeded" {
		t.Fatalf("the old run: %+v", o)
	}
	// Delete needs the person's confirmation: this client cannot elicit.
	o = out{}
	if !call(t, cs, "workflow_delete", map[string]any{"name": "greeting"}, &o) || o.ErrorCode != CodeConfirmationRequired {
		t.Fatalf("delete unconfirmed: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(lib, "greeting.yaml")); err != nil {
		t.Fatal("an unconfirmed delete removed the file")
	}
	o = out{}
	if call(t, cs, "workflow_delete", map[string]any{"name": "greeting", "confirm": true}, &o) || o.KeptIn == "" {
		t.Fatalf("delete: %+v", o)
	}
	if _, err := os.Stat(filepath.Join(lib, "greeting.yaml")); !os.IsNotExist(err) {
		t.Fatal("deleted file still there")
	}
	kept, _ := filepath.Glob(filepath.Join(o.KeptIn, "greeting.workflow@*"))
	if len(kept) != 1 {
		t.Fatalf("no copy kept: %v", kept)
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(updated) >= 3
	}, "resources/updated for stepwise://workflows after the library changed")
}

func TestDeleteAsksThePerson(t *testing.T) {
	for _, version := range protocols {
		for _, answer := range []*mcp.ElicitResult{accept(map[string]any{"confirm": true}), accept(map[string]any{"confirm": false}), {Action: "decline"}} {
			t.Run(version+"/"+answer.Action+toText(answer.Content), func(t *testing.T) {
				e := newEnv(t, Options{}, service.Options{})
				el := &elicitor{answers: []*mcp.ElicitResult{answer}}
				cs := connectVersion(t, e, &mcp.ClientOptions{ElicitationHandler: el.handle}, version)
				var o out
				// confirm: true from the agent does not replace the person's answer.
				isErr := call(t, cs, "workflow_delete", map[string]any{"name": "greet", "confirm": true}, &o)
				_, statErr := os.Stat(filepath.Join(e.svc.Home.Dir, "workflows", "greet.yaml"))
				yes := answer.Content["confirm"] == true
				if len(el.asked) != 1 || !strings.Contains(el.asked[0].Message, "delete workflow greet") {
					t.Fatalf("asked %+v", el.asked)
				}
				if yes && (isErr || !os.IsNotExist(statErr)) {
					t.Fatalf("confirmed delete: %+v %v", o, statErr)
				}
				if !yes && (!isErr || o.ErrorCode != CodeConfirmationDeclined || statErr != nil) {
					t.Fatalf("declined delete: %+v %v", o, statErr)
				}
			})
		}
	}
}

// Every tool that takes a name refuses names that leave the library, with
// a security error, and reads or writes nothing outside it.
func TestUnsafeNamesOverMCP(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	outside := filepath.Join(filepath.Dir(e.svc.Home.Dir), "outside-"+filepath.Base(e.svc.Home.Dir)+".yaml")
	secret := "version: 1\nname: outside\nsteps:\n  - id: a\n    uses: log\n    with: {message: TOPSECRET}\n"
	if err := os.WriteFile(outside, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(outside) })
	if err := os.Symlink(outside, filepath.Join(e.svc.Home.Dir, "workflows", "sneaky.yaml")); err != nil {
		t.Fatal(err)
	}
	names := []string{"../etc/passwd", "/etc/passwd", "a/b", "..", "a\x00b", "sneaky"}
	contentNamed := func(n string) string {
		return "version: 1\nname: '" + strings.ReplaceAll(n, "\x00", "\\0") + "'\nsteps:\n  - id: a\n    uses: log\n    with: {message: x}\n"
	}
	for _, name := range names {
		calls := map[string]map[string]any{
			"workflow_get":            {"name": name},
			"workflow_get draft":      {"name": name, "draft": true},
			"workflow_validate":       {"name": name},
			"workflow_rename from":    {"name": name, "new_name": "fine"},
			"workflow_rename to":      {"name": "greet", "new_name": name},
			"workflow_delete":         {"name": name, "confirm": true},
			"workflow_delete draft":   {"name": name, "draft": true, "confirm": true},
			"run_start":               {"workflow": name},
			"workflow_save draft":     {"content": "not: [valid", "draft": true, "name": name},
			"workflow_save content":   {"content": contentNamed(name), "draft": true},
			"workflow_save overwrite": {"content": contentNamed(name), "overwrite": true},
		}
		for what, args := range calls {
			tool := strings.Fields(what)[0]
			var o out
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				t.Fatalf("%s %q: %v", what, name, err)
			}
			_ = decodeInto(res.StructuredContent, &o)
			// "sneaky" is a fine name whose library entry leads outside:
			// drafts of that name are fine, the saved entry must not be used.
			drafts := strings.Contains(what, "draft") || strings.Contains(what, "save content")
			if name == "sneaky" && drafts {
				continue
			}
			if !res.IsError || o.Category != "security" {
				t.Errorf("%s %q: %+v", what, name, o)
			}
			if strings.Contains(toText(res), "TOPSECRET") {
				t.Errorf("%s %q read the file outside the library", what, name)
			}
		}
	}
	// Resources and prompts too.
	for _, uri := range []string{"stepwise://workflows/..%2Fetc%2Fpasswd", "stepwise://workflows/sneaky"} {
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		if err == nil || strings.Contains(toText(res), "TOPSECRET") {
			t.Errorf("read %s: %v %v", uri, toText(res), err)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != secret {
		t.Fatal("the file outside the library changed")
	}
	entries, _ := os.ReadDir(filepath.Dir(e.svc.Home.Dir))
	for _, en := range entries {
		if strings.Contains(en.Name(), "passwd") || en.Name() == "a" || en.Name() == "etc" {
			t.Errorf("something was written outside the home: %s", en.Name())
		}
	}
}

func decodeInto(v any, out any) error {
	b, err := jsonMarshal(v)
	if err != nil {
		return err
	}
	return jsonUnmarshal(b, out)
}

func TestExtendWorkflowPrompt(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	d, err := e.svc.GetWorkflow(context.Background(), "greet")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "extend_workflow", Arguments: map[string]string{"name": "greet", "change": "greet in French"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"greet in French", d.Version, "workflow_save", "expected_version", "workflow_plan", "VERSION_CONFLICT"} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, text)
		}
	}
	var uris []string
	for _, m := range res.Messages[1:] {
		uris = append(uris, m.Content.(*mcp.EmbeddedResource).Resource.URI)
	}
	if strings.Join(uris, " ") != "stepwise://workflows/greet stepwise://docs/workflows" {
		t.Errorf("embedded %v", uris)
	}
	full, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "extend_workflow", Arguments: map[string]string{"name": "greet", "change": "greet in French", "language": "full"}})
	if err != nil {
		t.Fatal(err)
	}
	uris = nil
	for _, m := range full.Messages[1:] {
		uris = append(uris, m.Content.(*mcp.EmbeddedResource).Resource.URI)
	}
	if strings.Join(uris, " ") != "stepwise://workflows/greet stepwise://docs/workflows/full stepwise://schema/workflow" {
		t.Errorf("embedded with language=full %v", uris)
	}
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "extend_workflow", Arguments: map[string]string{"name": "../x", "change": "y"}}); err == nil {
		t.Error("an unsafe name was accepted")
	}
}

func TestActionGet(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	var info struct {
		Name        string         `json:"name"`
		Safety      string         `json:"safety"`
		InputSchema map[string]any `json:"input_schema"`
		ErrorCode   string         `json:"error_code"`
	}
	if call(t, cs, "action_get", map[string]any{"name": "log"}, &info) || info.Safety != "read-only" || info.InputSchema["additionalProperties"] != false {
		t.Fatalf("action_get log: %+v", info)
	}
	if !call(t, cs, "action_get", map[string]any{"name": "lgo"}, &info) || info.ErrorCode != "ACTION_NOT_FOUND" {
		t.Fatalf("action_get lgo: %+v", info)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "stepwise://actions"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"transform"`) {
		t.Fatalf("stepwise://actions: %v %v", err, res)
	}
}

func TestWorkflowGenerate(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	var g struct {
		Content    string `json:"content"`
		Valid      bool   `json:"valid"`
		ErrorCode  string `json:"error_code"`
		Violations []any  `json:"violations"`
	}
	schema := json.RawMessage(`{"type":"object","required":["zeta"],"properties":{"zeta":{"type":"string"},"alpha":{"enum":["a","b"]}}}`)
	if call(t, cs, "workflow_generate", map[string]any{"schema": schema, "name": "order"}, &g) || !g.Valid {
		t.Fatalf("%+v", g)
	}
	// Questions in the order the schema wrote them, not sorted.
	if strings.Index(g.Content, "id: zeta") > strings.Index(g.Content, "id: alpha") || !strings.Contains(g.Content, "type: choice") {
		t.Fatalf("content:\n%s", g.Content)
	}
	if !call(t, cs, "workflow_generate", map[string]any{"action": "nope"}, &g) || g.ErrorCode != "ACTION_NOT_FOUND" {
		t.Fatalf("%+v", g)
	}
}

// run_start runs a draft by name when no saved workflow has that name, and
// says so; the wf_ tools expose saved workflows only.
func TestRunStartRunsADraft(t *testing.T) {
	e := newEnv(t, Options{ExposeWorkflows: true}, service.Options{})
	cs := e.connect(nil)
	trial := "version: 1\nname: trial\nsteps:\n  - id: a\n    uses: log\n    with: {message: trying}\n"
	var o out
	if call(t, cs, "workflow_save", map[string]any{"content": trial, "draft": true}, &o) || !o.Draft || !o.Valid {
		t.Fatalf("save draft: %+v", o)
	}
	var run RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "trial"}, &run) || run.Status != "succeeded" || !run.Draft || run.Workflow != "trial" {
		t.Fatalf("run_start of a draft: %+v", run)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"workflow": "trial"}})
	if err != nil || res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "a draft") {
		t.Fatalf("the summary does not say draft: %+v %v", res, err)
	}
	var plan struct {
		Valid, Draft bool
	}
	if call(t, cs, "workflow_plan", map[string]any{"name": "trial"}, &plan) || !plan.Valid || !plan.Draft {
		t.Fatalf("workflow_plan of a draft: %+v", plan)
	}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tl.Name == "wf_trial" {
			t.Fatal("a draft is exposed as a tool")
		}
	}
	// Saved: the library's workflow runs, not a draft.
	if call(t, cs, "workflow_save", map[string]any{"content": trial}, &o) {
		t.Fatalf("save: %+v", o)
	}
	run = RunResult{}
	if call(t, cs, "run_start", map[string]any{"workflow": "trial"}, &run) || run.Status != "succeeded" || run.Draft {
		t.Fatalf("run_start of a saved workflow: %+v", run)
	}
}

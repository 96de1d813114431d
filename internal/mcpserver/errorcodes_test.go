package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/api"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/generate"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/service"
)

// cliWording is a CLI command in a text: "stepwise " and a subcommand.
var cliWording = regexp.MustCompile(`stepwise (validate|schema|graph|plan|run|resume|runs|show|cancel|retry|fork|pause|purge|catalog|serve|save|list|get|rename|delete|generate)\b`)

// codesInSource lists every error code the module's code declares or
// returns: constants named Code… and Code: "…" literals.
func codesInSource(t *testing.T) []string {
	t.Helper()
	decl := regexp.MustCompile(`\bCode[A-Za-z]*\s*=\s*"([A-Z][A-Z_]+)"`)
	lit := regexp.MustCompile(`\bCode:\s*"([A-Z][A-Z_]+)"`)
	// Package code declares the codes every layer shares, by name alone.
	shared := regexp.MustCompile(`(?m)^\s*[A-Z][A-Za-z]*\s*=\s*"([A-Z][A-Z_]+)"`)
	seen := map[string]bool{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") && p != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		res := []*regexp.Regexp{decl, lit}
		if filepath.Base(filepath.Dir(p)) == "code" {
			res = append(res, shared)
		}
		for _, re := range res {
			for _, m := range re.FindAllSubmatch(data, -1) {
				seen[string(m[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for c := range seen {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// checkToolError asserts what every MCP error carries: a next step worded
// in MCP terms, a context beyond the tool's name (but for errors that have
// none to give) and no CLI command anywhere.
func checkToolError(t *testing.T, what string, te ToolError) {
	t.Helper()
	if te.SuggestedAction == "" {
		t.Errorf("%s: %s has no suggested_action", what, te.ErrorCode)
	}
	ctx, _ := json.Marshal(te.Context)
	var fields map[string]any
	_ = json.Unmarshal(ctx, &fields)
	delete(fields, "tool")
	if len(fields) == 0 && te.ErrorCode != CodeInternal && te.ErrorCode != CodeCanceled {
		t.Errorf("%s: %s has no context beyond the tool: %s", what, te.ErrorCode, ctx)
	}
	if te.Context.Tool == "" && te.Context.Prompt == "" {
		t.Errorf("%s: %s names no tool or prompt in its context", what, te.ErrorCode)
	}
	all, _ := json.Marshal(te)
	if m := cliWording.Find(all); m != nil {
		t.Errorf("%s: %s names the CLI command %q: %s", what, te.ErrorCode, m, all)
	}
}

const (
	compensatedWorkflow = `version: 1
name: undo
steps:
  - id: make
    uses: noop
    compensate: {uses: noop}
  - id: stop
    fail: stopped
`
	unsupportedWorkflow = `version: 1
name: forked
steps:
  - id: p
    parallel:
      - id: s
        max_visits: 2
        switch:
          - goto: s
`
	envWorkflow = `version: 1
name: envy
inputs:
  key: {type: string, env: SOME_KEY, default: x}
steps:
  - {id: a, uses: noop}
`
	timedWorkflow = `version: 1
name: timed
steps:
  - id: q
    ask: {prompt: "Quick?", type: string}
    timeout: 1h
`
	shellingWorkflow = `version: 1
name: shelling
steps:
  - id: say
    uses: shell
    with: {command: echo, args: [hi]}
`
)

// TestEveryErrorCodeOverMCP walks every error code of the module: each is
// produced through a real tool call (or, for the few a test cannot cause,
// through toolError as its maker builds it) and must carry a suggested
// action in MCP terms, a context, and no CLI wording. A code added to the
// source without a case here fails the test.
func TestEveryErrorCodeOverMCP(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	e := newEnv(t, Options{}, service.Options{Now: clock})
	cs := e.connect(nil)
	got := map[string]bool{}
	expect := func(code, tool string, args map[string]any) ToolError {
		t.Helper()
		var te ToolError
		if !call(t, cs, tool, args, &te) {
			t.Fatalf("%s %v: no error, want %s", tool, args, code)
		}
		if te.ErrorCode != code {
			t.Fatalf("%s %v: %s (%s), want %s", tool, args, te.ErrorCode, te.Message, code)
		}
		if te.Context.Tool != tool {
			t.Errorf("%s: context.tool %q", tool, te.Context.Tool)
		}
		checkToolError(t, tool, te)
		got[code] = true
		return te
	}
	start := func(args map[string]any) RunResult {
		t.Helper()
		var r RunResult
		if call(t, cs, "run_start", args, &r) {
			t.Fatalf("run_start %v: %+v", args, r)
		}
		return r
	}

	expect(CodeArgumentsInvalid, "run_start", map[string]any{})
	if te := expect(CodeArgumentsInvalid, "run_list", map[string]any{"cursor": "bogus"}); te.Context.Argument != "cursor" {
		t.Errorf("a bad cursor: %+v", te)
	}
	te := expect(service.CodeNotFound, "run_start", map[string]any{"workflow": "greeet"})
	if !slices.Equal(te.Context.Closest, []string{"greet"}) || !strings.Contains(te.Message, "did you mean greet") {
		t.Errorf("not found names no closest: %+v", te)
	}
	expect(service.CodeUnsafeName, "workflow_get", map[string]any{"name": "../etc"})
	expect(code.WorkflowInvalid, "run_start", map[string]any{"definition": "version: 1\nname: bad\nsteps:\n  - {id: a, uses: nope}\n"})
	expect(code.InputInvalid, "run_start", map[string]any{"workflow": "greet", "inputs": map[string]any{"nope": 1}})
	expect(code.RunNotFound, "run_get", map[string]any{"run_id": "nope"})
	expect(code.WorkflowUnsupported, "run_start", map[string]any{"definition": unsupportedWorkflow})
	expect(service.CodeActionNotFound, "action_get", map[string]any{"name": "nope"})
	expect("SCHEMA_UNSUPPORTED", "workflow_generate", map[string]any{"schema": map[string]any{"type": "string"}})
	expect("PATTERN_INVALID", "workflow_list", map[string]any{"pattern": "[a"})

	// A pause and its token.
	r := start(map[string]any{"workflow": "greet", "wait_seconds": 30})
	if r.Pause == nil {
		t.Fatalf("greet did not pause: %+v", r)
	}
	tok := r.Pause.Token
	expect(code.AnswerInvalid, "run_continue", map[string]any{"token": tok, "value": "lower"})
	expect(code.TokenInvalid, "run_continue", map[string]any{"token": "garbage"})
	expect(code.StepNotFound, "run_fork", map[string]any{"run_id": r.RunID, "from_step": "nope"})
	if te := expect(code.StepNotFound, "run_rewind", map[string]any{"run_id": r.RunID, "to_step": "nope"}); !strings.Contains(te.SuggestedAction, "run_rewind") {
		t.Errorf("rewind to a missing step: suggested %q", te.SuggestedAction)
	}
	expect(code.RunNotFailed, "run_retry", map[string]any{"run_id": r.RunID})
	if call(t, cs, "run_pause", map[string]any{"run_id": r.RunID}, nil) {
		t.Fatal("run_pause failed")
	}
	expect(code.RunPaused, "run_continue", map[string]any{"token": tok, "value": "Ada"})
	if call(t, cs, "run_resume", map[string]any{"run_id": r.RunID, "wait_seconds": 0}, nil) {
		t.Fatal("run_resume failed")
	}
	var next RunResult
	if call(t, cs, "run_continue", map[string]any{"token": tok, "value": "Ada", "wait_seconds": 30}, &next) {
		t.Fatalf("continue: %+v", next)
	}
	expect(code.TokenAlreadyUsed, "run_continue", map[string]any{"token": tok, "value": "Ada"})
	if call(t, cs, "run_cancel", map[string]any{"run_id": r.RunID}, nil) {
		t.Fatal("run_cancel failed")
	}
	expect(code.RunFinished, "run_cancel", map[string]any{"run_id": r.RunID})

	// An expired token: the clock moves past its lifetime.
	r2 := start(map[string]any{"workflow": "greet", "wait_seconds": 30})
	mu.Lock()
	now = now.Add(48 * time.Hour)
	mu.Unlock()
	expect(code.TokenExpired, "run_continue", map[string]any{"token": r2.Pause.Token, "value": "Ada"})

	// A question whose timeout passes before the answer: the clock moves
	// past it and the timer loop (which polls at least every 2 s) ends it.
	tq := start(map[string]any{"definition": timedWorkflow, "wait_seconds": 30})
	if tq.Pause == nil {
		t.Fatalf("timed did not pause: %+v", tq)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	for deadline := time.Now().Add(15 * time.Second); ; {
		var g RunResult
		if call(t, cs, "run_get", map[string]any{"run_id": tq.RunID}, &g) {
			t.Fatalf("run_get: %+v", g)
		}
		if g.Status == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the question's timeout did not fail the run: %+v", g)
		}
		time.Sleep(50 * time.Millisecond)
	}
	expect(code.PauseTimedOut, "run_continue", map[string]any{"token": tq.Pause.Token, "value": "late"})

	// A secret question answered in clear through the agent.
	v := start(map[string]any{"workflow": "vault", "wait_seconds": 30})
	if v.Pause == nil {
		t.Fatalf("vault did not pause: %+v", v)
	}
	expect(code.SecretInClear, "run_continue", map[string]any{"token": v.Pause.Token, "value": "hunter2-in-clear"})

	// A failed run whose completed step was compensated cannot be retried.
	u := start(map[string]any{"definition": compensatedWorkflow, "wait_seconds": 30})
	if u.Status != "failed" {
		t.Fatalf("undo: %+v", u)
	}
	expect(code.RunCompensated, "run_retry", map[string]any{"run_id": u.RunID})

	// The library.
	greet, err := os.ReadFile(filepath.Join("testdata", "greet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	expect(service.CodeVersionConflict, "workflow_save", map[string]any{"content": string(greet)})
	expect(service.CodeNameMismatch, "workflow_save", map[string]any{"content": string(greet), "name": "other"})
	expect(service.CodeNameMissing, "workflow_save", map[string]any{"content": "version: 1\nsteps: []\n"})
	expect(service.CodeScheduleNotFound, "schedule_pause", map[string]any{"key": "nowhere#0"})
	hooked := "version: 1\nname: %s\nsteps:\n  - id: a\n    uses: log\n    with: {message: hi}\ntriggers:\n  - webhook: {name: taken, secret_env: S}\n"
	if !call(t, cs, "workflow_save", map[string]any{"content": fmt.Sprintf(hooked, "hook-one")}, nil) {
		expect(service.CodeHookTaken, "workflow_save", map[string]any{"content": fmt.Sprintf(hooked, "hook-two")})
	}
	expect(CodeConfirmationRequired, "workflow_delete", map[string]any{"name": "greet"})

	// Catalogs.
	doc, err := filepath.Abs("../catalog/testdata/petstore-swagger2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	expect(service.CodeCatalogInvalid, "catalog_import", map[string]any{"source": "name: nothing\nkind: notes\n", "title": "Notes"})
	if call(t, cs, "catalog_import", map[string]any{"source": doc, "title": "Petstore"}, nil) {
		t.Fatal("catalog_import failed")
	}
	expect(service.CodeCatalogConflict, "catalog_import", map[string]any{"source": doc, "title": "Petstore"})
	expect(service.CodeCatalogNotFound, "catalog_set_enabled", map[string]any{"name": "nope", "enabled": true})
	expect(service.CodeCatalogURLNotAllowed, "catalog_import", map[string]any{"source": "https://example.com/openapi.yaml", "title": "Remote"})
	expect(service.CodeUnsafeName, "catalog_import", map[string]any{"source": doc, "title": "Pets", "name": "../pets"})

	// The shell is off unless the server allows it.
	expect("SHELL_NOT_ALLOWED", "run_start", map[string]any{"definition": shellingWorkflow})

	// A person who declines a destructive call.
	decline := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	legacyCS := connectVersion(t, e, decline, "2025-06-18")
	var dte ToolError
	if !call(t, legacyCS, "workflow_delete", map[string]any{"name": "greet"}, &dte) || dte.ErrorCode != CodeConfirmationDeclined {
		t.Fatalf("declined delete: %+v", dte)
	}
	checkToolError(t, "workflow_delete", dte)
	got[CodeConfirmationDeclined] = true

	// A server that restricts the environment.
	restricted := newEnv(t, Options{}, service.Options{EnvPolicy: secret.EnvPolicy{Restricted: true}})
	var ete ToolError
	if !call(t, restricted.connect(nil), "run_start", map[string]any{"definition": envWorkflow}, &ete) || ete.ErrorCode != service.CodeEnvNotAllowed {
		t.Fatalf("env: %+v", ete)
	}
	checkToolError(t, "run_start", ete)
	got[service.CodeEnvNotAllowed] = true

	// A server that restricts the network: a catalog from a URL on
	// loopback is refused before anything is fetched.
	fenced := newEnv(t, Options{}, service.Options{AllowCatalogURLs: true, NetworkPolicy: action.NetworkPolicy{Restricted: true}})
	localDoc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the refused import fetched %s", r.URL)
	}))
	defer localDoc.Close()
	var nte ToolError
	if !call(t, fenced.connect(nil), "catalog_import", map[string]any{"source": localDoc.URL + "/openapi.json", "title": "Local"}, &nte) ||
		nte.ErrorCode != action.CodeNetworkNotAllowed || nte.Category != service.CategorySecurity || nte.Context.Argument != "source" {
		t.Fatalf("network: %+v", nte)
	}
	checkToolError(t, "catalog_import", nte)
	got[action.CodeNetworkNotAllowed] = true

	// What a test cannot cause through a call, as its maker builds it.
	log := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		code string
		err  error
	}{
		{CodeInternal, errors.New("disk on fire")},
		{CodeCanceled, context.Canceled},
		{CodeCanceled, context.DeadlineExceeded},
		{code.ShuttingDown, shuttingDown(t)},
		{code.RunBusy, &service.Error{Code: code.RunBusy, Category: code.CategoryConflict, RunID: "run-1", Retryable: true,
			Message: "cancel: the run kept changing", Err: service.ErrConflict}},
		{"FILTER_INVALID", filterInvalid(t, e)},
		{"ACTION_UNDESCRIBED", undescribed(t, e)},
		{code.ExpressionBudget, budgetError(t)},
		{CodeResultTooLarge, resultTooLarge("run_list", maxResultBytes+1, paging["run_list"].arg, paging["run_list"].hint)},
	} {
		te := toolError(log, "some_tool", c.err)
		if te.ErrorCode != c.code {
			t.Fatalf("%v: %s, want %s", c.err, te.ErrorCode, c.code)
		}
		checkToolError(t, c.code, *te)
		got[c.code] = true
	}

	for code := range statelessErrorCodes(t) { // stateless_test.go
		got[code] = true
	}
	// Declared but never returned.
	got[code.RunNotWaiting] = true
	// The Go API's: a program registering an action name twice (the root
	// package's tests); no MCP call registers actions.
	got[code.ActionExists] = true
	// The REST API's refusals of an HTTP request itself, before any call
	// (internal/api's tests); MCP refuses those as JSON-RPC errors.
	for _, c := range []string{api.CodeUnauthorized, api.CodeRouteNotFound, api.CodeMethodNotAllowed, api.CodeMediaType, api.CodeBodyTooLarge, api.CodeForeignHost} {
		got[c] = true
	}
	// A failed run's error.code (run_get), never a call's error: the
	// process ended too often while a step ran (cmd/stepwise
	// TestCrashLoopEndsWithStepCrashed).
	got[code.StepCrashed] = true
	// An answers file's error: only the CLI checks answers given ahead.
	got[service.CodeAnswerStepUnknown] = true
	// POST /hooks/{name}'s refusals, answered over HTTP, not MCP
	// (hook_test.go); and a store without schedules, which no server has.
	for _, c := range []string{service.CodeHookNotFound, service.CodeHookUnavailable, service.CodeSignatureInvalid,
		service.CodeDeliveryReplayed, service.CodeSchedulesUnsupported} {
		got[c] = true
	}
	for _, code := range codesInSource(t) {
		if !got[code] {
			t.Errorf("error code %s is not walked by this test: add a case", code)
		}
	}
}

// shuttingDown is the error of a start on an engine that is stopping.
func shuttingDown(t *testing.T) error {
	e := newEnv(t, Options{}, service.Options{})
	l, err := e.svc.LoadLibraryWorkflow("greet")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = e.svc.Engine.Close(ctx)
	_, err = e.svc.StartRun(context.Background(), l, nil, false)
	return err
}

// filterInvalid is the service's error of a purge filter the tool's own
// checks let through (the tool checks status and age first).
func filterInvalid(t *testing.T, e *env) error {
	_, err := e.svc.PurgeRuns(context.Background(), service.PurgeFilter{Keep: -1})
	if service.CodeOf(err) != "FILTER_INVALID" {
		t.Fatalf("purge with keep -1: %v", err)
	}
	return err
}

// bareAction declares no input schema.
type bareAction struct{}

func (bareAction) Name() string        { return "bare" }
func (bareAction) Description() string { return "declares nothing" }
func (bareAction) Safety() string      { return action.ReadOnly }
func (bareAction) Run(context.Context, action.Call) (any, error) {
	return nil, nil
}

// undescribed is the error of generating from an action without an input
// schema.
func undescribed(t *testing.T, e *env) error {
	e.svc.Actions.Register(bareAction{})
	_, err := e.svc.GenerateWorkflow(nil, "bare", generate.Options{})
	if service.CodeOf(err) != "ACTION_UNDESCRIBED" {
		t.Fatalf("generate from bare: %v", err)
	}
	return err
}

// TestPromptErrorsAreJSONRPCErrors: a prompt naming an unknown workflow is
// refused with invalid params and the structured error as data.
func TestPromptErrorsAreJSONRPCErrors(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	for _, p := range []struct {
		name string
		args map[string]string
		code string
	}{
		{"run_workflow", map[string]string{"name": "greeet"}, service.CodeNotFound},
		{"extend_workflow", map[string]string{"name": "nope", "change": "x"}, service.CodeNotFound},
		{"fix_workflow", map[string]string{}, CodeArgumentsInvalid},
		{"author_workflow", map[string]string{}, CodeArgumentsInvalid},
	} {
		_, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: p.name, Arguments: p.args})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("%s: %#v, want a JSON-RPC invalid params error", p.name, err)
		}
		var te ToolError
		if err := json.Unmarshal(we.Data, &te); err != nil || te.ErrorCode != p.code || te.Context.Prompt != p.name {
			t.Fatalf("%s: data %s (%v)", p.name, we.Data, err)
		}
		checkToolError(t, p.name, te)
	}
}

// budgetError is an expression's evaluation past its memory budget, as a
// plan that renders one gets it.
func budgetError(t *testing.T) error {
	t.Helper()
	_, err := expr.Eval(`len(repeat(repeat("x", 100000), 100000))`, nil)
	if err == nil {
		t.Fatal("no budget error")
	}
	return fmt.Errorf("plan: %w", err)
}

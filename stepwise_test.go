package stepwise_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise"
	"stepwise.dev/stepwise/code"
)

// open opens an engine on a temporary home, or on the PostgreSQL database
// of STEPWISE_TEST_DATABASE_URL when pg is set (skipping without it).
func open(t *testing.T, pg bool) *stepwise.Engine {
	t.Helper()
	cfg := stepwise.Config{Home: t.TempDir()}
	if pg {
		cfg.Database = os.Getenv("STEPWISE_TEST_DATABASE_URL")
		if cfg.Database == "" {
			t.Skip("STEPWISE_TEST_DATABASE_URL is not set")
		}
	}
	ctx := context.Background()
	eng, err := stepwise.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return eng
}

func waitRun(t *testing.T, eng *stepwise.Engine, id string) *stepwise.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := eng.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// asError returns err's *stepwise.Error, failing the test without one.
func asError(t *testing.T, err error) *stepwise.Error {
	t.Helper()
	var se *stepwise.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *stepwise.Error", err, err)
	}
	return se
}

// TestGoActionInAWorkflow: a Go action gets the rendered input, the step's
// idempotency key and attempt; its typed output is read by expressions.
func TestGoActionInAWorkflow(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	var mu sync.Mutex
	var calls []stepwise.Call
	type in struct {
		N int `json:"n"`
	}
	type out struct {
		Double int      `json:"double"`
		Tags   []string `json:"tags"`
	}
	a := stepwise.NewAction("math.double", "Doubles n.", func(_ context.Context, i in) (out, error) {
		return out{Double: 2 * i.N, Tags: []string{"x"}}, nil
	})
	inner := a.Run
	a.Run = func(ctx context.Context, c stepwise.Call) (any, error) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		return inner(ctx, c)
	}
	if err := eng.RegisterAction(a); err != nil {
		t.Fatal(err)
	}
	run, err := eng.StartDefinition(context.Background(), []byte(`
version: 1
name: doubler
inputs:
  n: {type: integer}
steps:
  - id: d
    uses: math.double
    with: {n: '${{ inputs.n }}'}
outputs:
  result: ${{ steps.d.output.double + 1 }}
  tag: ${{ steps.d.output.tags[0] }}
`), map[string]any{"n": 20})
	if err != nil {
		t.Fatal(err)
	}
	run = waitRun(t, eng, run.ID)
	if run.Status != code.StatusSucceeded || run.Outputs["result"] != float64(41) || run.Outputs["tag"] != "x" {
		t.Fatalf("run = %+v, want succeeded with result 41 and tag x", run)
	}
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	c := calls[0]
	if c.Input["n"] != float64(20) && c.Input["n"] != 20 && c.Input["n"] != int64(20) {
		t.Errorf("input n = %v (%T), want 20", c.Input["n"], c.Input["n"])
	}
	if c.IdempotencyKey == "" || c.Attempt != 1 || c.Logger == nil {
		t.Errorf("call = %+v, want an idempotency key, attempt 1 and a logger", c)
	}
}

// TestActionInputRefused: an input that breaks the action's schema fails
// the step before Run, with the violation in the run's error.
func TestActionInputRefused(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	ran := false
	err := eng.RegisterAction(stepwise.Action{Name: "count", InputSchema: []byte(`{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}`),
		Run: func(context.Context, stepwise.Call) (any, error) { ran = true; return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	run, err := eng.StartDefinition(context.Background(), []byte(`
version: 1
name: counting
inputs:
  n: {type: integer}
steps:
  - id: c
    uses: count
    with: {n: '${{ inputs.n }}'}
`), map[string]any{"n": -3})
	if err != nil {
		t.Fatal(err)
	}
	run = waitRun(t, eng, run.ID)
	if run.Status != code.StatusFailed || run.Error == nil || run.Error.StepID != "c" {
		t.Fatalf("run = %+v (error %+v), want failed at step c", run, run.Error)
	}
	if run.Error.Action != "count" || run.Error.Message == "" {
		t.Errorf("run error = %+v, want the action count and a message", run.Error)
	}
	if ran {
		t.Error("Run was called with an input its schema refuses")
	}
}

// TestRegisterActionRefusals: each bad registration is refused with a
// code, and registers nothing (the name is still free afterwards).
func TestRegisterActionRefusals(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	run := func(context.Context, stepwise.Call) (any, error) { return "ok", nil }
	cases := []struct {
		name string
		a    stepwise.Action
		want string
	}{
		{"built-in name", stepwise.Action{Name: "http", Run: run}, code.ActionExists},
		{"bad name", stepwise.Action{Name: "Bad Name", Run: run}, code.ArgumentsInvalid},
		{"empty name", stepwise.Action{Name: "", Run: run}, code.ArgumentsInvalid},
		{"no run", stepwise.Action{Name: "norun"}, code.ArgumentsInvalid},
		{"bad safety", stepwise.Action{Name: "unsafe", Safety: "harmless", Run: run}, code.ArgumentsInvalid},
		{"schema not an object", stepwise.Action{Name: "arr", InputSchema: []byte(`[1]`), Run: run}, code.ArgumentsInvalid},
		{"schema invalid", stepwise.Action{Name: "badschema", InputSchema: []byte(`{"type": 5}`), Run: run}, code.ArgumentsInvalid},
		{"schema unparsable pattern", stepwise.Action{Name: "badpattern", InputSchema: []byte(`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`), Run: run}, code.ArgumentsInvalid},
		{"underivable types", stepwise.NewAction("chan", "", func(context.Context, chan int) (int, error) { return 0, nil }), code.ArgumentsInvalid},
	}
	for _, c := range cases {
		err := eng.RegisterAction(c.a)
		if err == nil {
			t.Errorf("%s: registered", c.name)
			continue
		}
		if got := asError(t, err).Code; got != c.want {
			t.Errorf("%s: code %s, want %s (%v)", c.name, got, c.want, err)
		}
	}
	// Nothing was registered: a workflow using the refused names is
	// invalid, and the names can be registered properly.
	for _, name := range []string{"norun", "unsafe", "badschema", "badpattern"} {
		_, err := eng.StartDefinition(context.Background(), []byte("version: 1\nname: w\nsteps:\n  - id: s\n    uses: "+name+"\n"), nil)
		if se := asError(t, err); se.Code != code.WorkflowInvalid {
			t.Errorf("a workflow using refused action %s: code %s, want %s", name, se.Code, code.WorkflowInvalid)
		}
		if err := eng.RegisterAction(stepwise.Action{Name: name, Run: run}); err != nil {
			t.Errorf("registering %s properly after a refusal: %v", name, err)
		}
	}
	if err := eng.RegisterAction(stepwise.Action{Name: "norun", Run: run}); asError(t, err).Code != code.ActionExists {
		t.Errorf("a second registration of norun: %v, want %s", err, code.ActionExists)
	}
}

const question = `
version: 1
name: ask-number
steps:
  - id: n
    ask: {prompt: How many?, type: integer}
outputs:
  n: ${{ steps.n.answer }}
`

// TestContinueBadAnswer: a wrong answer is a structured refusal that
// changes nothing: the run still waits and the same token works.
func TestContinueBadAnswer(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	ctx := context.Background()
	run, err := eng.StartDefinition(ctx, []byte(question), nil)
	if err != nil {
		t.Fatal(err)
	}
	run = waitRun(t, eng, run.ID)
	if run.Status != code.StatusWaiting || run.Pause == nil || run.Pause.Kind != code.PauseQuestion ||
		run.Pause.Question == nil || run.Pause.Question.Type != "integer" || run.Pause.StepID != "n" {
		t.Fatalf("run = %+v, want waiting on question n", run)
	}
	tok := run.Pause.Token
	_, err = eng.Continue(ctx, tok, "many")
	se := asError(t, err)
	if se.Code != code.AnswerInvalid || len(se.Violations) == 0 || se.RunID != run.ID || se.StepID != "n" {
		t.Fatalf("error = %+v, want %s with violations for run %s step n", se, code.AnswerInvalid, run.ID)
	}
	after, err := eng.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != code.StatusWaiting || after.Pause == nil || after.Pause.StepID != "n" {
		t.Fatalf("after a refused answer the run is %+v, want still waiting on n", after)
	}
	if _, err := eng.Continue(ctx, tok, 7); err != nil {
		t.Fatalf("the token after a refused answer: %v", err)
	}
	done := waitRun(t, eng, run.ID)
	if done.Status != code.StatusSucceeded || done.Outputs["n"] != float64(7) {
		t.Fatalf("run = %+v, want succeeded with n 7", done)
	}
	// Used once: the token continues nothing more.
	_, err = eng.Continue(ctx, tok, 8)
	if c := asError(t, err).Code; c != code.TokenAlreadyUsed && c != code.RunFinished {
		t.Errorf("a used token: code %s, want %s or %s", c, code.TokenAlreadyUsed, code.RunFinished)
	}
}

// TestErrors: the engine's errors reach the caller as *stepwise.Error
// with their code; others pass unchanged.
func TestErrors(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	ctx := context.Background()
	_, err := eng.Get(ctx, "no-such-run")
	if se := asError(t, err); se.Code != code.RunNotFound || se.RunID != "no-such-run" || se.Unwrap() == nil {
		t.Errorf("Get of an unknown run: %+v, want %s naming the run, with its cause", se, code.RunNotFound)
	}
	_, err = eng.Continue(ctx, "not-a-token", 1)
	if c := asError(t, err).Code; c != code.TokenInvalid {
		t.Errorf("Continue with garbage: code %s, want %s", c, code.TokenInvalid)
	}
	_, err = eng.Start(ctx, "missing", nil)
	if c := asError(t, err).Code; c != code.WorkflowNotFound {
		t.Errorf("Start of a missing workflow: code %s, want %s", c, code.WorkflowNotFound)
	}
	_, err = eng.StartDefinition(ctx, []byte("version: 1\nname: w\nsteps: []\nbogus: 1\n"), nil)
	if se := asError(t, err); se.Code != code.WorkflowInvalid || len(se.Violations) == 0 {
		t.Errorf("an invalid definition: %+v, want %s with violations", se, code.WorkflowInvalid)
	}
	_, err = eng.StartDefinition(ctx, []byte(question), map[string]any{"unknown": 1})
	if c := asError(t, err).Code; c != code.InputInvalid {
		t.Errorf("an unknown input: code %s, want %s", c, code.InputInvalid)
	}
	_, err = eng.SaveWorkflow(ctx, []byte("version: 1\nname: w\nsteps:\n  - id: s\n    uses: nope\n"))
	if c := asError(t, err).Code; c != code.WorkflowInvalid {
		t.Errorf("saving an invalid workflow: code %s, want %s", c, code.WorkflowInvalid)
	}
	_, _, err = eng.List(ctx, stepwise.ListOptions{Cursor: "forged"})
	if c := asError(t, err).Code; c != code.ArgumentsInvalid {
		t.Errorf("a forged cursor: code %s, want %s", c, code.ArgumentsInvalid)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	run, err := eng.StartDefinition(ctx, []byte(question), nil)
	if err != nil {
		t.Fatal(err)
	}
	waitRun(t, eng, run.ID)
	if _, err := eng.Wait(cctx, run.ID); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a canceled context: %v, want nil or context.Canceled", err)
	}
	if err := eng.Cancel(ctx, run.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if got, err := eng.Get(ctx, run.ID); err != nil || got.Status != code.StatusCanceled {
		t.Fatalf("after Cancel: %+v, %v; want canceled", got, err)
	}
	if c := asError(t, eng.Cancel(ctx, run.ID, "again")).Code; c != code.RunFinished {
		t.Errorf("canceling a canceled run: code %s, want %s", c, code.RunFinished)
	}
}

// TestList: runs newest first, filtered by status and paged.
func TestList(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	ctx := context.Background()
	var ids []string
	for range 3 {
		run, err := eng.StartDefinition(ctx, []byte(question), nil)
		if err != nil {
			t.Fatal(err)
		}
		waitRun(t, eng, run.ID)
		ids = append(ids, run.ID)
	}
	if err := eng.Cancel(ctx, ids[0], ""); err != nil {
		t.Fatal(err)
	}
	waiting, _, err := eng.List(ctx, stepwise.ListOptions{Status: []string{code.StatusWaiting}})
	if err != nil {
		t.Fatal(err)
	}
	if len(waiting) != 2 || waiting[0].ID != ids[2] || waiting[1].ID != ids[1] {
		t.Fatalf("waiting runs = %v, want %s, %s", runIDs(waiting), ids[2], ids[1])
	}
	page, next, err := eng.List(ctx, stepwise.ListOptions{Workflow: "ask-number", Limit: 2})
	if err != nil || len(page) != 2 || next == "" {
		t.Fatalf("first page: %v, next %q, %v; want 2 runs and a cursor", runIDs(page), next, err)
	}
	rest, next, err := eng.List(ctx, stepwise.ListOptions{Workflow: "ask-number", Limit: 2, Cursor: next})
	if err != nil || len(rest) != 1 || rest[0].ID != ids[0] || next != "" {
		t.Fatalf("second page: %v, next %q, %v; want %s alone", runIDs(rest), next, err, ids[0])
	}
}

func runIDs(runs []*stepwise.Run) []string {
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	return ids
}

// TestMountRefusals: an unknown tool profile and an unknown workflow are
// refused with codes, and add no tool.
func TestMountRefusals(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	srv := mcp.NewServer(&mcp.Implementation{Name: "app", Version: "v1"}, nil)
	if c := asError(t, eng.MountTools(srv, stepwise.MountOptions{Tools: "most"})).Code; c != code.ArgumentsInvalid {
		t.Errorf("unknown profile: code %s, want %s", c, code.ArgumentsInvalid)
	}
	if c := asError(t, eng.MountWorkflow(srv, "missing", stepwise.MountOptions{})).Code; c != code.WorkflowNotFound {
		t.Errorf("unknown workflow: code %s, want %s", c, code.WorkflowNotFound)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// A server without tools does not even offer tools/list.
	res, err := cs.ListTools(ctx, nil)
	if err == nil && len(res.Tools) != 0 {
		t.Errorf("tools after refused mounts: %d, want none", len(res.Tools))
	}
}

// TestPostgres: the same API on a PostgreSQL database.
func TestPostgres(t *testing.T) {
	eng := open(t, true)
	ctx := context.Background()
	if err := eng.RegisterAction(stepwise.NewAction("greet", "Greets someone.", greet)); err != nil {
		t.Fatal(err)
	}
	run, err := eng.StartDefinition(ctx, []byte(greeting), nil)
	if err != nil {
		t.Fatal(err)
	}
	run = waitRun(t, eng, run.ID)
	if run.Status != code.StatusWaiting || run.Pause == nil {
		t.Fatalf("run = %+v, want waiting", run)
	}
	if _, err := eng.Continue(ctx, run.Pause.Token, nil); err != nil { // the default: world
		t.Fatal(err)
	}
	run = waitRun(t, eng, run.ID)
	if run.Status != code.StatusSucceeded || run.Outputs["text"] != "Hello, world!" {
		t.Fatalf("run = %+v, want succeeded with Hello, world!", run)
	}
}

// TestPermanent: a plain error is retried as the step's retry allows; a
// Permanent one fails the step at its first attempt.
func TestPermanent(t *testing.T) {
	t.Parallel()
	eng := open(t, false)
	var mu sync.Mutex
	calls := map[string]int{}
	err := eng.RegisterAction(stepwise.Action{Name: "flaky", Run: func(_ context.Context, c stepwise.Call) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[c.Input["kind"].(string)]++
		if c.Input["kind"] == "permanent" {
			return nil, stepwise.Permanent(errors.New("refused for good"))
		}
		return nil, errors.New("try again")
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"plain", "permanent"} {
		run, err := eng.StartDefinition(context.Background(), []byte(`
version: 1
name: retrying
steps:
  - id: f
    uses: flaky
    with: {kind: `+kind+`}
    retry: {attempts: 3, backoff: 1ms}
`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if run = waitRun(t, eng, run.ID); run.Status != code.StatusFailed || run.Error == nil || run.Error.StepID != "f" {
			t.Fatalf("%s: run = %+v, want failed at f", kind, run)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["plain"] != 3 || calls["permanent"] != 1 {
		t.Errorf("calls = %v, want plain 3 and permanent 1", calls)
	}
	if stepwise.Permanent(nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
}

// TestReopen: a run paused before a Go action's step goes on in the next
// process, which registered its actions through Config.Actions; an
// action Config.Actions refuses fails Open.
func TestReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	cfg := stepwise.Config{Home: home, Actions: []stepwise.Action{stepwise.NewAction("greet", "Greets someone.", greet)}}
	eng, err := stepwise.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	run, err := eng.StartDefinition(ctx, []byte(greeting), nil)
	if err != nil {
		t.Fatal(err)
	}
	run = waitRun(t, eng, run.ID)
	if run.Pause == nil {
		t.Fatalf("run = %+v, want a pause", run)
	}
	if err := eng.Close(ctx); err != nil {
		t.Fatal(err)
	}
	eng, err = stepwise.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	if _, err := eng.Continue(ctx, run.Pause.Token, "Bob"); err != nil {
		t.Fatal(err)
	}
	if run = waitRun(t, eng, run.ID); run.Status != code.StatusSucceeded || run.Outputs["text"] != "Hello, Bob!" {
		t.Fatalf("run = %+v, want succeeded with Hello, Bob!", run)
	}
	bad := stepwise.Config{Home: t.TempDir(), Actions: []stepwise.Action{{Name: "log", Run: func(context.Context, stepwise.Call) (any, error) { return nil, nil }}}}
	if _, err := stepwise.Open(ctx, bad); asError(t, err).Code != code.ActionExists {
		t.Errorf("Open with an action named like a built-in: %v, want %s", err, code.ActionExists)
	}
}

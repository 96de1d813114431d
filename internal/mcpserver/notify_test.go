package mcpserver

//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but stays for clients of earlier protocols (issue 23)

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// TestSubscriptionProgressAndLogs: over every transport, a run resource
// subscribed to is updated, progress notifications reach the client, and
// so do MCP log messages.
func TestSubscriptionProgressAndLogs(t *testing.T) {
	for _, via := range transports {
		t.Run(via, func(t *testing.T) { subscriptionProgressAndLogs(t, via) })
	}
}

func subscriptionProgressAndLogs(t *testing.T, via string) {
	sl := NewSessionLog()
	e := newEnv(t, Options{}, service.Options{Logger: slog.New(sl)})
	sl.Attach(e.srv)

	var mu sync.Mutex
	var updated []string
	var logs []string
	progress := make(chan *mcp.ProgressNotificationParams, 16)
	cs := connectVia(t, e.srv, via, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updated = append(updated, r.Params.URI)
			mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params },
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, strings.TrimSpace(toText(r.Params.Data)))
			mu.Unlock()
		},
	})
	ctx := context.Background()
	logged := "Hello, Ada"
	if !pings(via) {
		logged = "" // no logging/setLevel, so no log messages
	} else if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	var run RunResult
	call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &run)
	uri := "stepwise://runs/" + run.RunID
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// From protocol 2026-07-28 the client's Subscribe sends a long-lived
	// subscriptions/listen and returns without waiting for the server to
	// take it; the server handles each request in a goroutine of its own,
	// so the run_continue below could be handled first and its events
	// find nobody subscribed.
	waitFor(t, func() bool { return e.srv.subs.watched(uri) }, "the subscription to reach the server")
	params := &mcp.CallToolParams{Name: "run_continue", Arguments: map[string]any{"token": run.Pause.Token, "value": "Ada"}}
	params.SetProgressToken("p1")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	var last float64
	got := 0
	deadline := time.After(10 * time.Second)
	for got < 2 {
		select {
		case p := <-progress:
			if p.ProgressToken != "p1" || p.Progress <= last {
				t.Fatalf("progress %+v after %v", p, last)
			}
			last = p.Progress
			got++
		case <-deadline:
			t.Fatalf("%d progress notifications", got)
		}
	}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(updated) > 0 && strings.Contains(strings.Join(logs, "\n"), logged)
	}, "a resources/updated notification and the log step's message", func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("updates %v, logs %q", updated, logs)
	})
	mu.Lock()
	for _, u := range updated {
		if u != uri {
			t.Errorf("update for %s", u)
		}
	}
	mu.Unlock()
}

func TestResourcesPromptsCompletions(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	ctx := context.Background()
	for uri, want := range map[string]string{
		"stepwise://docs/workflows":   "# ",
		"stepwise://schema/workflow":  `"$schema"`,
		"stepwise://workflows":        `"greet"`,
		"stepwise://workflows/greet":  "name: greet",
		"stepwise://workflows/nope":   "",
		"stepwise://runs/missing-run": "",
	} {
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if want == "" {
			if err == nil {
				t.Errorf("%s: read %v", uri, res.Contents[0].Text)
			}
			continue
		}
		if err != nil || !strings.Contains(res.Contents[0].Text, want) {
			t.Errorf("%s: %v", uri, err)
		}
	}
	for name, args := range map[string]map[string]string{
		"author_workflow": {"goal": "rotate keys"},
		"fix_workflow":    {"content": "version: 1\nname: x\nsteps: []\n"},
		"run_workflow":    {"name": "greet"},
	} {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		if err != nil || len(res.Messages) < 2 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "run_workflow", Arguments: map[string]string{"name": "../etc/passwd"}}); err == nil {
		t.Error("run_workflow accepted a path")
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "run_workflow"},
		Argument: mcp.CompleteParamsArgument{Name: "name", Value: "gr"}})
	if err != nil || len(comp.Completion.Values) != 1 || comp.Completion.Values[0] != "greet" {
		t.Errorf("completion: %+v %v", comp, err)
	}
	var run RunResult
	call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &run)
	comp, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "stepwise://runs/{run_id}"},
		Argument: mcp.CompleteParamsArgument{Name: "run_id", Value: run.RunID[:8]}})
	if err != nil || len(comp.Completion.Values) != 1 || comp.Completion.Values[0] != run.RunID {
		t.Errorf("run id completion: %+v %v", comp, err)
	}
}

func TestExposedWorkflowsFollowTheLibrary(t *testing.T) {
	e := newEnv(t, Options{ExposeWorkflows: true, LibraryPoll: 50 * time.Millisecond}, service.Options{})
	changed := make(chan struct{}, 8)
	cs := e.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx := context.Background()
	tools := func() map[string]*mcp.Tool {
		out := map[string]*mcp.Tool{}
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out[tl.Name] = tl
		}
		return out
	}
	ts := tools()
	if ts["wf_greet"] == nil || ts["wf_vault"] == nil {
		t.Fatalf("exposed tools missing: %v", ts)
	}
	var run RunResult
	if call(t, cs, "wf_greet", map[string]any{"greeting": "Yo", "wait_seconds": 5}, &run) || run.Pause == nil || run.Workflow != "greet" {
		t.Fatalf("wf_greet: %+v", run)
	}
	var te ToolError
	if !call(t, cs, "wf_greet", map[string]any{"greeting": 7}, &te) || te.ErrorCode != "INPUT_INVALID" {
		t.Fatalf("wf_greet with a bad input: %+v", te)
	}
	if err := os.Remove(filepath.Join(e.svc.Home.WorkflowsDir(), "vault.yaml")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed")
	}
	waitFor(t, func() bool { return tools()["wf_vault"] == nil }, "wf_vault to disappear")
}

// waitFor waits until cond holds; on a time-out, state (when given) says
// what there was.
func waitFor(t *testing.T, cond func() bool, what string, state ...func() string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			if len(state) > 0 {
				t.Fatalf("timed out waiting for %s: %s", what, state[0]())
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

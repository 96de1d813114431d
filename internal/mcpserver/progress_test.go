package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// TestProgressWhileALongStepRuns: a caller that sent a progress token hears
// of a step while it runs, not only when it ends, with the step counts of a
// workflow whose count is known, and progress only ever increases.
func TestProgressWhileALongStepRuns(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	beats := make(chan struct{}, 64)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		fmt.Fprintln(w, `{"ok":true}`)
	}))
	defer slow.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	e := newEnv(t, Options{ProgressEvery: 20 * time.Millisecond}, service.Options{})
	cs := e.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params)
		mu.Unlock()
		if strings.Contains(r.Params.Message, "running for") {
			beats <- struct{}{}
		}
	}})
	// The slow step answers once the caller has heard twice that it runs.
	go func() {
		for range 2 {
			select {
			case <-beats:
			case <-time.After(30 * time.Second):
			}
		}
		close(release)
	}()
	def := fmt.Sprintf("version: 1\nname: slow\nsteps:\n  - {id: a, uses: noop}\n  - id: b\n    uses: http\n    with: {url: %q}\n  - {id: c, uses: noop}\n", slow.URL)
	params := &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"definition": def, "wait_seconds": 60}}
	params.SetProgressToken("p1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("run_start: %v %+v", err, res)
	}
	// The client hands notifications to its handler on goroutines of its
	// own: the last may reach it just after the result.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		done := len(got) > 0 && strings.HasPrefix(got[len(got)-1].Message, "step c succeeded")
		mu.Unlock()
		if done {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var msgs []string
	last := -1.0
	for _, p := range got {
		msgs = append(msgs, p.Message)
		if p.Progress <= last {
			t.Errorf("progress went from %v to %v at %q", last, p.Progress, p.Message)
		}
		last = p.Progress
		if p.Total != 3 {
			t.Errorf("total %v at %q, want 3", p.Total, p.Message)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{"step b started (2 of 3)", "step b running for", "step b succeeded (2 of 3)", "step c succeeded (3 of 3)"} {
		if !strings.Contains(all, want) {
			t.Errorf("no report %q in:\n%s", want, all)
		}
	}
	if last != 3 {
		t.Errorf("last progress %v, want 3 (all steps ended):\n%s", last, all)
	}
}

// TestProgressPauseAndUnknownTotal: a workflow that jumps has no total; a
// pause is reported.
func TestProgressPauseAndUnknownTotal(t *testing.T) {
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params)
		mu.Unlock()
	}})
	def := "version: 1\nname: jumpy\nsteps:\n  - {id: a, uses: noop}\n  - id: pick\n    switch: [{goto: q}]\n  - {id: skipped, uses: noop}\n  - id: q\n    ask: {prompt: Why?, type: string}\n"
	params := &mcp.CallToolParams{Name: "run_start", Arguments: map[string]any{"definition": def, "wait_seconds": 30}}
	params.SetProgressToken(7)
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_start: %v %+v", err, res)
	}
	// The client hands notifications to its handler on goroutines of its
	// own: the last may reach it just after the result.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		paused := len(got) > 0 && got[len(got)-1].Message == "run paused"
		mu.Unlock()
		if paused {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var msgs []string
	for _, p := range got {
		msgs = append(msgs, p.Message)
		if p.Total != 0 {
			t.Errorf("total %v at %q for a workflow that jumps", p.Total, p.Message)
		}
	}
	if len(msgs) == 0 || msgs[len(msgs)-1] != "run paused" || !strings.Contains(strings.Join(msgs, "\n"), "step a succeeded") {
		t.Errorf("reports: %q", msgs)
	}
}

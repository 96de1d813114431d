package mcpserver

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// testClock is a settable clock for the service under test.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

const quickDef = "version: 1\nname: quick\nsteps:\n  - id: a\n    uses: noop\n"

// purgeFixture starts, on a fresh server, two runs of quick that finish
// 40 days before a third one, and a greet run left waiting.
type purgeFixture struct {
	e                  *env
	old, recent, greet []string
}

func newPurgeFixture(t *testing.T) *purgeFixture {
	t.Helper()
	clk := &testClock{t: time.Date(2026, 4, 1, 8, 0, 0, 0, time.UTC)}
	e := newEnv(t, Options{}, service.Options{Now: clk.Now})
	cs := e.connect(nil)
	f := &purgeFixture{e: e}
	startQuick := func() string {
		var run RunResult
		if call(t, cs, "run_start", map[string]any{"definition": quickDef}, &run) || run.Status != "succeeded" {
			t.Fatalf("run_start: %+v", run)
		}
		return run.RunID
	}
	f.old = []string{startQuick(), startQuick()}
	clk.add(40 * 24 * time.Hour)
	f.recent = []string{startQuick()}
	var run RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &run) || run.Status != "waiting" {
		t.Fatalf("run_start greet: %+v", run)
	}
	f.greet = []string{run.RunID}
	return f
}

// stored reports, for each run, whether run_get still finds it.
func (f *purgeFixture) stored(t *testing.T, cs *mcp.ClientSession, ids []string) []bool {
	t.Helper()
	out := make([]bool, len(ids))
	for i, id := range ids {
		var te ToolError
		if !call(t, cs, "run_get", map[string]any{"run_id": id}, &te) {
			out[i] = true
			continue
		}
		if te.ErrorCode != "RUN_NOT_FOUND" {
			t.Fatalf("run_get %s: %+v", id, te)
		}
	}
	return out
}

func (f *purgeFixture) wantStored(t *testing.T, cs *mcp.ClientSession, ids []string, want bool) {
	t.Helper()
	for i, got := range f.stored(t, cs, ids) {
		if got != want {
			t.Errorf("run %s stored: %v, want %v", ids[i], got, want)
		}
	}
}

func TestRunPurgeWithoutElicitationNeedsConfirm(t *testing.T) {
	f := newPurgeFixture(t)
	cs := f.e.connect(nil)
	all := append(append(append([]string{}, f.old...), f.recent...), f.greet...)

	var te ToolError
	if !call(t, cs, "run_purge", map[string]any{}, &te) || te.ErrorCode != CodeConfirmationRequired {
		t.Fatalf("unconfirmed purge: %+v", te)
	}
	if !strings.Contains(te.Message, "purge 3 finished runs") {
		t.Errorf("the message does not say how many: %q", te.Message)
	}
	f.wantStored(t, cs, all, true)

	events, attempts := 0, 0
	for _, id := range f.old {
		evs, err := f.e.svc.Events(context.Background(), id, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		atts, err := f.e.svc.Store.Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		events, attempts = events+len(evs), attempts+len(atts)
	}
	var out RunPurgeOut
	if call(t, cs, "run_purge", map[string]any{"older_than": "30d", "confirm": true}, &out) {
		t.Fatalf("confirmed purge failed: %+v", out)
	}
	// One step each; the version stays (the recent run uses it).
	want := RunPurgeOut{service.PurgeResult{Runs: 2, Steps: 2, Attempts: attempts, Events: events}}
	if out != want || events < 6 {
		t.Errorf("counts %+v, want %+v", out, want)
	}
	f.wantStored(t, cs, f.old, false)
	f.wantStored(t, cs, append(f.recent, f.greet...), true)

	// Nothing left to match: zeros, no confirmation needed.
	out = RunPurgeOut{service.PurgeResult{Runs: -1}}
	if call(t, cs, "run_purge", map[string]any{"older_than": "30d"}, &out) || out != (RunPurgeOut{}) {
		t.Fatalf("purge of nothing: %+v", out)
	}

	for _, c := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"status": "waiting", "confirm": true}, service.CodeFilterInvalid},
		{map[string]any{"status": "done", "confirm": true}, CodeArgumentsInvalid},
		{map[string]any{"older_than": "soon", "confirm": true}, CodeArgumentsInvalid},
		{map[string]any{"older_than": 30, "confirm": true}, CodeArgumentsInvalid},
	} {
		te = ToolError{}
		if !call(t, cs, "run_purge", c.args, &te) || te.ErrorCode != c.code {
			t.Errorf("%v: %+v, want %s", c.args, te, c.code)
		}
	}
	f.wantStored(t, cs, append(f.recent, f.greet...), true)
}

func TestRunPurgeConfirmedByThePerson(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			f := newPurgeFixture(t)
			// Declined, although the agent said confirm: true: the person
			// decides when they can be asked.
			el := &elicitor{answers: []*mcp.ElicitResult{{Action: "decline"}}}
			cs := connectVersion(t, f.e, &mcp.ClientOptions{ElicitationHandler: el.handle}, version)
			var te ToolError
			if !call(t, cs, "run_purge", map[string]any{"status": "succeeded", "confirm": true}, &te) || te.ErrorCode != CodeConfirmationDeclined {
				t.Fatalf("declined purge: %+v", te)
			}
			if len(el.asked) != 1 || !strings.Contains(el.asked[0].Message, "purge 3 finished runs that succeeded") {
				t.Fatalf("asked %+v", el.asked)
			}
			f.wantStored(t, cs, append(f.old, f.recent...), true)

			// Accepted without ticking the box is no confirmation either.
			el.answers = []*mcp.ElicitResult{accept(map[string]any{"confirm": false})}
			if !call(t, cs, "run_purge", map[string]any{"workflow": "quick"}, &te) || te.ErrorCode != CodeConfirmationDeclined {
				t.Fatalf("unticked confirmation: %+v", te)
			}
			f.wantStored(t, cs, f.old, true)

			el.answers = []*mcp.ElicitResult{accept(map[string]any{"confirm": true})}
			var out RunPurgeOut
			if call(t, cs, "run_purge", map[string]any{"workflow": "quick", "older_than": "720h"}, &out) || out.Runs != 2 {
				t.Fatalf("accepted purge: %+v", out)
			}
			if len(el.asked) != 3 || !strings.Contains(el.asked[2].Message, "purge 2 finished runs of quick, finished more than 720h ago,") {
				t.Errorf("asked %+v", el.asked[len(el.asked)-1])
			}
			f.wantStored(t, cs, f.old, false)
			f.wantStored(t, cs, append(f.recent, f.greet...), true)
		})
	}
}

func TestRunPurgeAnnotations(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "run_purge" {
			continue
		}
		a := tool.Annotations
		if a == nil || a.DestructiveHint == nil || !*a.DestructiveHint || !a.IdempotentHint || a.ReadOnlyHint {
			t.Fatalf("annotations %+v", a)
		}
		props := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
		for _, p := range []string{"workflow", "status", "older_than", "confirm"} {
			if _, ok := props[p]; !ok {
				t.Errorf("input schema lacks %s: %v", p, props)
			}
		}
		return
	}
	t.Fatal("run_purge is not listed")
}

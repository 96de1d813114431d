package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/service"
)

// TestTypedRunEvents: a go-sdk client that opts in (by _meta on the call,
// or by the experimental capability at initialize) gets one notification
// per recorded event of the run its call waits for, with the event in the
// params; a client that does not opt in gets the plain progress reports.
func TestTypedRunEvents(t *testing.T) {
	for _, via := range []string{"memory", "stdio", "http"} {
		for _, optIn := range []string{"meta", "capability", "none"} {
			t.Run(via+"/"+optIn, func(t *testing.T) { typedRunEvents(t, via, optIn) })
		}
	}
}

func typedRunEvents(t *testing.T, via, optIn string) {
	e := newEnv(t, Options{}, service.Options{})
	progress := make(chan *mcp.ProgressNotificationParams, 64)
	copts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params }}
	if optIn == "capability" {
		copts.Capabilities = &mcp.ClientCapabilities{Experimental: map[string]any{EventsOptIn: map[string]any{}}}
	}
	cs := connectVia(t, e.srv, via, copts)
	var run RunResult
	call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &run)
	if run.Pause == nil {
		t.Fatalf("run %+v", run)
	}
	params := &mcp.CallToolParams{Name: "run_continue", Arguments: map[string]any{"token": run.Pause.Token, "value": "Ada"}}
	params.SetProgressToken("p1")
	if optIn == "meta" {
		params.Meta[EventsOptIn] = true
	}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("run_continue: %v %+v", err, res)
	}

	var events []RunEvent
	var last float64
	deadline := time.After(20 * time.Second)
	for {
		var p *mcp.ProgressNotificationParams
		select {
		case p = <-progress:
		case <-deadline:
			t.Fatalf("no run.paused event (or plain report of step say) after %+v", events)
		}
		if p.ProgressToken != "p1" || p.Progress <= last {
			t.Fatalf("progress %+v after %v", p, last)
		}
		last = p.Progress
		raw, ok := p.Meta[EventMetaKey]
		if optIn == "none" {
			if ok {
				t.Fatalf("an event without opting in: %+v", p)
			}
			if strings.HasPrefix(p.Message, "step say succeeded") {
				return // the plain reports go on as before
			}
			continue
		}
		if !ok {
			t.Fatalf("a notification without its event: %+v", p)
		}
		b, _ := json.Marshal(raw)
		var ev RunEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.RunID != run.RunID || ev.Seq == 0 || (len(events) > 0 && ev.Seq <= events[len(events)-1].Seq) {
			t.Fatalf("event %+v after %+v", ev, events)
		}
		events = append(events, ev)
		if ev.Type == engine.EventRunPaused {
			break
		}
	}
	// The answer entered, the steps it let run, the next pause: in order.
	var seen []string
	for _, ev := range events {
		seen = append(seen, ev.Type+":"+ev.StepID)
	}
	want := []string{engine.EventStepAnswered + ":name", engine.EventStepSucceeded + ":name", engine.EventStepSucceeded + ":say", engine.EventRunPaused + ":write"}
	i := 0
	for _, s := range seen {
		if i < len(want) && s == want[i] {
			i++
		}
	}
	if i != len(want) {
		t.Fatalf("events %v, want in order %v", seen, want)
	}
	for _, ev := range events {
		if ev.Type == engine.EventStepAnswered {
			d, _ := json.Marshal(ev.Data)
			var data struct {
				Source string `json:"source"`
			}
			if json.Unmarshal(d, &data) != nil || data.Source != "continue" {
				t.Errorf("step.answered data %s", d)
			}
		}
	}
}

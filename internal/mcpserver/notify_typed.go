package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"stepwise.dev/stepwise/internal/service"
)

// Typed run events (issue 26, item 4). A client that opts in hears of
// every event of the run a call waits for with the event itself in the
// notification's params, not only a resource URI to read again. The
// go-sdk sends no notification method it does not know (its sending
// table is fixed; see docs/UPSTREAM.md), so the event rides on the
// standard notifications/progress of the call's progress token, under
// _meta[EventMetaKey]; the progress value then counts the events sent.
const (
	// EventsOptIn is the opt-in: true in a call's _meta, or a key of the
	// client's experimental capabilities at initialize.
	EventsOptIn = "io.stepwise/events"
	// EventMetaKey holds the event (a RunEvent) in a progress
	// notification's _meta.
	EventMetaKey = "io.stepwise/run_event"
)

// RunEvent is one event of a run as a typed notification carries it.
type RunEvent struct {
	RunID  string `json:"run_id"`
	Seq    int64  `json:"seq"`
	Type   string `json:"type"`
	StepID string `json:"step_id,omitempty"`
	Data   any    `json:"data,omitempty"`
	// Status is the run's status after the event.
	Status string `json:"status"`
}

// wantsEvents tells whether the caller of req opted in to typed events.
func wantsEvents(req *mcp.CallToolRequest) bool {
	if on, ok := req.Params.GetMeta()[EventsOptIn].(bool); ok {
		return on
	}
	if req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil {
		return false
	}
	_, ok := ip.Capabilities.Experimental[EventsOptIn]
	return ok
}

// typedEvent sends ev as its own notification, with p.mu held: once per
// recorded event (a step.started is published a first time before it is
// recorded, with seq 0: that one is left out).
func (p *progressReporter) typedEvent(ev service.Event) {
	if ev.Seq == 0 {
		return
	}
	var data any
	if len(ev.Data) > 0 {
		data = ev.Data
	}
	p.sent++
	msg := ev.Type
	if ev.StepID != "" {
		msg += " " + ev.StepID
	}
	params := &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.sent, Message: msg,
		Meta: mcp.Meta{EventMetaKey: RunEvent{RunID: ev.RunID, Seq: ev.Seq, Type: ev.Type, StepID: ev.StepID, Data: data, Status: ev.Status}}}
	_ = p.ss.NotifyProgress(p.ctx, params)
}

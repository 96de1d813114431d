package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// liveEvent is one message of a run's live view.
type liveEvent struct {
	Kind   string `json:"kind"` // "event" or "status"
	Seq    int64  `json:"seq,omitempty"`
	Type   string `json:"type,omitempty"`
	StepID string `json:"step_id,omitempty"`
	At     string `json:"at,omitempty"`
	Data   string `json:"data,omitempty"`
	Status string `json:"status,omitempty"`
}

// liveBatch bounds the events read from the store at once.
const liveBatch = 200

// events serves /runs/{id}/events: the run's events after Last-Event-ID
// (or ?after=), then each new one and the run's status as it changes, as
// server-sent events. Events of a run this process drives arrive as they
// happen (service.Watch); the store is read again every Poll for runs
// other processes drive. The stream ends when the run finishes, the
// client leaves, the server shuts down or StreamLimit passes.
func (h *Handler) events(w http.ResponseWriter, r *http.Request, _ caller) {
	id := r.PathValue("id")
	ctx := r.Context()
	brief, err := h.svc.GetRunBrief(ctx, id)
	if err != nil {
		http.Error(w, "no run "+id, http.StatusNotFound)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported here", http.StatusInternalServerError)
		return
	}
	after, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	if a, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64); err == nil && a > after {
		after = a
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	var mu sync.Mutex // Watch's callback and this goroutine both write
	send := func(e liveEvent) {
		b, _ := json.Marshal(e)
		mu.Lock()
		defer mu.Unlock()
		if e.Kind == "event" && e.Seq > 0 {
			fmt.Fprintf(w, "id: %d\n", e.Seq)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		fl.Flush()
	}
	var seqMu sync.Mutex
	last := after
	// catchUp sends the stored events after the last one sent.
	catchUp := func() error {
		for {
			evs, err := h.svc.Events(ctx, id, last, liveBatch)
			if err != nil {
				return err
			}
			for _, e := range evs {
				seqMu.Lock()
				fresh := e.Seq > last
				if fresh {
					last = e.Seq
				}
				seqMu.Unlock()
				if fresh {
					send(liveOf(e))
				}
			}
			if len(evs) < liveBatch {
				return nil
			}
		}
	}
	limit := time.NewTimer(h.opts.StreamLimit)
	defer limit.Stop()
	status := ""
	for {
		if err := catchUp(); err != nil {
			return
		}
		if brief.Status != status {
			status = brief.Status
			send(liveEvent{Kind: "status", Status: status})
		}
		if code.Finished(status) {
			return
		}
		if status == code.StatusRunning || status == code.StatusPending {
			// Live: events as they happen, until the run stops running or
			// a poll is due.
			_, _ = h.svc.Watch(ctx, id, h.opts.Poll, nil, func(ev service.Event) {
				if ev.Seq == 0 {
					// A step started: not committed yet, shown as it is.
					send(liveEvent{Kind: "event", Type: ev.Type, StepID: ev.StepID, At: timeText(ev.At)})
					return
				}
				seqMu.Lock()
				fresh := ev.Seq == last+1
				if fresh {
					last = ev.Seq
				}
				seqMu.Unlock()
				if fresh {
					send(liveEvent{Kind: "event", Seq: ev.Seq, Type: ev.Type, StepID: ev.StepID, At: timeText(ev.At), Data: eventData(ev.Data)})
				}
			})
		} else {
			t := time.NewTimer(h.opts.Poll)
			select {
			case <-t.C:
			case <-ctx.Done():
			case <-h.closed:
			case <-limit.C:
				t.Stop()
				return
			}
			t.Stop()
		}
		select {
		case <-ctx.Done():
			return
		case <-h.closed:
			return
		case <-limit.C:
			return
		default:
		}
		if brief, err = h.svc.GetRunBrief(ctx, id); err != nil {
			return
		}
	}
}

func liveOf(e service.StoredEvent) liveEvent {
	return liveEvent{Kind: "event", Seq: e.Seq, Type: e.Type, StepID: e.StepID, At: timeText(e.At), Data: eventData(e.Data)}
}

func eventData(d json.RawMessage) string {
	return eventOf(service.StoredEvent{Data: d}).Data
}

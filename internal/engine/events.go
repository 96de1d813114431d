package engine

import (
	"encoding/json"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
)

// Event types.
const (
	EventRunCreated    = code.EventRunCreated
	EventRunQueued     = code.EventRunQueued
	EventRunStarted    = code.EventRunStarted
	EventRunPaused     = code.EventRunPaused
	EventRunContinued  = code.EventRunContinued
	EventRunResumed    = code.EventRunResumed
	EventRunSucceeded  = code.EventRunSucceeded
	EventRunFailed     = code.EventRunFailed
	EventRunCanceled   = code.EventRunCanceled
	EventStepStarted   = code.EventStepStarted
	EventStepSucceeded = code.EventStepSucceeded
	EventStepFailed    = code.EventStepFailed
	EventStepSkipped   = code.EventStepSkipped
	EventStepAnswered  = code.EventStepAnswered

	EventRunCompensating  = code.EventRunCompensating
	EventCompensated      = code.EventCompensated
	EventCompensationFail = code.EventCompensationFail
	EventHookSucceeded    = code.EventHookSucceeded
	EventHookFailed       = code.EventHookFailed
)

// Event is something that happened in a run, as published to subscribers
// (after it was committed, except step.started, which is published when the
// step starts and committed with the step's result).
type Event struct {
	RunID  string          `json:"run_id"`
	Seq    int64           `json:"seq"` // 0 for a not-yet-committed step.started
	Type   string          `json:"type"`
	StepID string          `json:"step_id,omitempty"`
	Data   json.RawMessage `json:"data,omitempty"`
	At     time.Time       `json:"at"`
	// Status is the run's status after the event.
	Status string `json:"status"`
}

// bus fans events out to in-process subscribers (the MCP server, the
// dashboard, Wait). Sends never block the engine: a subscriber that does
// not keep up loses its oldest events, never the newest (which carry the
// run's status: one commit can publish thousands of events, see ahead.go),
// and must re-read history from the store by sequence number. Subscriptions are kept by run, so that publishing a
// run's events touches that run's subscribers and those of every run, not
// every subscription of the process (each waiting caller has one).
type bus struct {
	mu    sync.Mutex                            // publish holds it while sending: one publish's events reach a subscriber together
	runs  map[string]map[*subscription]struct{} // by run id
	every map[*subscription]struct{}            // runID "" : every run
	// eager counts the subscriptions of every run without an interest:
	// while there is one, every run's changes elsewhere are forwarded
	// (runfeed.go).
	eager int
}

type subscription struct {
	runID string // "" for every run
	ch    chan Event
	// interest, on a subscription of every run, says which runs'
	// changes elsewhere it wants forwarded (nil: all).
	interest func(runID string) bool
}

func newBus() *bus {
	return &bus{runs: map[string]map[*subscription]struct{}{}, every: map[*subscription]struct{}{}}
}

func (b *bus) subscribe(runID string, buffer int) (<-chan Event, func()) {
	return b.subscribeAs(runID, buffer, nil)
}

// subscribeAs is subscribe; a subscription of every run with an interest
// makes other processes' runs forwarded only as it says (see watched).
func (b *bus) subscribeAs(runID string, buffer int, interest func(string) bool) (<-chan Event, func()) {
	s := &subscription{runID: runID, ch: make(chan Event, buffer)}
	if runID == "" {
		s.interest = interest
	}
	b.mu.Lock()
	if runID == "" && s.interest == nil {
		b.eager++
	}
	set := b.every
	if runID != "" {
		if set = b.runs[runID]; set == nil {
			set = map[*subscription]struct{}{}
			b.runs[runID] = set
		}
	}
	set[s] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			b.mu.Lock()
			if runID == "" {
				delete(b.every, s)
				if s.interest == nil {
					b.eager--
				}
			} else if set := b.runs[runID]; set != nil {
				delete(set, s)
				if len(set) == 0 {
					delete(b.runs, runID)
				}
			}
			// No send can follow: publish holds the lock while sending.
			close(s.ch)
			b.mu.Unlock()
		})
	}
}

func (b *bus) publish(events ...Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range events {
		for s := range b.runs[e.RunID] {
			send(s, e)
		}
		for s := range b.every {
			send(s, e)
		}
	}
}

func send(s *subscription, e Event) {
	for range 2 {
		select {
		case s.ch <- e:
			return
		default:
		}
		// Full: drop the oldest. Only publish sends (under the bus lock),
		// so the room it makes stays free for e.
		select {
		case <-s.ch:
		default:
		}
	}
}

// watched reports whether anyone here wants the run's events: a
// subscription of the run, or one of every run without an interest or
// whose interest names it.
func (b *bus) watched(runID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eager > 0 || len(b.runs[runID]) > 0 {
		return true
	}
	for s := range b.every {
		if s.interest != nil && s.interest(runID) {
			return true
		}
	}
	return false
}

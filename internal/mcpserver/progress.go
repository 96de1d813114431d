package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// defaultProgressEvery is how often a caller that asked for progress hears
// of a step still running.
const defaultProgressEvery = 5 * time.Second

// progressReporter turns a run's events into progress notifications for a
// caller that sent a progress token: one when a step starts, one when it
// ends, one when the run pauses, and one every Options.ProgressEvery while steps run, so that a
// long step is seen to go on. Progress is the number of steps ended (out
// of Total when the workflow's step count is known beforehand), plus a
// fraction while a step runs that grows with each report and stays below
// the next step: it only ever increases, as the protocol requires.
type progressReporter struct {
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	every time.Duration
	typed bool // the caller opted in to typed events (notify_typed.go)

	mu      sync.Mutex
	total   int                  // 0: unknown
	ended   int                  // steps ended
	beats   int                  // reports since the last step ended
	running map[string]time.Time // step id → when it started
	sent    float64              // the last progress sent
	stop    chan struct{}
	stopped sync.Once
}

// progress starts reporting the progress of runID to the caller of req, or
// returns nil when the caller sent no progress token. Call stop when the
// wait ends.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest, runID string) *progressReporter {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return nil
	}
	every := s.opts.ProgressEvery
	if every <= 0 {
		every = defaultProgressEvery
	}
	p := &progressReporter{ctx: ctx, ss: req.Session, token: tok, every: every, typed: wantsEvents(req),
		total: s.svc.PlannedSteps(ctx, runID), running: map[string]time.Time{}, stop: make(chan struct{})}
	if !p.typed {
		go p.beat()
	}
	return p
}

// onEvent is the Watch callback (nil when p is nil: no reports).
func (p *progressReporter) onEvent() func(service.Event) {
	if p == nil {
		return nil
	}
	return p.event
}

// end stops the reports.
func (p *progressReporter) end() {
	if p != nil {
		p.stopped.Do(func() { close(p.stop) })
	}
}

func (p *progressReporter) event(ev service.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.typed {
		p.typedEvent(ev)
		return
	}
	switch ev.Type {
	case code.EventStepStarted:
		if _, ok := p.running[ev.StepID]; ok {
			return // published when it began and again when committed
		}
		p.running[ev.StepID] = time.Now()
		p.beats++
		p.send(fmt.Sprintf("step %s started%s", ev.StepID, p.of(p.ended+1)))
	case code.EventStepSucceeded, code.EventStepFailed, code.EventStepSkipped:
		delete(p.running, ev.StepID)
		p.ended++
		p.beats = 0
		if p.total > 0 && p.ended > p.total {
			p.total = 0 // the count was wrong: say nothing rather than more than all
		}
		p.send(fmt.Sprintf("step %s %s%s", ev.StepID, strings.TrimPrefix(ev.Type, "step."), p.of(p.ended)))
	case code.EventStepRetrying:
		p.beats++
		p.send("step " + ev.StepID + " failed; retrying")
	case code.EventRunPaused:
		p.beats++
		p.send("run paused")
	}
	// A run's end is not reported: the tool's result, which follows, says
	// it (and progress, at the total, could not increase).
}

// of is " (3 of 7)" when the total is known.
func (p *progressReporter) of(n int) string {
	if p.total == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of %d)", n, p.total)
}

func (p *progressReporter) beat() {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.ctx.Done():
			return
		case now := <-t.C:
			p.mu.Lock()
			if id, since, ok := p.longest(); ok {
				p.beats++
				p.send(fmt.Sprintf("step %s running for %s%s", id, now.Sub(since).Round(time.Second), p.of(p.ended+1)))
			}
			p.mu.Unlock()
		}
	}
}

// longest is the step running the longest.
func (p *progressReporter) longest() (string, time.Time, bool) {
	var id string
	var since time.Time
	for k, t := range p.running {
		if id == "" || t.Before(since) || (t.Equal(since) && k < id) {
			id, since = k, t
		}
	}
	return id, since, id != ""
}

// send reports with p.mu held, so that reports go out in order.
func (p *progressReporter) send(msg string) {
	v := float64(p.ended) + 1 - 1/float64(p.beats+1)
	if p.beats == 0 {
		v = float64(p.ended)
	}
	if v <= p.sent {
		return // never backwards (a step ended with no start seen)
	}
	p.sent = v
	params := &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: v, Message: msg}
	if p.total > 0 {
		params.Total = float64(p.total)
	}
	_ = p.ss.NotifyProgress(p.ctx, params)
}

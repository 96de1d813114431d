package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// progressOut is where a command that drives runs prints what happens
// while they run: the progress lines of a run and the actions' own output
// (log messages, command output), in the order it happened. Actions write
// while their step runs and the step lines come from the bus after each
// commit, so while progress is printed (follow) a write waits until every
// event already published is printed: a step with an effect starts only
// after the steps before it are committed and their events published, so
// the line of the step before it comes first. Otherwise writes go straight
// through.
type progressOut struct {
	w io.Writer

	mu      sync.Mutex
	writes  chan progressWrite // nil unless progress is printed
	stopped chan struct{}      // closed when the printer stops
}

type progressWrite struct {
	b    []byte
	done chan struct{}
}

// Write implements io.Writer.
func (p *progressOut) Write(b []byte) (int, error) {
	p.mu.Lock()
	writes, stopped := p.writes, p.stopped
	p.mu.Unlock()
	if writes != nil {
		done := make(chan struct{})
		select {
		case writes <- progressWrite{b, done}:
			<-done
			return len(b), nil
		case <-stopped:
		}
	}
	return p.w.Write(b)
}

// start routes writes through the printer that the returned function
// runs: it prints the progress lines of the run tree's events until
// events closes, and the writes in between.
func (p *progressOut) start(events <-chan service.Event, tree *service.RunTree) (print func()) {
	writes, stopped := make(chan progressWrite), make(chan struct{})
	p.mu.Lock()
	p.writes, p.stopped = writes, stopped
	p.mu.Unlock()
	return func() { p.print(events, tree, writes, stopped) }
}

func (p *progressOut) print(events <-chan service.Event, tree *service.RunTree, writes chan progressWrite, stopped chan struct{}) {
	defer func() {
		p.mu.Lock()
		p.writes, p.stopped = nil, nil
		p.mu.Unlock()
		close(stopped)
	}()
	// A sub-workflow's driver may publish its first steps before its
	// parent's step.child_started line: a child run created with a parent
	// has its lines held until that line is printed (or the stream ends).
	type held struct {
		e     service.Event
		depth int
	}
	waiting := map[string][]held{} // child run id → its lines so far
	announced := map[string]bool{}
	flush := func(runID string) {
		for _, h := range waiting[runID] {
			progressLine(p.w, h.e, h.depth)
		}
		delete(waiting, runID)
	}
	defer func() {
		for id := range waiting {
			flush(id)
		}
	}()
	line := func(e service.Event) {
		depth, ok := tree.Depth(e)
		var d struct {
			ParentID   string `json:"parent_id"`
			ChildRunID string `json:"child_run_id"`
		}
		switch e.Type {
		case code.EventRunCreated:
			if json.Unmarshal(e.Data, &d) == nil && d.ParentID != "" && !announced[e.RunID] {
				waiting[e.RunID] = []held{}
			}
		case code.EventChildStarted:
			if ok {
				progressLine(p.w, e, depth)
			}
			if json.Unmarshal(e.Data, &d) == nil && d.ChildRunID != "" {
				announced[d.ChildRunID] = true
				flush(d.ChildRunID)
			}
			return
		}
		if !ok {
			return
		}
		if h, hold := waiting[e.RunID]; hold {
			if len(h) < maxHeldLines {
				waiting[e.RunID] = append(h, held{e, depth})
				return
			}
			flush(e.RunID) // the parent's line is late: no more holding
			announced[e.RunID] = true
		}
		progressLine(p.w, e, depth)
	}
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return
			}
			line(e)
		case w := <-writes:
			open := true
			for drained := false; open && !drained; {
				select {
				case e, ok := <-events:
					if open = ok; ok {
						line(e)
					}
				default:
					drained = true
				}
			}
			_, _ = p.w.Write(w.b)
			close(w.done)
			if !open {
				return
			}
		}
	}
}

// maxHeldLines bounds the lines of a sub-workflow held until its parent's
// line: past it they print as they come.
const maxHeldLines = 1000

// progressLine prints one event of a run as it happens; a sub-workflow's
// lines are indented under the step that runs it.
func progressLine(w io.Writer, e service.Event, depth int) {
	var d struct {
		Error       string `json:"error"`
		Attempt     int    `json:"attempt"`
		MaxAttempts int    `json:"max_attempts"`
		DelayMS     int64  `json:"delay_ms"`
		Workflow    string `json:"workflow"`
	}
	_ = json.Unmarshal(e.Data, &d)
	in := "  " + strings.Repeat("  ", depth)
	switch e.Type {
	case code.EventStepSucceeded, code.EventHookSucceeded:
		fmt.Fprintf(w, "%s✓ %s\n", in, e.StepID)
	case code.EventStepFailed, code.EventHookFailed:
		fmt.Fprintf(w, "%s✗ %s: %s\n", in, e.StepID, d.Error)
	case code.EventStepSkipped:
		fmt.Fprintf(w, "%s- %s (skipped)\n", in, e.StepID)
	case code.EventStepRetrying:
		of := ""
		if d.MaxAttempts > 0 {
			of = fmt.Sprintf("/%d", d.MaxAttempts)
		}
		fmt.Fprintf(w, "%s↻ %s: %s — retry %d%s in %s\n", in, e.StepID, d.Error, d.Attempt+1, of, shortDuration(time.Duration(d.DelayMS)*time.Millisecond))
	case code.EventChildStarted:
		fmt.Fprintf(w, "%s▸ %s: sub-workflow %s\n", in, e.StepID, d.Workflow)
	case code.EventRunCompensating:
		fmt.Fprintf(w, "%s↩ compensating\n", in)
	case code.EventCompensated:
		fmt.Fprintf(w, "%s↩ %s compensated\n", in, e.StepID)
	case code.EventCompensationFail:
		fmt.Fprintf(w, "%s✗ %s not compensated: %s\n", in, e.StepID, d.Error)
	}
}

// shortDuration writes d as a person reads it: 4s, 1.5s, 250ms, 2m, 1h30m.
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(100 * time.Millisecond)
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

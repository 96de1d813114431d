package engine

import (
	"context"
	"encoding/json"
	"errors"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/store"
)

// EventPauseRefused records that an answer to an open pause was refused
// (a surface asked for it: an MCP task's input request is offered again
// under a new key). Its data is a Refusal.
const EventPauseRefused = code.EventPauseRefused

// Refusal counts the refused answers of one open pause, as recorded.
type Refusal struct {
	Seq     int64  `json:"seq"`
	Count   int    `json:"count"`
	Problem string `json:"problem,omitempty"`
}

// Refusal returns the refusals of the run's open pause seq: the latest
// refusal event of that pause, searched from the run's last event back to
// the event that opened the pause (a few events, unless other branches of
// the run went on meanwhile).
func (e *Engine) Refusal(ctx context.Context, runID string, seq int64) (Refusal, error) {
	run, err := e.store.GetRun(ctx, runID)
	if err != nil {
		return Refusal{}, notFound(runID, err)
	}
	return e.lastRefusal(ctx, run, seq)
}

// refusalPage is how many events lastRefusal reads at a time.
const refusalPage = 32

func (e *Engine) lastRefusal(ctx context.Context, run store.Run, seq int64) (Refusal, error) {
	none := Refusal{Seq: seq}
	if run.Status != store.StatusWaiting {
		return none, nil
	}
	for hi := run.EventSeq; hi > 0; hi -= refusalPage {
		evs, err := e.store.Events(ctx, run.ID, max(hi-refusalPage, 0), int(min(hi, refusalPage)))
		if err != nil {
			return none, err
		}
		for i := len(evs) - 1; i >= 0; i-- {
			var data struct {
				Seq int64 `json:"seq"`
			}
			switch evs[i].Type {
			case EventPauseRefused:
				var r Refusal
				if json.Unmarshal(evs[i].Data, &r) == nil && r.Seq == seq {
					return r, nil
				}
			case EventRunPaused:
				if json.Unmarshal(evs[i].Data, &data) == nil && data.Seq == seq {
					return none, nil // the pause's opening: no refusal after it
				}
			}
		}
	}
	return none, nil
}

// RecordRefusal records one more refused answer of the open pause seq of
// the run, with what was wrong with it (problem is stored: it must hold
// no secret). A pause no longer open records nothing (ok false).
func (e *Engine) RecordRefusal(ctx context.Context, runID string, seq int64, problem string) (r Refusal, ok bool, err error) {
	err = retryConflicts(ctx, runID, "record a refused answer", func() error {
		run, err := e.store.GetRun(ctx, runID)
		if err != nil {
			return notFound(runID, err)
		}
		if run.Status != store.StatusWaiting {
			return nil
		}
		p, err := e.store.GetPause(ctx, runID, seq)
		if errors.Is(err, store.ErrNotFound) || (err == nil && p.Status != store.PauseOpen) {
			return nil
		}
		if err != nil {
			return err
		}
		prev, err := e.lastRefusal(ctx, run, seq)
		if err != nil {
			return err
		}
		ref := Refusal{Seq: seq, Count: prev.Count + 1, Problem: problem}
		data, _ := json.Marshal(ref)
		ev := store.Event{Type: EventPauseRefused, StepID: p.StepKey, At: e.now().UTC(), Data: data}
		res, err := e.store.Commit(ctx, store.Commit{RunID: runID, Rev: run.Rev, EventSeq: run.EventSeq, Events: []store.Event{ev}})
		if err != nil {
			return err
		}
		e.publish(runID, run.Status, []store.Event{ev}, res.EventSeqs)
		r, ok = ref, true
		return nil
	})
	return r, ok, err
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"stepwise.dev/stepwise/internal/store"
)

// Going back: rewinding a run to a question, or restarting it, is a fork
// that keeps the answers. The new run carries the old run's answers by
// step key (State.Earlier) and offers each as its question's default
// (Question.Previous) until it answers the question itself; the old run
// is canceled if it was still going, and both are linked.

// EventRunRewound is recorded on a run that was rewound or restarted, with
// the new run's id.
const EventRunRewound = "run.rewound"

// RewindRun starts a new run of the same version and inputs from toStep, a
// top-level question or agent step of the run, with the results of the
// steps before it. Every question from toStep on offers the run's answer
// as its default (secret ones excepted). The run is canceled if it was not
// finished. It returns the new run's id.
func (e *Engine) RewindRun(ctx context.Context, runID, toStep string) (string, error) {
	return e.fork(ctx, runID, toStep, nil, &rewinding{restart: false})
}

// RestartRun starts the run over with the same inputs, offering every
// earlier answer (secret ones excepted) as its question's default. The run
// is canceled if it was not finished. It returns the new run's id.
func (e *Engine) RestartRun(ctx context.Context, runID string) (string, error) {
	return e.fork(ctx, runID, "", nil, &rewinding{restart: true})
}

// rewinding makes a fork a rewind (or a restart); its methods do nothing
// on nil (a plain fork).
type rewinding struct {
	restart bool
}

func (rw *rewinding) as() string {
	if rw.restart {
		return "restart"
	}
	return "rewind"
}

// check settles the step to go back to: the first for a restart, else a
// top-level question or agent step.
func (rw *rewinding) check(rs *runState, step *string, from *int) error {
	if rw == nil {
		return nil
	}
	if rw.restart {
		*step, *from = rs.wf.Steps[0].ID, 0
		return nil
	}
	var can []string
	for _, s := range rs.wf.Steps {
		if s.Ask != nil || s.Agent != nil {
			can = append(can, s.ID)
		}
	}
	if *from >= 0 && (rs.wf.Steps[*from].Ask != nil || rs.wf.Steps[*from].Agent != nil) {
		return nil
	}
	what := fmt.Sprintf("workflow %s has no top-level step %q", rs.wf.Name, *step)
	if *from >= 0 {
		what = fmt.Sprintf("step %q of workflow %s is not a question or agent step", *step, rs.wf.Name)
	}
	list := "none"
	if len(can) > 0 {
		list = strings.Join(can, ", ")
	}
	return &Error{Code: CodeStepNotFound, Category: CategoryNotFound, RunID: rs.run.ID, StepID: *step, Argument: "to_step",
		Message:    what + "; a run can be rewound to its top-level questions and agent steps: " + list,
		Suggestion: "rewind to one of the steps the message lists, or restart the run"}
}

// Bounds of the answers a run carries (they are part of its state, written
// with every commit): a larger answer is not offered, and once the total
// is reached the later answers are not either.
const (
	maxEarlierAnswer = 64 << 10
	maxEarlierTotal  = 256 << 10
)

// carry puts the old run's answers in the new run's state: the latest of
// each step key, not those of the steps before the point gone back to (the
// new run has their results), never a secret one. Answers the old run
// carried from a run before it come too, unless it answered them itself.
func (rw *rewinding) carry(rs *runState, rows []store.Step, before map[string]bool, st *State) {
	if rw == nil {
		return
	}
	st.RewoundFrom = rs.run.ID
	raw := map[string]json.RawMessage{}
	var order []string
	keep := func(key string, v json.RawMessage) {
		if _, seen := raw[key]; !seen {
			order = append(order, key)
		}
		raw[key] = v
	}
	carried := slices.Sorted(maps.Keys(rs.state.Earlier))
	for _, k := range carried {
		if b, err := json.Marshal(rs.state.Earlier[k]); err == nil {
			keep(k, b)
		}
	}
	visit := map[string]int{}
	for _, r := range rows {
		if len(r.Answer) == 0 || strings.Contains(r.StepID, ":") || rs.secrets().Answer(r.StepID) || storedSecret(r.Answer) {
			continue
		}
		if v, seen := visit[r.Key]; seen && v > r.Visit {
			continue
		}
		keep(r.Key, r.Answer)
		visit[r.Key] = r.Visit
	}
	earlier, total := map[string]any{}, 0
	for _, k := range order {
		b := raw[k]
		if before[k] || len(b) > maxEarlierAnswer || total+len(b) > maxEarlierTotal {
			continue
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			continue
		}
		earlier[k], total = v, total+len(b)
	}
	if len(earlier) > 0 {
		st.Earlier = earlier
	}
}

// data marks the new run's run.forked event as a rewind or restart.
func (rw *rewinding) data(d map[string]any) map[string]any {
	if rw != nil {
		d["as"] = rw.as()
	}
	return d
}

// leave links the old run to the new one (a run.rewound event) and cancels
// it if it was not finished. The new run exists by then: a failure here is
// logged, not returned (the old run may then still be going).
func (rw *rewinding) leave(ctx context.Context, e *Engine, oldID, newID, step string) {
	if rw == nil {
		return
	}
	var finished bool
	err := retryConflicts(ctx, oldID, "rewind", func() error {
		run, err := e.store.GetRun(ctx, oldID)
		if err != nil {
			return err
		}
		finished = store.Finished(run.Status)
		now := e.now().UTC()
		data, _ := json.Marshal(map[string]any{"run": newID, "step": step, "as": rw.as()})
		c := store.Commit{RunID: oldID, Rev: run.Rev, Events: []store.Event{{Type: EventRunRewound, StepID: step, Data: data, At: now}}}
		res, err := e.store.Commit(ctx, c)
		if err != nil {
			return err
		}
		e.publish(oldID, run.Status, c.Events, res.EventSeqs)
		return nil
	})
	if err == nil && !finished {
		reason := "rewound to " + step + " as " + newID
		if rw.restart {
			reason = "restarted as " + newID
		}
		if err = e.Cancel(ctx, oldID, reason, false); CodeOf(err) == CodeRunFinished {
			err = nil
		}
	}
	if err != nil {
		e.log.Warn("going back: the old run was not canceled or linked", "run_id", oldID, "new_run_id", newID, "err", err)
	}
}

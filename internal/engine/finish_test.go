package engine

import (
	"context"
	"strings"
	"sync"
	"testing"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/store"
)

// journal records the order in which actions ran.
type journal struct {
	mu  sync.Mutex
	log []string
}

func (j *journal) Name() string        { return "record" }
func (j *journal) Description() string { return "records its `name` input; fails when `fail` is set" }
func (j *journal) Safety() string      { return action.Mutating }
func (j *journal) Run(_ context.Context, c action.Call) (any, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	name := c.Input["name"].(string)
	if c.Input["fail"] == true {
		j.log = append(j.log, name+"!")
		return nil, &action.Error{Err: errFail(name)}
	}
	j.log = append(j.log, name)
	return map[string]any{"name": name}, nil
}

type errFail string

func (e errFail) Error() string { return string(e) + " failed" }

func (j *journal) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return strings.Join(j.log, " ")
}

const saga = `version: 1
name: saga
inputs:
  fail_at: {type: string, default: none}
steps:
  - id: a
    uses: record
    with: {name: a}
    compensate: {uses: record, with: {name: "undo-${{ steps.a.output.name }}"}}
  - id: b
    uses: record
    with: {name: b}
  - id: c
    uses: record
    with: {name: c, fail: "${{ inputs.fail_at == 'c' }}"}
    compensate: {uses: record, with: {name: undo-c}}
  - id: d
    uses: record
    with: {name: d, fail: "${{ inputs.fail_at == 'd' }}"}
    compensate: {uses: record, with: {name: undo-d}}
on_success:
  - uses: record
    with: {name: s1}
    compensate: {uses: record, with: {name: undo-s1}}
  - uses: record
    with: {name: s2, fail: "${{ inputs.fail_at == 's2' }}"}
on_failure:
  - uses: record
    with: {name: f1}
outputs:
  ok: true
`

func TestCompensationAndHooks(t *testing.T) {
	cases := []struct {
		failAt, status, journal string
	}{
		{"none", store.StatusSucceeded, "a b c d s1 s2"},
		{"d", store.StatusFailed, "a b c d! undo-c undo-a f1"},
		{"c", store.StatusFailed, "a b c! undo-a f1"},
		{"s2", store.StatusFailed, "a b c d s1 s2! undo-s1 undo-d undo-c undo-a f1"},
	}
	for _, tc := range cases {
		t.Run(tc.failAt, func(t *testing.T) {
			h := newHarness(t)
			j := &journal{}
			withAction(h, j)
			id, err := h.start(saga, map[string]any{"fail_at": tc.failAt})
			if err != nil {
				t.Fatal(err)
			}
			r := h.wait(id)
			if r.Status != tc.status {
				t.Fatalf("status %s (%s), want %s; journal %s", r.Status, r.Error, tc.status, j)
			}
			if got := j.String(); got != tc.journal {
				t.Fatalf("journal %q, want %q", got, tc.journal)
			}
		})
	}
}

func TestCompensationResumesAfterRestart(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	// The second compensation blocks until the engine shuts down, so the
	// restart happens in the middle of compensating.
	doc := `version: 1
name: slow-undo
steps:
  - id: a
    uses: record
    with: {name: a}
    compensate: {uses: record, with: {name: undo-a}}
  - id: b
    uses: record
    with: {name: b}
    compensate: {uses: noop, with: {delay: 1h}}
  - id: c
    uses: record
    with: {name: c, fail: true}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		evs, _ := h.store.Events(context.Background(), id, 0, 0)
		for _, e := range evs {
			if e.Type == EventRunCompensating {
				return true
			}
		}
		return false
	})
	h.eng.grace = 1 // interrupt the blocking compensation at once
	h.close()
	h.open()
	withAction(h, j)
	// The blocking compensation runs again after the restart; make it fast.
	h.eng.actions.Register(quick{})
	if _, err := h.eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusFailed || !strings.Contains(string(r.Error), "c failed") {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	if got := j.String(); got != "a b c! undo-a" {
		t.Fatalf("journal %q", got)
	}
	steps, _ := h.store.Steps(context.Background(), id)
	var comps []string
	for _, st := range steps {
		if strings.HasPrefix(st.StepID, "compensate:") {
			comps = append(comps, st.StepID+"="+st.Status)
		}
	}
	if strings.Join(comps, ",") != "compensate:b=succeeded,compensate:a=succeeded" {
		t.Fatalf("compensations %v", comps)
	}
}

// quick replaces noop: no delay.
type quick struct{}

func (quick) Name() string        { return "noop" }
func (quick) Description() string { return "" }
func (quick) Safety() string      { return action.ReadOnly }
func (quick) Run(context.Context, action.Call) (any, error) {
	return map[string]any{}, nil
}

func TestCancelWithCompensation(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	doc := `version: 1
name: cancel-me
steps:
  - id: a
    uses: record
    with: {name: a}
    compensate: {uses: record, with: {name: undo-a}}
  - id: wait
    ask: {prompt: "Go on?", type: boolean}
on_failure:
  - uses: record
    with: {name: f1}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := h.wait(id); r.Status != store.StatusWaiting {
		t.Fatalf("status %s", r.Status)
	}
	if err := h.eng.Cancel(context.Background(), id, "changed my mind", true); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusCanceled || j.String() != "a undo-a f1" {
		t.Fatalf("status %s, journal %q", r.Status, j)
	}
	if ps, _ := h.store.OpenPauses(context.Background(), id); len(ps) != 0 {
		t.Fatalf("open pauses after cancel: %+v", ps)
	}
}

// TestRunErrorInsideOnFailure: on_failure hooks see the failure as
// run.error, and a repeated step's attempts count its iterations.
func TestRunErrorInsideOnFailure(t *testing.T) {
	h := newHarness(t)
	j := &journal{}
	withAction(h, j)
	doc := `version: 1
name: report
steps:
  - id: poll
    uses: noop
    repeat: {until: "steps.poll.attempts >= 3", every: 10ms}
  - id: broken
    uses: record
    with: {name: "x-${{ steps.poll.attempts }}", fail: true}
on_failure:
  - uses: record
    with: {name: "report: ${{ run.error }}"}
`
	id, err := h.start(doc, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusFailed {
		t.Fatalf("status %s", r.Status)
	}
	if got := j.String(); got != "x-3! report: x-3 failed" {
		t.Fatalf("journal %q", got)
	}
}

package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// State is the engine's position in a run, stored with the run (and, in
// stateless mode, sealed into the blob a client keeps). It is small: step
// results live in their own records.
type State struct {
	// Cursor is the index of the next top-level step.
	Cursor int `json:"cursor"`
	// PauseSeq is the sequence number of the last pause opened.
	PauseSeq int64 `json:"pause_seq,omitempty"`
	// StartedAt is when the run started.
	StartedAt time.Time `json:"started_at"`
	// Wait is set while the step at the cursor waits for a durable
	// wake-up: a sleep, a retry's backoff or a repeat's interval.
	Wait *Wait `json:"wait,omitempty"`
	// Phase is "" while steps run, then on_success, compensate or
	// on_failure while the run finishes.
	Phase string `json:"phase,omitempty"`
	// Final is how the run ends once the finishing phases are done.
	Final *Final `json:"final,omitempty"`
	// Depth is how deep this run is nested in sub-workflows.
	Depth int `json:"depth,omitempty"`
	// Deadline is when the run must have finished (the workflow's
	// timeout), zero for none.
	Deadline time.Time `json:"deadline,omitempty"`
	// Dir is the directory of the workflow file the run was started from:
	// its sub-workflows may live there. Stored so that any process that
	// resumes the run finds them.
	Dir string `json:"dir,omitempty"`
	// Recovered counts how often a process ended while the step at the
	// cursor ran (recover.go); cleared when the step is done.
	Recovered *Recovered `json:"recovered,omitempty"`
	// Detached: the run was recorded to be driven elsewhere, and no
	// driver picked it up yet; its first recovery is none (recover.go).
	Detached bool `json:"detached,omitempty"`
	// Sealed names the inputs, not marked secret by the workflow, that the
	// run was given values computed from secrets (by the step of a parent
	// run): they are stored sealed and are secret in this run.
	Sealed []string `json:"sealed,omitempty"`
	// Earlier holds, by step key, the answers of the run this one was
	// rewound or restarted from (none secret): offered as defaults until
	// this run answers the question itself (rewind.go).
	Earlier map[string]any `json:"earlier,omitempty"`
	// RewoundFrom is that run.
	RewoundFrom string `json:"rewound_from,omitempty"`
}

// Final is the outcome a finishing run will record.
type Final struct {
	Status string          `json:"status"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// Wait is a step parked until a time.
type Wait struct {
	StepKey string `json:"step_key"`
	Visit   int    `json:"visit"`
	// Reason is sleep | retry | repeat | child (a sub-workflow) | children
	// (a group's sub-workflows) | group (a group's pauses) | answer (a
	// question or agent step with a timeout).
	Reason string    `json:"reason"`
	Until  time.Time `json:"until"`
	// Attempt is the attempt to run when the wait ends (retries);
	// Iteration counts the runs of a repeat.
	Attempt   int `json:"attempt,omitempty"`
	Iteration int `json:"iteration,omitempty"`
	// Started is when the step's first attempt started.
	Started time.Time `json:"started"`
	// Child is the sub-workflow run a workflow step waits for.
	Child string `json:"child,omitempty"`
	// TimeoutAt is when the step's timeout ends (the current attempt's, for
	// a sub-workflow), zero for none: a run that waits is driven again then,
	// and the step fails.
	TimeoutAt time.Time `json:"timeout_at,omitempty"`
}

// result is what later steps see of a step: steps.<id>.{…}.
type result struct {
	// clearTimer is the nested wake-up to delete when recording (sleeps
	// inside groups).
	clearTimer string

	Status   string
	Output   any
	Answer   any
	Error    string
	Attempts int
	Visit    int
}

func (r *result) env() map[string]any {
	return map[string]any{"status": r.Status, "output": r.Output, "answer": r.Answer, "error": nilIfEmpty(r.Error), "attempts": r.Attempts}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// runState is a run loaded into memory: its row, its definition, its clear
// inputs and the results of its steps.
type runState struct {
	run    store.Run
	wf     *workflow.Workflow
	state  State
	inputs map[string]any // clear values
	mask   *secret.Masker
	// results by step id (latest visit).
	results map[string]*result
	// steps is the expression context's steps map, kept in sync.
	steps map[string]any
	// lastAnswerID is the answer id assigned by the last commit.
	lastAnswerID int64
	// envNames are the environment variables the workflow declares.
	envNames []string
	// done lists the recorded executions in recording order (for
	// compensation in reverse).
	done []doneStep
	// byKey holds recorded nested instances (parallel branches, foreach
	// items) by key and visit, so a re-entered group skips them.
	byKey map[string]*result
	// mu serializes what concurrent branches share: commits (the run's
	// revision), results and the done list.
	mu sync.Mutex
	// open holds the open pauses of nested steps by key and visit.
	open map[string]bool
	// failed counts the failed attempts of nested steps by key and visit
	// (their retries wait on durable wake-ups).
	failed map[string]int
	// scope is what actions keep open while this run's driver lives.
	scope *action.Scope
	// envCache keeps the expression context between steps (see env).
	envCache envCache
	// ahead is the pipeline of the driver that holds the run (nil outside
	// a driver: every commit is waited for).
	ahead *ahead
	// recovering: the run was loaded as a previous process left it, in
	// the middle of its cursor step (or of a hook or compensation); the
	// driver's first advance counts the recovery before the step runs
	// again (recover.go).
	recovering bool
	// recoveringOp: the same for the finishing phases, for the hook or
	// compensation that runs first.
	recoveringOp bool
	// leased: a driver holds this state; its commits are fenced by the
	// engine's lease on the run (lease.go).
	leased bool
	// sec is where secrets flow in this run (set when it is loaded).
	sec *workflow.Secrets
}

// secrets is where secrets flow in the run: the workflow's rules, with the
// inputs the run was given sealed (State.Sealed).
func (rs *runState) secrets() *workflow.Secrets {
	if rs.sec != nil {
		return rs.sec
	}
	return rs.wf.SecretsWith(rs.state.Sealed)
}

func instanceKey(key string, visit int) string { return key + "#" + strconv.Itoa(visit) }

// doneStep is a recorded execution.
type doneStep struct {
	key, stepID, status string
	visit               int
}

// load reads a run with its definition and step results.
func (e *Engine) load(ctx context.Context, id string) (*runState, error) {
	warm, run, err := e.takeWarm(ctx, id)
	if err != nil {
		return nil, err
	}
	if warm != nil && !verifyWarm {
		return warm, nil
	}
	rs, err := e.loadRun(ctx, run)
	if err == nil && warm != nil {
		// The fresh load read the steps after the run row: a commit in
		// between (a concurrent Continue) makes it a mix of two revisions,
		// nothing to compare with. Every commit moves the revision, so an
		// unchanged one means the fresh load is of one revision.
		if now, err := e.store.GetRun(ctx, id); err == nil && now.Rev == run.Rev {
			checkWarm(warm, rs)
		}
	}
	return rs, err
}

// verifyWarm makes load read every run afresh and compare it with the
// kept state it would have used (tests turn it on).
var verifyWarm = false

// checkWarm is set by tests to compare a kept state with a fresh load.
var checkWarm = func(kept, fresh *runState) {}

// loadRun reads the rest of a run whose row was just read.
func (e *Engine) loadRun(ctx context.Context, run store.Run) (*runState, error) {
	id := run.ID
	wf, err := e.definition(ctx, run.Version)
	if err != nil {
		return nil, err
	}
	rs := &runState{run: run, wf: wf, mask: secret.NewMasker(), results: map[string]*result{}, steps: map[string]any{}}
	if len(run.State) > 0 {
		if err := json.Unmarshal(run.State, &rs.state); err != nil {
			return nil, fmt.Errorf("load run %s: state: %w", id, err)
		}
	}
	rs.sec = wf.SecretsWith(rs.state.Sealed)
	if rs.inputs, err = e.openInputs(wf, run.Inputs, rs.mask, rs.sec); err != nil {
		return nil, fmt.Errorf("load run %s: %w", id, err)
	}
	for _, s := range workflow.Flatten(wf.Steps) {
		rs.steps[s.ID] = (&result{Status: "pending"}).env()
	}
	steps, err := e.store.Steps(ctx, id)
	if err != nil {
		return nil, err
	}
	rs.byKey = map[string]*result{}
	rs.open = map[string]bool{}
	rs.failed = map[string]int{}
	if hasGroups(wf) {
		// Only steps inside groups keep progress in attempts and pauses
		// (top-level ones keep it in the state): read them only then, not on
		// every load (every Continue loads the run).
		e.loadNested(ctx, rs)
	}
	for _, st := range steps {
		rs.done = append(rs.done, doneStep{key: st.Key, stepID: st.StepID, status: st.Status, visit: st.Visit})
		if strings.Contains(st.StepID, ":") {
			continue // a compensation or hook: not a step's result
		}
		r := &result{Status: st.Status, Error: st.Error, Attempts: st.Attempts, Visit: st.Visit}
		if len(st.Output) > 0 {
			if r.Output, err = e.openOutput(rs, st.StepID, st.Output); err != nil {
				return nil, fmt.Errorf("load run %s: output of %s: %w", id, st.Key, err)
			}
		}
		if len(st.Answer) > 0 {
			secretStep := rs.sec.Answer(st.StepID)
			if secretStep && !storedSecret(st.Answer) {
				// Recorded in clear before its question's answer was
				// secret (one computed from a secret): read as it is.
				if s := wf.Step(st.StepID); s != nil && s.Ask != nil && !s.Ask.HasSecret() {
					secretStep = false
				}
			}
			v, err := e.openValue(st.Answer, secretStep, rs.mask)
			if err != nil {
				return nil, fmt.Errorf("load run %s: answer of %s: %w", id, st.Key, err)
			}
			r.Answer = v
		}
		if st.Key != st.StepID {
			rs.byKey[instanceKey(st.Key, st.Visit)] = r
			if strings.ContainsAny(st.Key, "[.") {
				continue // inside a foreach: visible only within its item
			}
		}
		if prev, ok := rs.results[st.StepID]; !ok || prev.Visit <= r.Visit {
			rs.results[st.StepID] = r
			rs.steps[st.StepID] = r.env()
		}
	}
	return rs, nil
}

// definition returns the parsed workflow of a version, parsing it once
// while it stays among the most recently used (lru.go).
func (e *Engine) definition(ctx context.Context, version string) (*workflow.Workflow, error) {
	if wf, ok := e.defs.Get(version); ok {
		return wf, nil
	}
	v, err := e.store.GetVersion(ctx, version)
	if err != nil {
		return nil, err
	}
	wf, err := loadRecorded(v.Definition)
	if err != nil {
		return nil, fmt.Errorf("definition %s: %w", version, err)
	}
	e.defs.Add(version, wf)
	return wf, nil
}

// loadRecorded parses a recorded definition. One recorded before the
// validator refused a modifier that the engine does not honour (such as a
// timeout on a question inside a group) still loads, so that its runs
// finish as they started; every other violation is an error.
func loadRecorded(def []byte) (*workflow.Workflow, error) {
	res := workflow.Check(def, workflow.Options{})
	for _, v := range res.Violations {
		if v.Rule != workflow.RuleStepKind || res.Workflow == nil {
			return nil, &workflow.ValidationError{Violations: res.Violations}
		}
	}
	return res.Workflow, nil
}

// knowDefinition makes wf the parsed workflow of version unless one is
// known already: a run started from a workflow its caller has just parsed
// need not parse the stored definition again (for a large workflow that
// is most of a short run's cost). wf is what workflow.Load makes of the
// version's definition — Check of the same value — apart from the order
// of its inputs, which a stored definition has sorted and which matters
// only to Start (TestSeededDefinitionIsTheStoredOne).
func (e *Engine) knowDefinition(version string, wf *workflow.Workflow) {
	e.defs.ContainsOrAdd(version, wf)
}

// env is the expression context. The "run" map and, for a workflow that
// declares no environment variables, the whole context are kept between
// calls while what they show is unchanged: every step of a run builds its
// context, and most steps change none of it (the steps map is shared and
// kept in sync by record). Expressions and groups never write into a
// context (groups clone it), so handing out the same map is safe.
func (rs *runState) env(lookup func(string) (string, bool)) map[string]any {
	if rs.envNames == nil {
		rs.envNames = declaredEnv(rs.wf)
	}
	c := &rs.envCache
	errSrc := rs.errorSource()
	if c.run == nil || c.status != rs.run.Status || !c.started.Equal(rs.state.StartedAt) || !bytes.Equal(c.errSrc, errSrc) {
		c.status, c.started, c.errSrc = rs.run.Status, rs.state.StartedAt, errSrc
		c.run = map[string]any{
			"id": rs.run.ID, "workflow": rs.run.Workflow, "version": rs.run.Version,
			"started_at": rs.state.StartedAt.Format(time.RFC3339Nano), "status": rs.run.Status,
			"error": errorMessage(errSrc),
		}
		c.full = nil
	}
	if len(rs.envNames) > 0 {
		// Variables are looked up afresh every time: the process's
		// environment may change between steps.
		return map[string]any{"inputs": rs.inputs, "steps": rs.steps, "env": envValues(rs.envNames, lookup), "run": c.run}
	}
	if c.full == nil {
		c.full = map[string]any{"inputs": rs.inputs, "steps": rs.steps, "env": map[string]any{}, "run": c.run}
	}
	return c.full
}

// envCache is what env keeps between calls, with what it was built from.
type envCache struct {
	run, full map[string]any
	status    string
	started   time.Time
	errSrc    []byte
}

// errorSource is the raw error run.error is read from.
func (rs *runState) errorSource() []byte {
	if rs.state.Final != nil && len(rs.state.Final.Error) > 0 {
		return rs.state.Final.Error
	}
	return rs.run.Error
}

func errorMessage(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	return nil
}

func (rs *runState) record(stepID string, r *result) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.results[stepID] = r
	rs.steps[stepID] = r.env()
}

// envValues is the env of the expression context: every declared variable,
// null when it is not set.
func envValues(names []string, lookup func(string) (string, bool)) map[string]any {
	vars := make(map[string]any, len(names))
	for _, name := range names {
		if v, ok := lookup(name); ok {
			vars[name] = v
		} else {
			vars[name] = nil
		}
	}
	return vars
}

func declaredEnv(wf *workflow.Workflow) []string {
	seen := map[string]bool{}
	names := []string{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, n := range wf.Env {
		add(n)
	}
	for _, in := range wf.Inputs {
		add(in.Env)
	}
	for _, s := range workflow.Flatten(wf.Steps) {
		if s.Ask != nil {
			add(s.Ask.Env)
			for _, f := range s.Ask.Fields {
				add(f.Env)
			}
		}
	}
	return names
}

// loadNested reads what steps inside groups need: failed attempts (their
// retries) and open pauses.
func (e *Engine) loadNested(ctx context.Context, rs *runState) {
	if atts, err := e.store.Attempts(ctx, rs.run.ID); err == nil {
		for _, a := range atts {
			if a.Status == "failed" {
				k := instanceKey(a.Key, a.Visit)
				rs.failed[k] = max(rs.failed[k], a.Attempt)
			}
		}
	}
	if ps, err := e.store.OpenPauses(ctx, rs.run.ID); err == nil {
		for _, p := range ps {
			rs.open[instanceKey(p.StepKey, p.Visit)] = true
		}
	}
}

// hasGroups reports whether a workflow has parallel or foreach steps.
func hasGroups(wf *workflow.Workflow) bool {
	for _, s := range wf.Steps {
		if s.Parallel != nil || s.Steps != nil {
			return true
		}
	}
	return false
}

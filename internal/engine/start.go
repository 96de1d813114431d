package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"stepwise.dev/stepwise/code"

	"github.com/google/uuid"

	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// StartRequest starts a run of a validated workflow.
type StartRequest struct {
	Workflow *workflow.Workflow
	// Version is the workflow's version and Definition its canonical JSON
	// (the run keeps this exact definition).
	Version    string
	Definition []byte
	Inputs     map[string]any
	ParentID   string
	// Detached records the run without executing it here: another process
	// (or a later Resume) drives it.
	Detached bool
	// RunID, when set, is the new run's id (sub-workflow runs get an id
	// derived from their parent step, so a retried start finds them).
	RunID string
	// Depth is the nesting level of a sub-workflow run (0 for top level).
	Depth int
	// Dir is the directory of the workflow's file, if it came from one.
	Dir string
	// Sealed names inputs the caller computed from secrets (a parent run's
	// step): stored sealed and secret in the run, as if marked secret.
	Sealed []string
}

// Start checks the inputs, records the run and starts executing it in the
// background. Invalid inputs give an *Error with every violation and record
// nothing.
func (e *Engine) Start(ctx context.Context, req StartRequest) (string, error) {
	if e.isStopping() {
		e := newError(CodeShuttingDown, CategoryInternal, "the engine is shutting down")
		e.Retryable, e.Workflow, e.Suggestion = true, req.Workflow.Name, "call again in a moment, when the server runs again"
		return "", e
	}
	wf := req.Workflow
	if err := CheckSupported(wf); err != nil {
		return "", err
	}
	inputs, fromEnv, violations := e.resolveInputs(wf, req.Inputs)
	mask := e.InputSecrets(wf, req.Inputs)
	var sealed []string
	for _, name := range req.Sealed {
		if in := wf.Inputs[name]; in != nil && !in.Secret && !slices.Contains(sealed, name) {
			sealed = append(sealed, name)
			learn(mask, req.Inputs[name])
		}
	}
	slices.Sort(sealed)
	if len(violations) > 0 {
		return "", &Error{Code: CodeInputInvalid, Category: CategoryValidation, Workflow: wf.Name, Message: "invalid inputs for workflow " + wf.Name,
			Violations: MaskViolations(mask, violations), Suggestion: "fix the listed inputs and start the run again"}
	}
	storedInputs, err := e.sealInputs(wf, inputs, fromEnv, sealed)
	if err != nil {
		return "", err
	}
	limited := wf.Concurrency != nil && req.ParentID == ""
	var key string
	if limited {
		if key, err = concurrencyKey(wf, inputs); err != nil {
			return "", err
		}
	}
	if err := e.store.PutVersion(ctx, store.Version{Version: req.Version, Name: wf.Name, Definition: req.Definition}); err != nil {
		return "", err
	}
	e.knowDefinition(req.Version, wf)
	runID := req.RunID
	if runID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("new run id: %w", err)
		}
		runID = id.String()
	}
	now := e.now().UTC()
	st := State{StartedAt: now, Depth: req.Depth, Dir: req.Dir, Detached: req.Detached, Sealed: sealed}
	if wf.Timeout != "" {
		if d, err := workflow.ParseDuration(wf.Timeout); err == nil {
			st.Deadline = now.Add(d)
		}
	}
	state, _ := json.Marshal(st)
	created, _ := maskedJSON(mask, map[string]any{"workflow": wf.Name, "version": req.Version, "inputs": inputs, "parent_id": nilIfEmpty(req.ParentID)})
	run := store.Run{ID: runID, Workflow: wf.Name, Version: req.Version, Status: store.StatusRunning,
		Inputs: storedInputs, State: state, ParentID: req.ParentID, CreatedAt: now}
	events := []store.Event{{Type: EventRunCreated, Data: created, At: now}, {Type: EventRunStarted, At: now}}
	switch {
	case limited:
		// Queued; the store admits it when its queue has room (queue.go).
		run.Status, run.ConcurrencyLimit, run.ConcurrencyKey = store.StatusQueued, wf.Concurrency.Limit, key
		events[1].Type = EventRunQueued
	case !req.Detached:
		run.Lease = e.newLease(now) // runnable and leased in one write
	}
	res, err := e.store.CreateRun(ctx, run, events)
	if errors.Is(err, store.ErrNotFound) {
		// A purge dropped the version between PutVersion and CreateRun (it
		// deletes versions no run refers to): record it again, once.
		if err := e.store.PutVersion(ctx, store.Version{Version: req.Version, Name: wf.Name, Definition: req.Definition}); err != nil {
			return "", err
		}
		res, err = e.store.CreateRun(ctx, run, events)
	}
	if err != nil {
		return "", err
	}
	e.publish(run.ID, run.Status, events, res.EventSeqs)
	switch {
	case limited && !req.Detached:
		e.admit(ctx, store.AdmitRequest{Workflow: wf.Name, Key: key})
	case limited && e.claiming.Load():
		e.wantAdmission() // detached, on an engine that claims runs: it admits it
	case !req.Detached:
		e.install(res.Lease)
		e.schedule(run.ID)
	}
	return run.ID, nil
}

// Where a resolved input's value came from (InputResolution.Sources).
const (
	// SourceGiven: the caller gave the value (for a secret, possibly as a
	// $NAME reference to an environment variable).
	SourceGiven = code.SourceGiven
	// SourceEnv: the input's env variable was set.
	SourceEnv = code.SourceEnv
	// SourceDefault: the declared default.
	SourceDefault = code.SourceDefault
	// SourceNone: an optional input without a value; it is null.
	SourceNone = code.SourceNone
	// SourceMissing: a required input without a value.
	SourceMissing = code.SourceMissing
)

// InputResolution is the outcome of applying a workflow's input
// declarations to the values a caller gave.
type InputResolution struct {
	// Values holds every declared input that resolved to a valid value
	// (null for an optional input without one), in clear, secrets included.
	Values map[string]any
	// Sources says for every declared input where its value came from (one
	// of the Source constants), valid or not.
	Sources map[string]string
	// FromEnv maps the inputs taken from the environment (the input's env,
	// or a $NAME reference given for a secret) to their variable, so that
	// secret ones are stored as references.
	FromEnv map[string]string
	// Unknown lists the given names the workflow does not declare, sorted.
	Unknown []string
	// Violations are unknown names, missing required inputs and values that
	// break their declaration; a run starts only when there are none.
	Violations []workflow.Violation
}

// ResolveInputs applies wf's input declarations to the given values
// exactly as Start does — unknown names, types and constraints checked,
// environment values and defaults filled in — without recording anything.
// Start, retries, forks and plans all go through it, so a plan's verdict on
// the inputs is the one a start would give.
func (e *Engine) ResolveInputs(wf *workflow.Workflow, given map[string]any) InputResolution {
	res := InputResolution{Values: map[string]any{}, Sources: map[string]string{}, FromEnv: map[string]string{}}
	bad := func(name, rule, msg string) {
		res.Violations = append(res.Violations, workflow.Violation{Path: workflow.Pointer("inputs", name), Rule: rule, Message: msg})
	}
	for name := range given {
		if _, ok := wf.Inputs[name]; !ok {
			res.Unknown = append(res.Unknown, name)
		}
	}
	sort.Strings(res.Unknown)
	declared := wf.InputNames()
	for _, name := range res.Unknown {
		msg := fmt.Sprintf("workflow %s has no input %q", wf.Name, name)
		if len(declared) > 0 {
			msg += " (it has " + strings.Join(declared, ", ") + ")"
		}
		bad(name, "unknown-input", msg)
	}
	for _, name := range declared {
		in := wf.Inputs[name]
		v, ok := given[name]
		if ok {
			res.Sources[name] = SourceGiven
		}
		if ok && in.Secret {
			if s, isStr := v.(string); isStr && secret.IsEnvRef(s) {
				clear, err := secret.ResolveEnvRef(s, e.lookupEnv)
				if errors.Is(err, secret.ErrUnset) {
					bad(name, "input", fmt.Sprintf("input %q: %s", name, e.unsetMessage(s[1:])))
					continue
				}
				if err != nil {
					bad(name, "input", err.Error())
					continue
				}
				res.FromEnv[name] = strings.TrimPrefix(s, "$")
				v = clear
				if in.Type != "string" {
					if v, err = workflow.ParseText(clear, in.Type); err != nil {
						bad(name, "type", fmt.Sprintf("input %q from $%s: %v", name, res.FromEnv[name], err))
						continue
					}
				}
			}
		}
		if !ok && in.Env != "" {
			if s, set := e.lookupEnv(in.Env); set {
				res.Sources[name] = SourceEnv
				typed, err := workflow.ParseText(s, in.Type)
				if err != nil {
					bad(name, "type", fmt.Sprintf("input %q from environment variable %s: %v", name, in.Env, err))
					continue
				}
				v, ok = typed, true
				res.FromEnv[name] = in.Env
			}
		}
		if !ok && in.HasDefault {
			v, ok = in.Default, true
			res.Sources[name] = SourceDefault
		}
		if !ok {
			if in.IsRequired() {
				res.Sources[name] = SourceMissing
				msg := fmt.Sprintf("input %q is required", name)
				if in.Env != "" {
					msg += fmt.Sprintf(" (or set the environment variable %s)", in.Env)
				}
				bad(name, "required", msg)
			} else {
				res.Sources[name] = SourceNone
				res.Values[name] = nil
			}
			continue
		}
		if v == nil && !in.IsRequired() {
			res.Values[name] = nil
			continue
		}
		v = normalizeValue(v)
		if probs := workflow.CheckInput(in, v); len(probs) > 0 {
			for _, p := range probs {
				shown := fmt.Sprint(v)
				if in.Secret {
					shown = "***"
				}
				res.Violations = append(res.Violations, workflow.Violation{Path: workflow.Pointer("inputs", name), Rule: "input",
					Message: fmt.Sprintf("input %q %s", name, p), Actual: shown})
			}
			continue
		}
		res.Values[name] = v
	}
	return res
}

// InputSecrets returns a masker that knows every value wf's secret inputs
// may take from given: the given values (and the variables of $NAME
// references), their env variables and their defaults. A message about an
// input — a type error quotes the text it could not parse — goes through
// it before anyone sees it.
func (e *Engine) InputSecrets(wf *workflow.Workflow, given map[string]any) *secret.Masker {
	mask := secret.NewMasker()
	for name, in := range wf.Inputs {
		if !in.Secret {
			continue
		}
		v, ok := given[name]
		if ok {
			learn(mask, v)
			if s, isStr := v.(string); isStr && secret.IsEnvRef(s) {
				if clear, err := secret.ResolveEnvRef(s, e.lookupEnv); err == nil {
					mask.Add(clear)
				}
			}
		}
		if in.Env != "" {
			if s, set := e.lookupEnv(in.Env); set {
				mask.Add(s)
			}
		}
		if in.HasDefault {
			learn(mask, in.Default)
		}
	}
	return mask
}

// MaskViolations returns the violations with every secret mask knows
// masked in their messages and actual values.
func MaskViolations(mask *secret.Masker, vs []workflow.Violation) []workflow.Violation {
	out := make([]workflow.Violation, len(vs))
	for i, v := range vs {
		v.Message, v.Actual, v.Expected = mask.Mask(v.Message), mask.Mask(v.Actual), mask.Mask(v.Expected)
		out[i] = v
	}
	return out
}

// resolveInputs is ResolveInputs for the engine's own callers: the values,
// the inputs taken from the environment and the violations.
func (e *Engine) resolveInputs(wf *workflow.Workflow, given map[string]any) (map[string]any, map[string]string, []workflow.Violation) {
	res := e.ResolveInputs(wf, given)
	return res.Values, res.FromEnv, res.Violations
}

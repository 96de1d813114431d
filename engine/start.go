package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"

	"stepwise.dev/stepwise/secret"
	"stepwise.dev/stepwise/store"
	"stepwise.dev/stepwise/workflow"
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
}

// Start checks the inputs, records the run and starts executing it in the
// background. Invalid inputs give an *Error with every violation and record
// nothing.
func (e *Engine) Start(ctx context.Context, req StartRequest) (string, error) {
	if e.isStopping() {
		return "", newError(CodeShuttingDown, CategoryInternal, "the engine is shutting down")
	}
	wf := req.Workflow
	if what := unsupported(wf); len(what) > 0 {
		return "", unsupportedError(wf, what)
	}
	inputs, fromEnv, violations := e.resolveInputs(wf, req.Inputs)
	if len(violations) > 0 {
		return "", &Error{Code: CodeInputInvalid, Category: CategoryValidation, Message: "invalid inputs for workflow " + wf.Name,
			Violations: violations, Suggestion: "fix the listed inputs and start the run again"}
	}
	mask := secret.NewMasker()
	for name, in := range wf.Inputs {
		if in.Secret {
			learn(mask, inputs[name])
		}
	}
	storedInputs, err := e.sealInputs(wf, inputs, fromEnv)
	if err != nil {
		return "", err
	}
	if err := e.store.PutVersion(ctx, store.Version{Version: req.Version, Name: wf.Name, Definition: req.Definition}); err != nil {
		return "", err
	}
	runID := req.RunID
	if runID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return "", fmt.Errorf("new run id: %w", err)
		}
		runID = id.String()
	}
	now := e.now().UTC()
	st := State{StartedAt: now, Depth: req.Depth, Dir: req.Dir}
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
	res, err := e.store.CreateRun(ctx, run, events)
	if err != nil {
		return "", err
	}
	e.publish(run.ID, store.StatusRunning, events, res.EventSeqs)
	if !req.Detached {
		e.schedule(run.ID)
	}
	return run.ID, nil
}

// resolveInputs applies declarations to the given inputs: unknown names,
// types and constraints are checked, environment values and defaults
// filled in. fromEnv maps the inputs taken from the environment to their
// variable, so that secret ones are stored as references.
func (e *Engine) resolveInputs(wf *workflow.Workflow, given map[string]any) (map[string]any, map[string]string, []workflow.Violation) {
	var vs []workflow.Violation
	bad := func(name, rule, msg string) {
		vs = append(vs, workflow.Violation{Path: workflow.Pointer("inputs", name), Rule: rule, Message: msg})
	}
	var unknown []string
	for name := range given {
		if _, ok := wf.Inputs[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	declared := wf.InputNames()
	for _, name := range unknown {
		msg := fmt.Sprintf("workflow %s has no input %q", wf.Name, name)
		if len(declared) > 0 {
			msg += " (it has " + strings.Join(declared, ", ") + ")"
		}
		bad(name, "unknown-input", msg)
	}
	out := map[string]any{}
	fromEnv := map[string]string{}
	for _, name := range declared {
		in := wf.Inputs[name]
		v, ok := given[name]
		if ok && in.Secret {
			if s, isStr := v.(string); isStr && secret.IsEnvRef(s) {
				clear, err := secret.ResolveEnvRef(s, e.lookupEnv)
				if err != nil {
					bad(name, "input", err.Error())
					continue
				}
				fromEnv[name] = strings.TrimPrefix(s, "$")
				v = clear
				if in.Type != "string" {
					if v, err = workflow.ParseText(clear, in.Type); err != nil {
						bad(name, "type", fmt.Sprintf("input %q from $%s: %v", name, fromEnv[name], err))
						continue
					}
				}
			}
		}
		if !ok && in.Env != "" {
			if s, set := e.lookupEnv(in.Env); set {
				typed, err := workflow.ParseText(s, in.Type)
				if err != nil {
					bad(name, "type", fmt.Sprintf("input %q from environment variable %s: %v", name, in.Env, err))
					continue
				}
				v, ok = typed, true
				fromEnv[name] = in.Env
			}
		}
		if !ok && in.HasDefault {
			v, ok = in.Default, true
		}
		if !ok {
			if in.IsRequired() {
				msg := fmt.Sprintf("input %q is required", name)
				if in.Env != "" {
					msg += fmt.Sprintf(" (or set the environment variable %s)", in.Env)
				}
				bad(name, "required", msg)
			} else {
				out[name] = nil
			}
			continue
		}
		if v == nil && !in.IsRequired() {
			out[name] = nil
			continue
		}
		v = normalizeNumber(v)
		if probs := workflow.CheckInput(in, v); len(probs) > 0 {
			for _, p := range probs {
				shown := fmt.Sprint(v)
				if in.Secret {
					shown = "***"
				}
				vs = append(vs, workflow.Violation{Path: workflow.Pointer("inputs", name), Rule: "input",
					Message: fmt.Sprintf("input %q %s", name, p), Actual: shown})
			}
			continue
		}
		out[name] = v
	}
	return out, fromEnv, vs
}

// normalizeNumber turns json.Number and Go integer types into int64 or
// float64, the numbers of the data model.
func normalizeNumber(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

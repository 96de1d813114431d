package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Secret values are never written in clear. A secret that came from the
// environment is stored as its reference ($NAME) and resolved when the run
// is loaded; any other secret is sealed with the server key. Clear values
// live only in memory, where the run's masker learns them so that events,
// errors, outputs and logs show *** instead.

// sealInputs turns resolved inputs into their stored form: secret ones,
// and those named in sealed, sealed.
func (e *Engine) sealInputs(wf *workflow.Workflow, inputs map[string]any, fromEnv map[string]string, sealed []string) (json.RawMessage, error) {
	stored := make(map[string]any, len(inputs))
	for name, v := range inputs {
		in := wf.Inputs[name]
		if in == nil || (!in.Secret && !slices.Contains(sealed, name)) {
			stored[name] = v
			continue
		}
		if ref, ok := fromEnv[name]; ok {
			stored[name] = "$" + ref
			continue
		}
		s, err := e.seal(v)
		if err != nil {
			return nil, fmt.Errorf("seal input %q: %w", name, err)
		}
		stored[name] = s
	}
	return json.Marshal(stored)
}

// openInputs turns stored inputs back into clear values, teaching the
// masker the secret ones (those sec says are).
func (e *Engine) openInputs(wf *workflow.Workflow, raw json.RawMessage, mask *secret.Masker, sec *workflow.Secrets) (map[string]any, error) {
	inputs := map[string]any{}
	if len(raw) == 0 {
		return inputs, nil
	}
	if err := json.Unmarshal(raw, &inputs); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	for name, v := range inputs {
		if wf.Inputs[name] == nil || !sec.Input(name) {
			continue
		}
		clear, err := e.open(v)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		inputs[name] = clear
		learn(mask, clear)
	}
	return inputs, nil
}

// seal stores a secret value: sealed JSON.
func (e *Engine) seal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return e.sealer.Seal(b)
}

// open reverses seal, or resolves an environment reference.
func (e *Engine) open(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("a secret is stored in clear")
	}
	if secret.IsEnvRef(s) {
		return secret.ResolveEnvRef(s, e.lookupEnv)
	}
	b, err := e.sealer.Open(s)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// storedValue is the stored form of an answer: sealed when secret.
func (e *Engine) storedValue(v any, isSecret bool, envRef string) (json.RawMessage, error) {
	if !isSecret {
		return json.Marshal(v)
	}
	if envRef != "" {
		return json.Marshal("$" + envRef)
	}
	s, err := e.seal(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// storedSecret reports whether a stored value is in a secret's stored
// form: sealed, or an environment reference.
func storedSecret(raw json.RawMessage) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && (secret.IsSealed(s) || secret.IsEnvRef(s))
}

// openValue reads a stored answer.
func (e *Engine) openValue(raw json.RawMessage, isSecret bool, mask *secret.Masker) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if !isSecret {
		return v, nil
	}
	clear, err := e.open(v)
	if err != nil {
		return nil, err
	}
	learn(mask, clear)
	return clear, nil
}

// learn teaches the masker every string a secret value holds (numbers and
// booleans are rendered as text).
func learn(mask *secret.Masker, v any) {
	switch x := v.(type) {
	case nil:
	case string:
		mask.Add(x)
	case map[string]any:
		for _, e := range x {
			learn(mask, e)
		}
	case []any:
		for _, e := range x {
			learn(mask, e)
		}
	default:
		mask.Add(expr.Text(x))
	}
}

// maskedJSON marshals a value with every known secret masked. A value
// that is not JSON data already (a struct such as a pause's Request, raw
// JSON) is brought into the data model first: Masker.MaskValue masks only
// strings, maps and lists, and would let a struct through as it is.
func maskedJSON(mask *secret.Masker, v any) (json.RawMessage, error) {
	switch v.(type) {
	case nil, string, bool, float64, int, int64, map[string]any, []any:
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if mask.Len() == 0 {
			return b, nil
		}
		var data any
		if err := json.Unmarshal(b, &data); err != nil {
			return nil, err
		}
		v = data
	}
	return json.Marshal(mask.MaskValue(v))
}

// maxLearned bounds the values a run's masker holds for searching text
// (each search costs time with each value): a loop that renders a new
// value from a secret at every turn stops adding them there. Storage and
// views do not depend on it: they go by where a value comes from.
const maxLearned = 1024

// learner is the observer of a run's renders: the value of every secret
// expression (one that reads a secret, workflow.Secrets) is learned by the
// run's masker, so that a value derived from a secret — upper(token), a
// slice of it, "Bearer " + token — is masked wherever it shows. Nil when
// the workflow has no secret.
func (rs *runState) learner() expr.Observer {
	sec := rs.secrets()
	if sec.None() {
		return nil
	}
	return func(src string, v any) {
		if rs.mask.Len() >= maxLearned {
			return // masking costs grow with the values; what is secret stays sealed and ***
		}
		// Only the secret parts: a reference to a partly secret output
		// holds plain words too.
		sec.ExprShape(src).Apply(v, func(part any) any {
			learn(rs.mask, part)
			return part
		}, nil)
	}
}

// storedOutput is the stored form of a step's output and what later steps
// see of it: its secret parts (workflow.Secrets.OutputShape) sealed, and
// seen in clear; every other part with the known secrets masked. The
// masker is not taught a secret part's strings (a transform's map may hold
// plain words beside a secret): it knows already what the secret
// expressions that made it rendered.
func (e *Engine) storedOutput(rs *runState, stepID string, v any) (json.RawMessage, any, error) {
	sh := rs.secrets().OutputShape(stepID)
	var sealErr error
	stored := sh.Apply(v, func(part any) any {
		s, err := e.seal(part)
		if err != nil && sealErr == nil {
			sealErr = err
		}
		return s
	}, rs.mask.MaskValue)
	if sealErr != nil {
		return nil, nil, sealErr
	}
	out, err := json.Marshal(stored)
	if err != nil {
		return nil, nil, err
	}
	if sh == nil {
		var masked any
		_ = json.Unmarshal(out, &masked)
		return out, masked, nil
	}
	// What a load gives: the secret parts opened, as JSON data.
	b, err := json.Marshal(sh.Apply(v, func(part any) any { return part }, rs.mask.MaskValue))
	if err != nil {
		return nil, nil, err
	}
	var seen any
	_ = json.Unmarshal(b, &seen)
	return out, seen, nil
}

// openOutput reads a stored step output: its secret parts are opened. A
// part recorded before it was secret is read as it was stored.
func (e *Engine) openOutput(rs *runState, stepID string, raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	sh := rs.secrets().OutputShape(stepID)
	if sh == nil {
		return v, nil
	}
	var openErr error
	v = sh.Apply(v, func(part any) any {
		s, ok := part.(string)
		if !ok || !secret.IsSealed(s) {
			return part
		}
		clear, err := e.open(s)
		if err != nil && openErr == nil {
			openErr = err
		}
		return clear
	}, nil)
	return v, openErr
}

// runOutputs renders a finishing run's outputs: the stored form (secret
// ones sealed, the rest masked) and the form its event shows (secret ones
// as ***). name is the output that failed to render, with its error.
func (e *Engine) runOutputs(rs *runState, env map[string]any) (stored, shown json.RawMessage, name string, err error) {
	sec := rs.secrets()
	observe := rs.learner()
	values := make(map[string]any, len(rs.wf.Outputs))
	for n, tmpl := range rs.wf.Outputs {
		v, err := expr.RenderValueObserved(tmpl, env, observe)
		if err != nil {
			return nil, nil, n, err
		}
		values[n] = v
	}
	st := make(map[string]any, len(values))
	sh := make(map[string]any, len(values))
	var sealErr error
	seal := func(part any) any {
		s, err := e.seal(part)
		if err != nil && sealErr == nil {
			sealErr = err
		}
		return s
	}
	redact := func(any) any { return secret.Redacted }
	for n, v := range values {
		shape := sec.RunOutputShape(n)
		st[n] = shape.Apply(v, seal, rs.mask.MaskValue)
		sh[n] = shape.Apply(v, redact, rs.mask.MaskValue)
	}
	if sealErr != nil {
		return nil, nil, "", sealErr
	}
	if stored, err = json.Marshal(st); err != nil {
		return nil, nil, "", err
	}
	shown, err = json.Marshal(sh)
	return stored, shown, "", err
}

// RunSecrets returns a run's workflow and where secrets flow in the run
// (the workflow's rules with the inputs the run was given sealed): what a
// view shows as ***.
func (e *Engine) RunSecrets(ctx context.Context, run store.Run) (*workflow.Workflow, *workflow.Secrets, error) {
	wf, err := e.definition(ctx, run.Version)
	if err != nil {
		return nil, nil, err
	}
	var st struct {
		Sealed []string `json:"sealed"`
	}
	if len(run.State) > 0 && bytes.Contains(run.State, []byte(`"sealed"`)) {
		_ = json.Unmarshal(run.State, &st)
	}
	return wf, wf.SecretsWith(st.Sealed), nil
}

// bareOutput is the stored form of the output of a hook or compensation,
// which no step reads: *** when it is secret (a data action given a secret
// argument, as workflow.Secrets rules for steps), else masked.
func bareOutput(rs *runState, op workflow.Action, out any) json.RawMessage {
	if workflow.DataActions[op.Uses] && rs.secrets().Value(op.With) {
		b, _ := json.Marshal(secret.Redacted)
		return b
	}
	b, _ := maskedJSON(rs.mask, out)
	return b
}

package engine

import (
	"encoding/json"
	"fmt"

	"stepwise.dev/stepwise/expr"
	"stepwise.dev/stepwise/secret"
	"stepwise.dev/stepwise/workflow"
)

// Secret values are never written in clear. A secret that came from the
// environment is stored as its reference ($NAME) and resolved when the run
// is loaded; any other secret is sealed with the server key. Clear values
// live only in memory, where the run's masker learns them so that events,
// errors, outputs and logs show *** instead.

// sealInputs turns resolved inputs into their stored form.
func (e *Engine) sealInputs(wf *workflow.Workflow, inputs map[string]any, fromEnv map[string]string) (json.RawMessage, error) {
	stored := make(map[string]any, len(inputs))
	for name, v := range inputs {
		in := wf.Inputs[name]
		if in == nil || !in.Secret {
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
// masker the secret ones.
func (e *Engine) openInputs(wf *workflow.Workflow, raw json.RawMessage, mask *secret.Masker) (map[string]any, error) {
	inputs := map[string]any{}
	if len(raw) == 0 {
		return inputs, nil
	}
	if err := json.Unmarshal(raw, &inputs); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	for name, v := range inputs {
		in := wf.Inputs[name]
		if in == nil || !in.Secret {
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

// maskedJSON marshals a value with every known secret masked.
func maskedJSON(mask *secret.Masker, v any) (json.RawMessage, error) {
	return json.Marshal(mask.MaskValue(v))
}

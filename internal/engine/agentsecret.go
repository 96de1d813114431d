package engine

import (
	"errors"
	"fmt"

	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/workflow"
)

// agentSecret resolves the environment references an agent gives for a
// secret question (or a form's secret fields) and refuses values in clear:
// whatever an agent passes, a language model has seen. Messages never echo
// the value.
func (e *Engine) agentSecret(req Request, v any) (any, []workflow.Violation) {
	resolve := func(path string, x any) (any, *workflow.Violation) {
		ref, ok := x.(string)
		if !ok || !secret.IsEnvRef(ref) {
			return nil, &workflow.Violation{Path: path, Rule: "secret", Message: "a secret answer through the agent must be an environment reference \"$NAME\"; the value was not used",
				Expected: "$NAME"}
		}
		clear, err := secret.ResolveEnvRef(ref, e.lookupEnv)
		if errors.Is(err, secret.ErrUnset) {
			return nil, &workflow.Violation{Path: path, Rule: "secret", Message: e.unsetMessage(ref[1:])}
		}
		if err != nil {
			return nil, &workflow.Violation{Path: path, Rule: "secret", Message: err.Error()}
		}
		return clear, nil
	}
	if len(req.Fields) == 0 {
		if v == nil && req.Default != nil {
			return v, nil // the default, which is in the definition already
		}
		out, bad := resolve("", v)
		if bad != nil {
			return v, []workflow.Violation{*bad}
		}
		return out, nil
	}
	form, ok := v.(map[string]any)
	if !ok {
		return v, nil // validateAnswer explains the shape
	}
	out := make(map[string]any, len(form))
	var vs []workflow.Violation
	for k, x := range form {
		out[k] = x
	}
	for _, f := range req.Fields {
		x, present := form[f.Name]
		if !f.Secret || !present || x == nil {
			continue
		}
		clear, bad := resolve("/"+f.Name, x)
		if bad != nil {
			vs = append(vs, *bad)
			continue
		}
		out[f.Name] = clear
	}
	return out, vs
}

// unsetMessage says that an environment variable a $NAME reference names
// reads as unset, and how to allow it when the server restricts reads.
func (e *Engine) unsetMessage(name string) string {
	msg := fmt.Sprintf("the environment variable %s is not set in the server's environment", name)
	if e.envHint != nil {
		if hint := e.envHint(name); hint != "" {
			msg += " or " + hint
		}
	}
	return msg
}

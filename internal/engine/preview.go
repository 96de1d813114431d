package engine

import (
	"fmt"

	"stepwise.dev/stepwise/internal/workflow"
)

// The functions of this file expose the engine's own rules to callers that
// look at a workflow without running it (service.Plan): a preview that
// re-implemented them would drift from what a run does.

// CheckSupported returns the WORKFLOW_UNSUPPORTED error Start would give
// for wf, or nil when this engine executes everything wf uses.
func CheckSupported(wf *workflow.Workflow) error {
	if what := unsupported(wf); len(what) > 0 {
		return unsupportedError(wf, what)
	}
	return nil
}

// EvalCondition evaluates a condition field (if, a switch case) against an
// expression context the way a run does: written bare or as one ${{ }},
// true when its value is truthy.
func EvalCondition(cond string, env map[string]any) (bool, error) {
	return condition(cond, env)
}

// ForeachItems computes the items of a foreach step the way a run does: a
// literal list with its templates rendered, or an expression that must
// yield a list (null counts as no items).
func ForeachItems(s *workflow.Step, env map[string]any) ([]any, error) {
	return foreachItems(s, env)
}

// EnvValues is the env a run of wf would see in expressions now: every
// variable wf declares (in env:, or as an input's or a question's env),
// null when it is not set.
func (e *Engine) EnvValues(wf *workflow.Workflow) map[string]any {
	return envValues(declaredEnv(wf), e.lookupEnv)
}

// ActionInputProblem is why the action a uses step names would refuse its
// rendered input — the message the step would fail with — or "" when the
// action takes it.
func (e *Engine) ActionInputProblem(uses string, input map[string]any) string {
	act, ok := e.actions.Get(uses)
	if !ok {
		return fmt.Sprintf("no action named %q", uses)
	}
	if input == nil {
		input = map[string]any{}
	}
	if vs := e.actions.CheckInput(act, input); len(vs) > 0 {
		return inputProblem(uses, vs)
	}
	return ""
}

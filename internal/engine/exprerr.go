package engine

import (
	"context"
	"errors"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/expr"
)

// CodeExpressionBudget is the failure code of a step whose expression
// would have allocated past the evaluation's memory ceiling
// (expr.MemoryLimit). It is recorded with the failure (the run's error and
// the step.failed event carry it as "code").
const CodeExpressionBudget = code.ExpressionBudget

// failureCode classifies the error a step failed with: the code recorded
// with the failure, or "" when it has none.
func failureCode(err error) string {
	var be *expr.BudgetError
	var ce *crashedError
	switch {
	case errors.As(err, &be):
		return CodeExpressionBudget
	case errors.As(err, &ce):
		return CodeStepCrashed
	}
	return ""
}

// stepFailedErr fails the step with err (its message after prefix),
// recording err's failure code.
func (e *Engine) stepFailedErr(ctx context.Context, rs *runState, sx *stepExec, prefix string, err error, fatal bool) error {
	sx.code = failureCode(err)
	return e.stepFailed(ctx, rs, sx, prefix+err.Error(), fatal)
}

// withCode adds a failure's code, if any, to what the failure records.
func withCode(code string, m map[string]any) map[string]any {
	if code != "" {
		m["code"] = code
	}
	return m
}

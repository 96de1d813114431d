package code_test

import (
	"testing"

	"stepwise.dev/stepwise/action"
	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/mcpserver"
	"stepwise.dev/stepwise/service"
	"stepwise.dev/stepwise/store"
)

// TestSameValues: each constant equals the one the engine, store, service
// and surfaces use today, until they refer to package code themselves.
func TestSameValues(t *testing.T) {
	t.Parallel()
	pairs := []struct{ name, code, theirs string }{
		{"StatusPending", code.StatusPending, store.StatusPending},
		{"StatusRunning", code.StatusRunning, store.StatusRunning},
		{"StatusWaiting", code.StatusWaiting, store.StatusWaiting},
		{"StatusPaused", code.StatusPaused, store.StatusPaused},
		{"StatusSucceeded", code.StatusSucceeded, store.StatusSucceeded},
		{"StatusFailed", code.StatusFailed, store.StatusFailed},
		{"StatusCanceled", code.StatusCanceled, store.StatusCanceled},
		{"PauseQuestion", code.PauseQuestion, engine.KindQuestion},
		{"PauseAgent", code.PauseAgent, engine.KindAgent},
		{"ReadOnly", code.ReadOnly, action.ReadOnly},
		{"Mutating", code.Mutating, action.Mutating},
		{"Destructive", code.Destructive, action.Destructive},
		{"InputInvalid", code.InputInvalid, engine.CodeInputInvalid},
		{"WorkflowInvalid", code.WorkflowInvalid, engine.CodeWorkflowInvalid},
		{"WorkflowNotFound", code.WorkflowNotFound, service.CodeNotFound},
		{"AnswerInvalid", code.AnswerInvalid, engine.CodeAnswerInvalid},
		{"TokenInvalid", code.TokenInvalid, engine.CodeTokenInvalid},
		{"TokenExpired", code.TokenExpired, engine.CodeTokenExpired},
		{"TokenAlreadyUsed", code.TokenAlreadyUsed, engine.CodeTokenAlreadyUsed},
		{"RunNotFound", code.RunNotFound, engine.CodeRunNotFound},
		{"RunFinished", code.RunFinished, engine.CodeRunFinished},
		{"RunNotWaiting", code.RunNotWaiting, engine.CodeRunNotWaiting},
		{"RunBusy", code.RunBusy, engine.CodeRunBusy},
		{"ShuttingDown", code.ShuttingDown, engine.CodeShuttingDown},
		{"SecretInClear", code.SecretInClear, engine.CodeSecretInClear},
		{"PauseTimedOut", code.PauseTimedOut, engine.CodePauseTimedOut},
		{"StepCrashed", code.StepCrashed, engine.CodeStepCrashed},
		{"ArgumentsInvalid", code.ArgumentsInvalid, service.CodeArgumentsInvalid},
		{"ActionNotFound", code.ActionNotFound, service.CodeActionNotFound},
		{"ShellNotAllowed", code.ShellNotAllowed, action.CodeShellNotAllowed},
		{"NetworkNotAllowed", code.NetworkNotAllowed, action.CodeNetworkNotAllowed},
		{"ExpressionBudget", code.ExpressionBudget, engine.CodeExpressionBudget},
		{"Internal", code.Internal, mcpserver.CodeInternal},
	}
	for _, p := range pairs {
		if p.code != p.theirs {
			t.Errorf("code.%s = %q, theirs %q", p.name, p.code, p.theirs)
		}
	}
	for _, s := range []string{code.StatusPending, code.StatusRunning, code.StatusWaiting, code.StatusPaused,
		code.StatusSucceeded, code.StatusFailed, code.StatusCanceled} {
		if code.Finished(s) != store.Finished(s) {
			t.Errorf("Finished(%s) = %v, store says %v", s, code.Finished(s), store.Finished(s))
		}
	}
}

package code_test

import (
	"testing"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/mcpserver"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
)

// TestSameValues: each constant equals the one the engine, store, service
// and surfaces use today, until they refer to package code themselves.
func TestSameValues(t *testing.T) {
	t.Parallel()
	pairs := []struct{ name, code, theirs string }{
		{"StatusQueued", code.StatusQueued, store.StatusQueued},
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
		{"RunNotFailed", code.RunNotFailed, engine.CodeRunNotFailed},
		{"RunCompensated", code.RunCompensated, engine.CodeRunCompensated},
		{"RunPaused", code.RunPaused, engine.CodeRunPaused},
		{"StepNotFound", code.StepNotFound, engine.CodeStepNotFound},
		{"WorkflowUnsupported", code.WorkflowUnsupported, engine.CodeUnsupported},
		{"CategoryValidation", code.CategoryValidation, engine.CategoryValidation},
		{"CategoryNotFound", code.CategoryNotFound, engine.CategoryNotFound},
		{"CategoryConflict", code.CategoryConflict, engine.CategoryConflict},
		{"CategoryExecution", code.CategoryExecution, engine.CategoryExecution},
		{"CategoryAuth", code.CategoryAuth, engine.CategoryAuth},
		{"CategoryInternal", code.CategoryInternal, engine.CategoryInternal},
		{"EventRunCreated", code.EventRunCreated, engine.EventRunCreated},
		{"EventRunQueued", code.EventRunQueued, engine.EventRunQueued},
		{"EventRunStarted", code.EventRunStarted, engine.EventRunStarted},
		{"EventRunPaused", code.EventRunPaused, engine.EventRunPaused},
		{"EventRunContinued", code.EventRunContinued, engine.EventRunContinued},
		{"EventRunResumed", code.EventRunResumed, engine.EventRunResumed},
		{"EventRunSucceeded", code.EventRunSucceeded, engine.EventRunSucceeded},
		{"EventRunFailed", code.EventRunFailed, engine.EventRunFailed},
		{"EventRunCanceled", code.EventRunCanceled, engine.EventRunCanceled},
		{"EventRunRetried", code.EventRunRetried, engine.EventRunRetried},
		{"EventRunForked", code.EventRunForked, engine.EventRunForked},
		{"EventRunHeld", code.EventRunHeld, engine.EventRunHeld},
		{"EventRunUnheld", code.EventRunUnheld, engine.EventRunUnheld},
		{"EventStepStarted", code.EventStepStarted, engine.EventStepStarted},
		{"EventStepSucceeded", code.EventStepSucceeded, engine.EventStepSucceeded},
		{"EventStepFailed", code.EventStepFailed, engine.EventStepFailed},
		{"EventStepSkipped", code.EventStepSkipped, engine.EventStepSkipped},
		{"EventStepAnswered", code.EventStepAnswered, engine.EventStepAnswered},
		{"EventStepSleeping", code.EventStepSleeping, engine.EventStepSleeping},
		{"EventStepRetrying", code.EventStepRetrying, engine.EventStepRetrying},
		{"EventStepRepeating", code.EventStepRepeating, engine.EventStepRepeating},
		{"EventStepTimedOut", code.EventStepTimedOut, engine.EventStepTimedOut},
		{"EventChildStarted", code.EventChildStarted, engine.EventChildStarted},
		{"EventPauseRefused", code.EventPauseRefused, engine.EventPauseRefused},
		{"EventRunCompensating", code.EventRunCompensating, engine.EventRunCompensating},
		{"EventCompensated", code.EventCompensated, engine.EventCompensated},
		{"EventCompensationFail", code.EventCompensationFail, engine.EventCompensationFail},
		{"EventHookSucceeded", code.EventHookSucceeded, engine.EventHookSucceeded},
		{"EventHookFailed", code.EventHookFailed, engine.EventHookFailed},
		{"SourceGiven", code.SourceGiven, engine.SourceGiven},
		{"SourceEnv", code.SourceEnv, engine.SourceEnv},
		{"SourceDefault", code.SourceDefault, engine.SourceDefault},
		{"SourceNone", code.SourceNone, engine.SourceNone},
		{"SourceMissing", code.SourceMissing, engine.SourceMissing},
		{"DurabilityFull", code.DurabilityFull, sqlite.Full},
		{"DurabilityNormal", code.DurabilityNormal, sqlite.Normal},
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

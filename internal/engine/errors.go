package engine

import (
	"errors"
	"fmt"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/workflow"
)

// Error codes the engine returns. They are stable: surfaces map them to
// their own error shapes (the MCP error data, CLI messages).
const (
	CodeInputInvalid     = code.InputInvalid
	CodeWorkflowInvalid  = code.WorkflowInvalid
	CodeAnswerInvalid    = code.AnswerInvalid
	CodeTokenInvalid     = code.TokenInvalid
	CodeTokenExpired     = code.TokenExpired
	CodeTokenAlreadyUsed = code.TokenAlreadyUsed
	CodeRunNotFound      = code.RunNotFound
	CodeRunFinished      = code.RunFinished
	CodeRunNotWaiting    = code.RunNotWaiting
	CodeShuttingDown     = code.ShuttingDown
	CodeSecretInClear    = code.SecretInClear
	CodeRunNotFailed     = code.RunNotFailed
	CodeRunCompensated   = code.RunCompensated
	CodeRunPaused        = code.RunPaused
	CodeStepNotFound     = code.StepNotFound
	CodeUnsupported      = code.WorkflowUnsupported
	// CodePauseTimedOut: the pause a token names ended with its step's
	// timeout; the step failed and the token continues nothing.
	CodePauseTimedOut = code.PauseTimedOut
	// CodeStepCrashed: a run's step failed because the process ended
	// while it ran more often than the engine runs a step again
	// (Config.MaxRecoveries). It is the code of the run's error, not an
	// error a call returns.
	CodeStepCrashed = code.StepCrashed
)

// Categories group error codes (validation | not_found | conflict |
// execution | auth | internal).
const (
	CategoryValidation = code.CategoryValidation
	CategoryNotFound   = code.CategoryNotFound
	CategoryConflict   = code.CategoryConflict
	CategoryExecution  = code.CategoryExecution
	CategoryAuth       = code.CategoryAuth
	CategoryInternal   = code.CategoryInternal
)

// Error is an error the caller can act on.
type Error struct {
	Code     string
	Category string
	Message  string
	RunID    string
	StepID   string
	// Workflow names the workflow concerned, when there is one.
	Workflow string
	// CurrentVersion is a workflow's version when a write conflicted with it.
	CurrentVersion string
	// ExpectedVersion is the workflow version a caller's data names when
	// it differs from CurrentVersion (a stateless state's).
	ExpectedVersion string
	// CurrentRevision is the revision (the hash of the file's bytes) a
	// write that conflicted would have to expect.
	CurrentRevision string
	// Name is the name the caller gave (a workflow, catalog or action) when
	// the error is about it.
	Name string
	// Argument names the argument or filter the error is about.
	Argument string
	// Closest lists known names near a Name that was not found, closest
	// first.
	Closest []string
	// Violations lists every problem of an invalid input or answer.
	Violations []workflow.Violation
	// Retryable says whether the same call may succeed later.
	Retryable bool
	// Suggestion says what to do next in words that fit every surface: it
	// names no MCP tool and no CLI command. A surface words its own next
	// step from Code (mcpserver/errors.go, cli/errors.go) and falls back to
	// this.
	Suggestion string
	Err        error
}

func (e *Error) Error() string {
	msg := e.Message
	if len(e.Violations) > 0 {
		msg += ": " + e.Violations[0].Message
		if n := len(e.Violations) - 1; n > 0 {
			msg += fmt.Sprintf(" (and %d more)", n)
		}
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the engine error code of err, or "".
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// runFinished is the error of an action on a run that has finished.
func runFinished(runID, status string) *Error {
	return &Error{Code: CodeRunFinished, Category: CategoryConflict, RunID: runID, Message: "the run has already finished (" + status + ")",
		Suggestion: "read its result; to run it again, retry it (a failed run), fork it or start a new run"}
}

func newError(code, category, format string, args ...any) *Error {
	return &Error{Code: code, Category: category, Message: fmt.Sprintf(format, args...)}
}

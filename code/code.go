// Package code holds the constants stepwise's packages and the programs
// embedding it share: run statuses, pause kinds, action safety tiers and
// error codes. It imports nothing, so every package may refer to it. The
// values are stable: they appear in stored runs, MCP results and logs.
package code

// Run statuses. A run is pending or running until it waits (a pause is
// open), is held (paused) or finishes (succeeded, failed, canceled).
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusPaused    = "paused"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCanceled  = "canceled"
)

// Finished reports whether a run status is final.
func Finished(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCanceled
}

// Pause kinds: a question (or form) for a person, or a task for an agent.
const (
	PauseQuestion = "question"
	PauseAgent    = "agent"
)

// Safety tiers of an action.
const (
	ReadOnly    = "read-only"
	Mutating    = "mutating"
	Destructive = "destructive"
)

// Error codes: what an error (or a failed run's error) is about, for a
// program to branch on.
const (
	InputInvalid     = "INPUT_INVALID"
	WorkflowInvalid  = "WORKFLOW_INVALID"
	WorkflowNotFound = "WORKFLOW_NOT_FOUND"
	AnswerInvalid    = "ANSWER_INVALID"
	TokenInvalid     = "TOKEN_INVALID"
	TokenExpired     = "TOKEN_EXPIRED"
	TokenAlreadyUsed = "TOKEN_ALREADY_USED"
	RunNotFound      = "RUN_NOT_FOUND"
	RunFinished      = "RUN_FINISHED"
	RunNotWaiting    = "RUN_NOT_WAITING"
	RunBusy          = "RUN_BUSY"
	ShuttingDown     = "SHUTTING_DOWN"
	SecretInClear    = "SECRET_IN_CLEAR"
	PauseTimedOut    = "PAUSE_TIMED_OUT"
	StepCrashed      = "STEP_CRASHED"
	ArgumentsInvalid = "ARGUMENTS_INVALID"
	ActionNotFound   = "ACTION_NOT_FOUND"
	// ActionExists: an action of that name is registered already (a
	// built-in, a catalog's operation or an earlier registration).
	ActionExists      = "ACTION_EXISTS"
	ShellNotAllowed   = "SHELL_NOT_ALLOWED"
	NetworkNotAllowed = "NETWORK_NOT_ALLOWED"
	ExpressionBudget  = "EXPRESSION_BUDGET"
	// Internal: anything else (the error's message says what).
	Internal = "INTERNAL"
)

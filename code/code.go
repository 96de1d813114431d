// Package code holds the constants stepwise's packages and the programs
// embedding it share: run statuses, pause kinds, action safety tiers, error
// codes and categories, event types, input sources and durability settings. It imports nothing, so every package may refer to it. The
// values are stable: they appear in stored runs, MCP results and logs.
package code

// Run statuses. A run is pending or running until it waits (a pause is
// open), is held (paused) or finishes (succeeded, failed, canceled). A run
// of a workflow with a concurrency limit that is reached starts queued: it
// runs when the limit lets it (FIFO per concurrency key).
const (
	StatusQueued    = "queued"
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
	// RunNotFailed: only a failed run can be retried.
	RunNotFailed = "RUN_NOT_FAILED"
	// RunCompensated: the run's completed steps were undone; fork it instead.
	RunCompensated = "RUN_COMPENSATED"
	// RunPaused: an operator paused the run; resume it first.
	RunPaused = "RUN_PAUSED"
	// StepNotFound: the workflow has no step of that id.
	StepNotFound = "STEP_NOT_FOUND"
	// WorkflowUnsupported: the workflow uses something this engine cannot run.
	WorkflowUnsupported = "WORKFLOW_UNSUPPORTED"
	// Internal: anything else (the error's message says what).
	Internal = "INTERNAL"
)

// Error categories group error codes.
const (
	CategoryValidation = "validation"
	CategoryNotFound   = "not_found"
	CategoryConflict   = "conflict"
	CategoryExecution  = "execution"
	CategoryAuth       = "auth"
	CategoryInternal   = "internal"
)

// Event types of a run's history.
const (
	EventRunCreated    = "run.created"
	EventRunQueued     = "run.queued"
	EventRunStarted    = "run.started"
	EventRunPaused     = "run.paused"
	EventRunContinued  = "run.continued"
	EventRunResumed    = "run.resumed"
	EventRunSucceeded  = "run.succeeded"
	EventRunFailed     = "run.failed"
	EventRunCanceled   = "run.canceled"
	EventRunRetried    = "run.retried"
	EventRunForked     = "run.forked"
	EventRunHeld       = "run.held"
	EventRunUnheld     = "run.unheld"
	EventStepStarted   = "step.started"
	EventStepSucceeded = "step.succeeded"
	EventStepFailed    = "step.failed"
	EventStepSkipped   = "step.skipped"
	EventStepAnswered  = "step.answered"
	EventStepSleeping  = "step.sleeping"
	EventStepRetrying  = "step.retrying"
	EventStepRepeating = "step.repeating"
	EventStepTimedOut  = "step.timed_out"
	EventChildStarted  = "step.child_started"
	EventPauseRefused  = "pause.refused"

	EventRunCompensating  = "run.compensating"
	EventCompensated      = "compensation.succeeded"
	EventCompensationFail = "compensation.failed"
	EventHookSucceeded    = "hook.succeeded"
	EventHookFailed       = "hook.failed"
)

// Where a resolved input's value came from.
const (
	// SourceGiven: the caller gave the value.
	SourceGiven = "given"
	// SourceEnv: the input's env variable was set.
	SourceEnv = "env"
	// SourceDefault: the declared default.
	SourceDefault = "default"
	// SourceNone: an optional input without a value; it is null.
	SourceNone = "none"
	// SourceMissing: a required input without a value.
	SourceMissing = "missing"
)

// Durability settings of the SQLite database.
const (
	// DurabilityFull fsyncs every commit: a committed step survives power loss.
	DurabilityFull = "full"
	// DurabilityNormal fsyncs at checkpoints: a committed step survives a
	// crash of the process but the last commits may be lost on power loss.
	DurabilityNormal = "normal"
)

package api

import (
	"time"

	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// The request and response bodies of the API. The OpenAPI document's
// schemas are derived from these types (openapi.go): what the handler
// decodes and encodes is what the document says.

// StartRequest is the body of POST /api/runs.
type StartRequest struct {
	Workflow    string         `json:"workflow,omitempty" jsonschema:"a library workflow's name (else a draft's); or definition"`
	Definition  string         `json:"definition,omitempty" jsonschema:"an inline workflow, YAML or JSON text; or workflow"`
	Inputs      map[string]any `json:"inputs,omitempty" jsonschema:"the workflow's inputs by name"`
	WaitSeconds *float64       `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the run to finish or pause before answering (default 20, max 300; 0 answers at once)"`
}

// ContinueRequest is the body of POST /api/runs/{run_id}/continue.
type ContinueRequest struct {
	Token       string   `json:"token" jsonschema:"the open pause's token, exactly as returned"`
	Value       any      `json:"value,omitempty" jsonschema:"the answer (or the agent step's output); omit it to take a question's default"`
	WaitSeconds *float64 `json:"wait_seconds,omitempty" jsonschema:"how long to wait for the run to finish or pause again (default 20, max 300)"`
}

// CancelRequest is the body of POST /api/runs/{run_id}/cancel (it may be
// empty).
type CancelRequest struct {
	Reason     string `json:"reason,omitempty" jsonschema:"recorded with the run"`
	Compensate bool   `json:"compensate,omitempty" jsonschema:"undo the completed steps first, in reverse"`
}

// GetQuery are the query parameters of GET /api/runs/{run_id}.
type GetQuery struct {
	WaitSeconds float64 `json:"wait_seconds,omitempty" jsonschema:"wait up to this long for a running run to finish or pause (default 0, max 300)"`
}

// ListQuery are the query parameters of GET /api/runs.
type ListQuery struct {
	Workflow string    `json:"workflow,omitempty" jsonschema:"only the runs of this workflow"`
	Status   string    `json:"status,omitempty" jsonschema:"only the runs in this status"`
	Since    time.Time `json:"since,omitzero" jsonschema:"only the runs created after this time (RFC 3339)"`
	Cursor   string    `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page, exactly as returned"`
	Limit    int       `json:"limit,omitempty" jsonschema:"at most this many runs (default 20, max 200)"`
}

// RunPath is the path parameter of the routes of one run.
type RunPath struct {
	RunID string `json:"run_id" jsonschema:"the run's id"`
}

// Run is a run as the API returns it: the MCP tools' run shape without
// their advice to agents.
type Run struct {
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow"`
	Version  string `json:"version,omitempty" jsonschema:"the workflow version the run is pinned to"`
	// Draft: the run is of a draft (no saved workflow has the name).
	Draft  bool   `json:"draft,omitempty" jsonschema:"the run is of a draft: no saved workflow has that name"`
	Status string `json:"status" jsonschema:"pending, running, waiting (a pause is open), paused (held), succeeded, failed or canceled"`
	// Inputs are the run's inputs, secrets shown as ***.
	Inputs  map[string]any `json:"inputs,omitempty" jsonschema:"the run's inputs (secret ones masked)"`
	Outputs map[string]any `json:"outputs,omitempty" jsonschema:"the run's outputs once it succeeded (secret ones masked)"`
	// Pause is the open pause of a waiting run: answer it with continue.
	Pause *service.Pause `json:"pause,omitempty" jsonschema:"the open pause of a waiting run: answer it with POST /api/runs/{run_id}/continue and its token"`
	// Error says why a failed run failed.
	Error      *service.RunError `json:"error,omitempty" jsonschema:"why a failed run failed"`
	ParentID   string            `json:"parent_id,omitempty" jsonschema:"the run that started this one as a sub-workflow"`
	CreatedAt  time.Time         `json:"created_at"`
	FinishedAt *time.Time        `json:"finished_at,omitempty"`
}

// RunLine is one run of a list.
type RunLine struct {
	RunID      string     `json:"run_id"`
	Workflow   string     `json:"workflow"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ParentID   string     `json:"parent_id,omitempty"`
}

// RunList is a page of runs, newest first.
type RunList struct {
	Runs []RunLine `json:"runs"`
	// NextCursor reads the next page ("" at the end).
	NextCursor string `json:"next_cursor,omitempty" jsonschema:"the cursor of the next page; absent on the last"`
}

// Problem is an error answer: RFC 9457 problem details with stepwise's
// error code, its category and the violations of an invalid request.
type Problem struct {
	Type     string `json:"type" jsonschema:"a URI naming the kind of problem: urn:stepwise:error:CODE"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty" jsonschema:"the request's path"`
	// Code is stepwise's error code (RUN_NOT_FOUND, ANSWER_INVALID, …):
	// match on it.
	Code     string `json:"code" jsonschema:"stepwise's error code: match on it"`
	Category string `json:"category,omitempty" jsonschema:"validation, not_found, conflict, execution, auth, security or internal"`
	// Retryable says whether the same request may succeed later unchanged.
	Retryable  bool                 `json:"retryable,omitempty"`
	RunID      string               `json:"run_id,omitempty"`
	StepID     string               `json:"step_id,omitempty"`
	Argument   string               `json:"argument,omitempty" jsonschema:"the field or parameter the problem is about"`
	Suggestion string               `json:"suggestion,omitempty" jsonschema:"what to do next"`
	Violations []workflow.Violation `json:"violations,omitempty" jsonschema:"every problem of an invalid definition, input or answer"`
	// CorrelationID finds an internal error in the server's log.
	CorrelationID string `json:"correlation_id,omitempty"`
}

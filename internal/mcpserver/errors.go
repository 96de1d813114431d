package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/clip"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// ToolError is the structured content of a tool result with isError: an
// error the agent can act on. Every tool error of the server has this shape;
// toolError is the one place that builds it from internal errors.
type ToolError struct {
	// ErrorCode is stable (WORKFLOW_INVALID, ANSWER_INVALID, …): match on it.
	ErrorCode string `json:"error_code"`
	// Category is validation | not_found | conflict | execution | auth |
	// security | internal.
	Category string       `json:"category"`
	Message  string       `json:"message"`
	Context  ErrorContext `json:"context"`
	// Retryable says whether the same call may succeed later unchanged.
	Retryable bool `json:"retryable"`
	// SuggestedAction is the next step, in this surface's terms (MCP tools
	// and their arguments); never empty.
	SuggestedAction string `json:"suggested_action"`
	// CorrelationID finds the error in the server's log.
	CorrelationID string               `json:"correlation_id"`
	Violations    []workflow.Violation `json:"violations,omitempty"`
	// ViolationsTotal counts the violations when there were more than
	// the error lists.
	ViolationsTotal int `json:"violations_total,omitempty"`
}

// ErrorContext says where an error happened: at least the tool called.
type ErrorContext struct {
	// Tool is the tool that was called (Prompt the prompt, for the error
	// of a prompt).
	Tool   string `json:"tool,omitempty"`
	Prompt string `json:"prompt,omitempty"`
	// URI is the resource read, for the error of a resource.
	URI      string `json:"uri,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	// CurrentVersion is the workflow's version when a save conflicted.
	CurrentVersion string `json:"current_version,omitempty"`
	// ExpectedVersion is the version a stateless state names when this
	// server loads its workflow as CurrentVersion (STATE_VERSION_MISMATCH).
	ExpectedVersion string `json:"expected_version,omitempty"`
	// CurrentRevision is its revision then: what expected_version takes.
	CurrentRevision string `json:"current_revision,omitempty"`
	RunID           string `json:"run_id,omitempty"`
	StepID          string `json:"step_id,omitempty"`
	Path            string `json:"path,omitempty"`
	Line            int    `json:"line,omitempty"`
	Column          int    `json:"column,omitempty"`
	// Name is the name the call gave (a workflow, catalog or action) when
	// the error is about it.
	Name string `json:"name,omitempty"`
	// Argument names the argument the error is about.
	Argument string `json:"argument,omitempty"`
	// Closest lists known names near a name that was not found.
	Closest []string `json:"closest,omitempty"`
}

// Error codes of the MCP surface itself (the engine and service have theirs).
const (
	CodeArgumentsInvalid = service.CodeArgumentsInvalid
	CodeInternal         = code.Internal
	CodeCanceled         = "CANCELED"
	// CodeShellRefused is the shell policy's code: the service refuses a
	// run whose commands the server does not allow (run_start, wf_ tools,
	// run_retry, run_fork), and the shell action a command named by a
	// template when its step runs.
	CodeShellRefused = action.CodeShellNotAllowed
)

// argumentsError is a call whose arguments do not fit the tool; arg names
// the argument at fault ("" when violations say which).
func argumentsError(arg, msg string, vs ...workflow.Violation) error {
	return &service.Error{Code: CodeArgumentsInvalid, Category: code.CategoryValidation, Argument: arg, Message: msg, Violations: vs,
		Suggestion: "fix the arguments as the tool's input schema says and call again"}
}

// toolError maps any error to the structured tool error and logs it with
// its correlation id. Internal errors keep their detail in the log only.
func toolError(log *slog.Logger, tool string, err error) *ToolError {
	te := &ToolError{CorrelationID: uuid.Must(uuid.NewV7()).String(), Context: ErrorContext{Tool: tool}}
	var ee *service.Error
	var be *expr.BudgetError
	switch {
	case errors.As(err, &ee):
		te.ErrorCode, te.Category, te.Message = ee.Code, ee.Category, ee.Message
		te.Retryable, te.SuggestedAction, te.Violations = ee.Retryable, nextStep(ee), ee.Violations
		te.Context.RunID, te.Context.StepID = ee.RunID, ee.StepID
		te.Context.Workflow, te.Context.CurrentVersion, te.Context.CurrentRevision = ee.Workflow, ee.CurrentVersion, ee.CurrentRevision
		te.Context.ExpectedVersion = ee.ExpectedVersion
		te.Context.Name, te.Context.Argument, te.Context.Closest = ee.Name, ee.Argument, ee.Closest
		if te.Category == "" {
			te.Category = code.CategoryInternal
		}
		if ee.Code == code.ShuttingDown {
			te.Retryable = true
		}
	case errors.As(err, &be):
		te.ErrorCode, te.Category, te.Message = code.ExpressionBudget, code.CategoryExecution, err.Error()
		te.SuggestedAction = "make the expression build less: it may not allocate more than the evaluation's memory limit"
		te.Context.Name = be.What
	case errors.Is(err, context.Canceled):
		te.ErrorCode, te.Category, te.Message, te.Retryable = CodeCanceled, code.CategoryExecution, "the call was canceled", true
		te.SuggestedAction = "call again if it is still wanted; a run it started goes on (run_list shows it)"
	case errors.Is(err, context.DeadlineExceeded):
		te.ErrorCode, te.Category, te.Message, te.Retryable = CodeCanceled, code.CategoryExecution, "the call ran out of time", true
		te.SuggestedAction = "call again if it is still wanted; a run it started goes on (run_list shows it)"
	default:
		te.ErrorCode, te.Category, te.Retryable = CodeInternal, code.CategoryInternal, true
		te.Message = "internal error: " + err.Error()
		te.SuggestedAction = "retry; if it persists, report the correlation id"
	}
	if te.SuggestedAction == "" {
		te.SuggestedAction = "read the message; if it persists, report the correlation id"
	}
	if len(te.Violations) > 0 {
		v := te.Violations[0]
		te.Context.Path, te.Context.Line, te.Context.Column = v.Path, v.Line, v.Column
	}
	boundError(te)
	level := slog.LevelInfo
	if te.Category == code.CategoryInternal {
		level = slog.LevelError
	}
	log.Log(context.Background(), level, "tool error", "tool", tool, "error_code", te.ErrorCode, "correlation_id", te.CorrelationID, "error", clip.Words(err.Error(), maxMessageBytes))
	return te
}

// promptError is the JSON-RPC error of a prompt that cannot be given:
// invalid params (-32602) for what the caller can fix, internal error
// (-32603) otherwise, with the structured error (as a tool's) as its data.
func promptError(log *slog.Logger, prompt string, err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return err
	}
	te := toolError(log, "", err)
	te.Context.Prompt = prompt
	rpcCode := int64(jsonrpc.CodeInvalidParams)
	if te.Category == code.CategoryInternal {
		rpcCode = jsonrpc.CodeInternalError
	}
	data, _ := json.Marshal(te)
	return &jsonrpc.Error{Code: rpcCode, Message: te.ErrorCode + ": " + te.Message, Data: data}
}

// errorResult is the tool result of a ToolError: isError, the structure,
// and a short text for clients that read only text.
func errorResult(te *ToolError) *mcp.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", te.ErrorCode, te.Message)
	for i, v := range te.Violations {
		if i == 5 {
			fmt.Fprintf(&b, "\n- … %d more (see violations)", len(te.Violations)-5)
			break
		}
		b.WriteString("\n- ")
		if v.Line > 0 {
			fmt.Fprintf(&b, "%d:%d ", v.Line, v.Column)
		} else if v.Path != "" {
			b.WriteString(v.Path + " ")
		}
		b.WriteString(v.Message)
		if v.Hint != "" {
			b.WriteString(" (hint: " + v.Hint + ")")
		}
	}
	if te.SuggestedAction != "" {
		b.WriteString("\nNext: " + te.SuggestedAction)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, StructuredContent: te}
}

// nextStep is an error's suggested action in MCP terms: the tools and
// arguments an agent calls next, chosen by the error's code. The engine's
// and the service's suggestions name no surface; codes whose next step is
// a tool are worded here, the others keep the neutral suggestion.
func nextStep(e *service.Error) string {
	switch e.Code {
	case code.RunNotFound:
		return "list runs with run_list and use a run_id from it"
	case code.RunFinished:
		return "read its outputs or error with run_get; to run it again, call run_retry (a failed run), run_fork or run_start"
	case code.RunNotFailed:
		return "call run_fork from a step to run it again, or run_start for a new run"
	case code.RunCompensated:
		return "call run_fork with from_step its first step"
	case code.RunPaused:
		return "call run_resume, then run_continue with the same token"
	case code.RunBusy:
		return "call run_get to see where the run is now, then make the call again"
	case code.StepNotFound:
		if e.Argument == "to_step" {
			return "call run_rewind again with to_step one of the steps the message lists, or run_restart"
		}
		return "call run_fork again with from_step one of the top-level steps the message lists (run_get shows the run's steps)"
	case code.TokenExpired:
		if e.RunID != "" {
			return "call run_get {\"run_id\": \"" + e.RunID + "\"} for the pause's fresh token, then run_continue with it"
		}
		return "call run_get for the pause's fresh token, then run_continue with it"
	case code.TokenInvalid:
		return "call run_continue with the token exactly as returned; run_get shows the run's open pause and its token"
	case code.PauseTimedOut:
		return "read the run with run_get: the step failed with its timeout; run_retry runs a failed run again from that step"
	case code.TokenAlreadyUsed:
		return "read the run's current state with run_get"
	case code.AnswerInvalid:
		return "fix the listed problems and call run_continue again with the same token"
	case code.SecretInClear:
		if e.RunID != "" {
			return "call run_continue with value \"$NAME\", an environment variable of the server, or let the person answer: the one-time secret page (secret_url) or a terminal on the server's machine"
		}
	case code.InputInvalid:
		if e.RunID != "" {
			return "fix the listed inputs and call run_retry or run_fork again with them"
		}
		return "fix the listed inputs and call again (workflow_get lists the workflow's inputs)"
	case code.WorkflowInvalid:
		return "fix the listed violations and call again (workflow_validate checks a definition; workflow_save with draft: true keeps one that is not valid yet)"
	case service.CodeStateInvalid:
		return "send the state of the last run_start or run_continue result exactly as returned, to a server sharing its key; or start over with run_start"
	case service.CodeStateVersionMismatch:
		return "continue the run on a server of the same build and actions (context.expected_version is the state's), or start over with run_start"
	case service.CodeStateTooLarge:
		return "run the workflow on a server that keeps runs, or split it into shorter workflows"
	case service.CodeNotStateless:
		return "use a server that keeps runs for this (one started without --stateless), or a workflow without the feature named"
	case service.CodeNotFound:
		return "list the library with workflow_list (include_drafts for drafts) and use a name from it"
	case service.CodeUnsafeName:
		return "use a name as workflow_list or catalog_list shows them (lowercase letters, digits, - and _; no paths)"
	case service.CodeVersionConflict:
		if e.CurrentVersion == "" {
			return "it was removed meanwhile: call workflow_save without expected_version to create it again"
		}
		return "read it with workflow_get, merge your change and call workflow_save with expected_version: " + e.CurrentRevision + " (expected_version takes the revision, the hash of the file's bytes, not the version; or overwrite: true to replace it)"
	case service.CodeNameMismatch:
		return "leave out name, or make it equal to the content's name: field (workflow_rename renames a workflow)"
	case service.CodeNameMissing:
		return "add a top-level name: field (or, for a draft that does not parse yet, pass name)"
	case service.CodeCatalogNotFound:
		return "list the catalogs with catalog_list and use a name from it"
	case service.CodeCatalogConflict:
		return "call catalog_import with overwrite: true to replace it (its actions change at once), or give another name"
	case service.CodeCatalogInvalid:
		return "fix what the violations say and import again (catalog_validate reports on a document)"
	case service.CodeActionNotFound:
		return "find actions with action_search, or read " + uriActions
	}
	return e.Suggestion
}

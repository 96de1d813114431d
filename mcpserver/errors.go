package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/action"
	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/expr"
	"stepwise.dev/stepwise/workflow"
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
	Retryable       bool   `json:"retryable"`
	SuggestedAction string `json:"suggested_action,omitempty"`
	// CorrelationID finds the error in the server's log.
	CorrelationID string               `json:"correlation_id"`
	Violations    []workflow.Violation `json:"violations,omitempty"`
}

// ErrorContext says where an error happened.
type ErrorContext struct {
	Workflow string `json:"workflow,omitempty"`
	// CurrentVersion is the workflow's version when a save conflicted.
	CurrentVersion string `json:"current_version,omitempty"`
	RunID          string `json:"run_id,omitempty"`
	StepID         string `json:"step_id,omitempty"`
	Path           string `json:"path,omitempty"`
	Line           int    `json:"line,omitempty"`
	Column         int    `json:"column,omitempty"`
}

// Error codes of the MCP surface itself (the engine and service have theirs).
const (
	CodeArgumentsInvalid = "ARGUMENTS_INVALID"
	CodeInternal         = "INTERNAL"
	CodeCanceled         = "CANCELED"
	// CodeShellRefused is the shell policy's code: the service refuses a
	// run whose commands the server does not allow (run_start, wf_ tools,
	// run_retry, run_fork), and the shell action a command named by a
	// template when its step runs.
	CodeShellRefused = action.CodeShellNotAllowed
)

// argumentsError is a call whose arguments do not fit the tool.
func argumentsError(msg string, vs ...workflow.Violation) error {
	return &engine.Error{Code: CodeArgumentsInvalid, Category: engine.CategoryValidation, Message: msg, Violations: vs,
		Suggestion: "fix the arguments as the tool's input schema says and call again"}
}

// toolError maps any error to the structured tool error and logs it with
// its correlation id. Internal errors keep their detail in the log only.
func toolError(log *slog.Logger, tool string, err error) *ToolError {
	te := &ToolError{CorrelationID: uuid.Must(uuid.NewV7()).String()}
	var ee *engine.Error
	var be *expr.BudgetError
	switch {
	case errors.As(err, &ee):
		te.ErrorCode, te.Category, te.Message = ee.Code, ee.Category, ee.Message
		te.Retryable, te.SuggestedAction, te.Violations = ee.Retryable, ee.Suggestion, ee.Violations
		te.Context.RunID, te.Context.StepID = ee.RunID, ee.StepID
		te.Context.Workflow, te.Context.CurrentVersion = ee.Workflow, ee.CurrentVersion
		if te.Category == "" {
			te.Category = engine.CategoryInternal
		}
		if ee.Code == engine.CodeShuttingDown {
			te.Retryable = true
		}
	case errors.As(err, &be):
		te.ErrorCode, te.Category, te.Message = engine.CodeExpressionBudget, engine.CategoryExecution, err.Error()
		te.SuggestedAction = "make the expression build less: it may not allocate more than the evaluation's memory limit"
	case errors.Is(err, context.Canceled):
		te.ErrorCode, te.Category, te.Message, te.Retryable = CodeCanceled, engine.CategoryExecution, "the call was canceled", true
	case errors.Is(err, context.DeadlineExceeded):
		te.ErrorCode, te.Category, te.Message, te.Retryable = CodeCanceled, engine.CategoryExecution, "the call ran out of time", true
	default:
		te.ErrorCode, te.Category, te.Retryable = CodeInternal, engine.CategoryInternal, true
		te.Message = "internal error: " + err.Error()
		te.SuggestedAction = "retry; if it persists, report the correlation id"
	}
	if len(te.Violations) > 0 {
		v := te.Violations[0]
		te.Context.Path, te.Context.Line, te.Context.Column = v.Path, v.Line, v.Column
	}
	level := slog.LevelInfo
	if te.Category == engine.CategoryInternal {
		level = slog.LevelError
	}
	log.Log(context.Background(), level, "tool error", "tool", tool, "error_code", te.ErrorCode, "correlation_id", te.CorrelationID, "error", err.Error())
	return te
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

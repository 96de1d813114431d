package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/google/uuid"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// Error codes of the HTTP surface itself, for what happens before a
// request reaches the service.
const (
	CodeUnauthorized     = "UNAUTHORIZED"
	CodeRouteNotFound    = "ROUTE_NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeMediaType        = "UNSUPPORTED_MEDIA_TYPE"
	CodeBodyTooLarge     = "BODY_TOO_LARGE"
	CodeArgumentsInvalid = service.CodeArgumentsInvalid
	CodeCanceled         = "CANCELED"
	CodeForeignHost      = "FOREIGN_HOST"
)

// problemType is the type URI of a problem with code c.
func problemType(c string) string { return "urn:stepwise:error:" + c }

// StatusOf is the HTTP status of an error of the service or the engine,
// by its code and, for the codes not named here, its category: the one
// mapping of the API.
func StatusOf(errCode, category string) int {
	switch errCode {
	case CodeArgumentsInvalid, service.CodeUnsafeName:
		return http.StatusBadRequest
	case code.TokenExpired, code.PauseTimedOut:
		return http.StatusGone // the pause the token names is over (or its token must be read afresh)
	case code.TokenInvalid, code.TokenAlreadyUsed:
		return http.StatusConflict // the token does not match the run's open pause
	case code.ShuttingDown:
		return http.StatusServiceUnavailable
	case code.SecretInClear:
		return http.StatusUnprocessableEntity
	}
	switch category {
	case code.CategoryValidation, code.CategoryExecution:
		return http.StatusUnprocessableEntity
	case code.CategoryNotFound:
		return http.StatusNotFound
	case code.CategoryConflict, code.CategoryAuth:
		return http.StatusConflict
	case service.CategorySecurity:
		return http.StatusForbidden
	}
	return http.StatusInternalServerError
}

// problemOf maps any error to a problem. Internal errors keep their detail
// in the log only (found by the correlation id).
func problemOf(log *slog.Logger, r *http.Request, err error) Problem {
	var p Problem
	var ee *service.Error
	var be *expr.BudgetError
	switch {
	case errors.As(err, &ee):
		p = Problem{Code: ee.Code, Category: ee.Category, Detail: ee.Error(), Retryable: ee.Retryable || ee.Code == code.ShuttingDown,
			RunID: ee.RunID, StepID: ee.StepID, Argument: ee.Argument, Suggestion: ee.Suggestion, Violations: ee.Violations}
		if len(ee.Violations) > 0 {
			p.Detail = ee.Message
		}
		if p.Category == "" {
			p.Category = code.CategoryInternal
		}
	case errors.As(err, &be):
		p = Problem{Code: code.ExpressionBudget, Category: code.CategoryExecution, Detail: err.Error(),
			Suggestion: "make the expression build less: it may not allocate more than the evaluation's memory limit"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		p = Problem{Code: CodeCanceled, Category: code.CategoryExecution, Detail: "the request ended before its answer", Retryable: true,
			Suggestion: "a run it started goes on: list the runs to find it"}
		p.Status = http.StatusServiceUnavailable
	default:
		p = Problem{Code: code.Internal, Category: code.CategoryInternal, Retryable: true,
			Detail: "internal error", CorrelationID: uuid.Must(uuid.NewV7()).String(),
			Suggestion: "retry; if it persists, report the correlation id"}
		log.Error("api: internal error", "path", r.URL.Path, "correlation_id", p.CorrelationID, "error", err)
	}
	if p.Status == 0 {
		p.Status = StatusOf(p.Code, p.Category)
	}
	return p
}

// argumentsError is a request whose body or parameters do not fit.
func argumentsError(arg, msg string, vs ...workflow.Violation) error {
	return &service.Error{Code: CodeArgumentsInvalid, Category: code.CategoryValidation, Argument: arg, Message: msg, Violations: vs,
		Suggestion: "fix the request as the OpenAPI document (/api/openapi.json) says and send it again"}
}

// writeProblem answers with p as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if p.Type == "" {
		p.Type = problemType(p.Code)
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	p.Instance = r.URL.Path
	if p.Status == http.StatusServiceUnavailable && p.Retryable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, p.Status, "application/problem+json", p)
}

// fail answers with the problem of err.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeProblem(w, r, problemOf(h.log, r, err))
}

// writeJSON answers with v as JSON of the media type.
func writeJSON(w http.ResponseWriter, status int, mediaType string, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"type":"urn:stepwise:error:INTERNAL","title":"Internal Server Error","status":500,"code":"INTERNAL","detail":"the answer could not be encoded"}`)
		mediaType = "application/problem+json"
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

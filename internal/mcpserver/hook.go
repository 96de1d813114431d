package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// Headers of a webhook delivery.
const (
	headerHookSignature = "X-Stepwise-Signature"
	headerHookDelivery  = "X-Stepwise-Delivery"
)

// hookStatus is the HTTP status of a webhook's refusal, by error code.
var hookStatus = map[string]int{
	service.CodeHookNotFound:     http.StatusNotFound,
	service.CodeHookUnavailable:  http.StatusServiceUnavailable,
	service.CodeSignatureInvalid: http.StatusUnauthorized,
	service.CodeDeliveryReplayed: http.StatusConflict,
	code.InputInvalid:            http.StatusBadRequest,
}

// HookHandler serves POST /hooks/{name}: the signed body of a delivery
// starts a run of the library workflow declaring the hook (see
// service.Hook), answered 202 {run_id, status}. It authenticates by the
// signature, not by bearer token: senders such as GitHub sign, they do not
// log in.
func (s *Server) HookHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeHookError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "a webhook takes POST", "")
			return
		}
		if !s.ready.isOpen() {
			writeHookError(w, http.StatusServiceUnavailable, "STARTING", "the server is starting", "send again in a moment")
			return
		}
		body, ok := readBoundedBody(w, r, service.MaxHookBody, "the limit of a webhook")
		if !ok {
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		res, err := s.svc.Hook(ctx, service.HookRequest{Name: name, Body: body,
			Signature: r.Header.Get(headerHookSignature), Delivery: r.Header.Get(headerHookDelivery)})
		if err != nil {
			s.writeCallError(w, err, hookStatus, "webhook", "the run could not be started")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(res)
	})
}

// readBoundedBody reads r's body up to limit bytes; past it, or when the
// body cannot be read, it answers the request itself (413, 400) and ok is
// false.
func readBoundedBody(w http.ResponseWriter, r *http.Request, limit int64, limitWords string) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeHookError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE", "the body is larger than "+limitWords, "")
			return nil, false
		}
		writeHookError(w, http.StatusBadRequest, "BODY_UNREADABLE", "the body could not be read", "")
		return nil, false
	}
	return body, true
}

// writeCallError answers a refused HTTP call (a webhook, a callback): the
// status its code maps to in statuses (422 for other refusals, 500 for
// internal errors, which are logged, not shown), and
// {"error": {code, message, suggestion, violations?}}.
func (s *Server) writeCallError(w http.ResponseWriter, err error, statuses map[string]int, what, failed string) {
	var e *service.Error
	if !errors.As(err, &e) {
		s.log.Error(what, "error", err)
		writeHookError(w, http.StatusInternalServerError, code.Internal, failed, "")
		return
	}
	status, ok := statuses[e.Code]
	if !ok {
		status = http.StatusUnprocessableEntity
		if e.Category == code.CategoryInternal {
			status = http.StatusInternalServerError
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	out := map[string]any{"code": e.Code, "message": e.Message, "suggestion": e.Suggestion}
	if len(e.Violations) > 0 {
		out["violations"] = e.Violations
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"error": out})
}

func writeHookError(w http.ResponseWriter, status int, codeName, msg, suggestion string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": codeName, "message": msg, "suggestion": suggestion}})
}

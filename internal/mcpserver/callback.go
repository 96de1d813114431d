package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// callbackPath is where a pause's callback URL points: the pause's token
// follows it. A system that cannot call MCP tools answers the pause by
// POSTing the value there.
const callbackPath = "/callbacks/"

// maxCallbackBody bounds a callback's body (the value).
const maxCallbackBody = 1 << 20

// callbackURL is the pause's one-time callback URL, or "" when there is
// none: no HTTP surface, a stateless server (the run is the client's) or
// a secret, which never travels in a request a system sends for it.
func (s *Server) callbackURL(p *service.Pause) string {
	if s.opts.BaseURL == "" || s.opts.Stateless || p.Token == "" || p.HasSecret() {
		return ""
	}
	return s.opts.BaseURL + callbackPath + p.Token
}

// callbackStatus is the HTTP status of a refused callback, by error code.
var callbackStatus = map[string]int{
	code.TokenInvalid:     http.StatusNotFound,
	code.TokenExpired:     http.StatusGone,
	code.TokenAlreadyUsed: http.StatusConflict,
	code.RunFinished:      http.StatusConflict,
	code.RunPaused:        http.StatusConflict,
	code.RunBusy:          http.StatusConflict,
	code.SecretInClear:    http.StatusForbidden,
	code.AnswerInvalid:    http.StatusUnprocessableEntity,
	code.ShuttingDown:     http.StatusServiceUnavailable,
}

// CallbackHandler serves POST /callbacks/{token}: the body, one JSON
// value, answers the pause the token names as run_continue does (checked
// against the question or the agent step's output schema; nothing changes
// when it is refused). The URL is the credential (the token is signed and
// single-use: its pause closes with the answer), so it takes no bearer
// token. It answers 200 {run_id, step_id, status}.
func (s *Server) CallbackHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeHookError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "a callback takes POST", "")
			return
		}
		if !s.ready.isOpen() {
			writeHookError(w, http.StatusServiceUnavailable, "STARTING", "the server is starting", "send again in a moment")
			return
		}
		body, ok := readBoundedBody(w, r, maxCallbackBody, "1 MiB")
		if !ok {
			return
		}
		var value any
		if err := json.Unmarshal(body, &value); err != nil {
			writeHookError(w, http.StatusBadRequest, code.ArgumentsInvalid, "the body is not one JSON value: "+err.Error(),
				`send the answer as JSON: "text", 42, true, or an object for a form or an agent step's output`)
			return
		}
		token := r.PathValue("token")
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		res, err := s.svc.ContinueFromAgent(ctx, token, value)
		if err != nil {
			s.writeCallError(w, err, callbackStatus, "callback", "the answer could not be recorded")
			return
		}
		status := code.StatusRunning
		if v, err := s.svc.GetRunBrief(ctx, res.RunID); err == nil {
			status = v.Status
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"run_id": res.RunID, "step_id": res.StepID, "status": status})
	})
}

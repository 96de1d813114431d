package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// runStatuses are the statuses a list filters on.
var runStatuses = []string{code.StatusPending, code.StatusRunning, code.StatusWaiting, code.StatusPaused, code.StatusSucceeded, code.StatusFailed, code.StatusCanceled}

// start serves POST /api/runs.
func (h *Handler) start(w http.ResponseWriter, r *http.Request) {
	var in StartRequest
	if !h.decodeBody(w, r, &in) {
		return
	}
	wait, err := waitFor(in.WaitSeconds, h.opts.DefaultWait)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ctx := r.Context()
	var l *service.Loaded
	switch {
	case in.Workflow != "" && in.Definition != "":
		err = argumentsError("workflow", "give workflow or definition, not both")
	case in.Workflow != "":
		l, err = h.svc.LoadRunnable(in.Workflow)
	case in.Definition != "":
		l, err = h.svc.Parse([]byte(in.Definition))
	default:
		err = argumentsError("workflow", "give workflow (a library name) or definition (YAML or JSON text)")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	sub := h.svc.Subscribe() // before the start: the wait misses none of its events
	defer sub.Close()
	id, err := h.svc.StartRun(ctx, l, in.Inputs, false)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.svc.AwaitBrief(ctx, id, wait, sub, nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	run := runOf(v)
	run.Draft = l.Draft
	w.Header().Set("Location", "/api/runs/"+id)
	writeJSON(w, http.StatusCreated, "application/json", run)
}

// get serves GET /api/runs/{run_id}.
func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	var q GetQuery
	if err := decodeQuery(r, &q); err != nil {
		h.fail(w, r, err)
		return
	}
	wait, err := waitFor(&q.WaitSeconds, 0)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	v, err := h.svc.AwaitBrief(r.Context(), r.PathValue("run_id"), wait, nil, nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", runOf(v))
}

// list serves GET /api/runs.
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	var q ListQuery
	if err := decodeQuery(r, &q); err != nil {
		h.fail(w, r, err)
		return
	}
	f := service.RunFilter{Workflow: q.Workflow, Cursor: q.Cursor, Limit: q.Limit, CreatedAfter: q.Since}
	switch {
	case q.Limit == 0:
		f.Limit = 20
	case q.Limit < 0 || q.Limit > 200:
		h.fail(w, r, argumentsError("limit", "limit is between 1 and 200"))
		return
	}
	if q.Status != "" {
		if !slices.Contains(runStatuses, q.Status) {
			h.fail(w, r, argumentsError("status", fmt.Sprintf("status %q: use one of %s", q.Status, strings.Join(runStatuses, ", "))))
			return
		}
		f.Status = []string{q.Status}
	}
	runs, next, err := h.svc.ListRuns(r.Context(), f)
	if errors.Is(err, service.ErrCursorInvalid) {
		err = argumentsError("cursor", "cursor is not valid: use next_cursor exactly as returned, with the same filters")
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := RunList{Runs: make([]RunLine, 0, len(runs)), NextCursor: next}
	for _, v := range runs {
		out.Runs = append(out.Runs, RunLine{RunID: v.ID, Workflow: v.Workflow, Status: v.Status, CreatedAt: v.CreatedAt, FinishedAt: v.FinishedAt, ParentID: v.ParentID})
	}
	writeJSON(w, http.StatusOK, "application/json", out)
}

// continueRun serves POST /api/runs/{run_id}/continue.
func (h *Handler) continueRun(w http.ResponseWriter, r *http.Request) {
	var in ContinueRequest
	if !h.decodeBody(w, r, &in) {
		return
	}
	wait, err := waitFor(in.WaitSeconds, h.opts.DefaultWait)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if strings.TrimSpace(in.Token) == "" {
		h.fail(w, r, argumentsError("token", "token is required: the open pause's token, exactly as returned"))
		return
	}
	ctx := r.Context()
	id := r.PathValue("run_id")
	if _, err := h.svc.GetRunBrief(ctx, id); err != nil {
		h.fail(w, r, err)
		return
	}
	if h.svc.TokenAuthentic(in.Token) && !h.svc.TokenBelongsTo(ctx, in.Token, id) {
		h.fail(w, r, &service.Error{Code: code.TokenInvalid, Category: code.CategoryAuth, RunID: id, Argument: "token",
			Message: "the token is of another run's pause", Suggestion: "answer it at that run's continue, or read this run for its own pause's token"})
		return
	}
	sub := h.svc.Subscribe()
	defer sub.Close()
	res, err := h.svc.Continue(ctx, in.Token, in.Value)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var v *service.RunView
	if res.RunID == id {
		v, err = h.svc.AwaitContinued(ctx, id, res, wait, sub, nil)
	} else { // a sub-workflow's pause: follow the run the caller named
		v, err = h.svc.AwaitBrief(ctx, id, wait, sub, nil)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", runOf(v))
}

// cancel serves POST /api/runs/{run_id}/cancel.
func (h *Handler) cancel(w http.ResponseWriter, r *http.Request) {
	var in CancelRequest
	if !h.decodeBody(w, r, &in) {
		return
	}
	ctx := r.Context()
	id := r.PathValue("run_id")
	if err := h.svc.Cancel(ctx, id, in.Reason, in.Compensate); err != nil {
		h.fail(w, r, err)
		return
	}
	var wait time.Duration
	if in.Compensate {
		wait = h.opts.DefaultWait // compensations run before the run is canceled
	}
	v, err := h.svc.AwaitBrief(ctx, id, wait, nil, nil)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", runOf(v))
}

// runOf shapes a run view.
func runOf(v *service.RunView) Run {
	run := Run{RunID: v.ID, Workflow: v.Workflow, Version: v.Version, Status: v.Status, Inputs: v.Inputs, Outputs: v.Outputs,
		Pause: v.Pause, ParentID: v.ParentID, CreatedAt: v.CreatedAt, FinishedAt: v.FinishedAt}
	if len(v.Error) > 0 {
		var e service.RunError
		if json.Unmarshal(v.Error, &e) == nil {
			run.Error = &e
		}
	}
	return run
}

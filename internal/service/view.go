package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
)

// RunView is a run as surfaces show it: secrets masked, the open pause with
// its token, outputs, error and a summary of the steps.
type RunView struct {
	ID         string          `json:"run_id"`
	Workflow   string          `json:"workflow"`
	Version    string          `json:"version"`
	Status     string          `json:"status"`
	Inputs     map[string]any  `json:"inputs,omitempty"`
	Outputs    map[string]any  `json:"outputs,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
	Pause      *engine.Pause   `json:"pause,omitempty"`
	Steps      []StepView      `json:"steps,omitempty"`
	Children   []string        `json:"children,omitempty"`
	ParentID   string          `json:"parent_id,omitempty"`
	CreatedAt  time.Time       `json:"created_at"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	// Queue is where a queued run waits (status queued only).
	Queue *QueueView `json:"queue,omitempty"`
	// UpdatedAt is when the run was last written (the store's clock).
	UpdatedAt time.Time `json:"-"`
}

// QueueView is a queued run's place: its workflow's concurrency limit, the
// key's value and how many runs of the queue are ahead of it.
type QueueView struct {
	Key   string `json:"key,omitempty"`
	Limit int    `json:"limit"`
	Ahead int    `json:"ahead"`
}

// queueOf is a queued run's QueueView (nil for other runs, or when the
// position could not be read: one indexed count).
func (s *Service) queueOf(ctx context.Context, run store.Run) *QueueView {
	if run.Status != store.StatusQueued {
		return nil
	}
	n, err := s.Store.QueuePosition(ctx, run.ID)
	if err != nil {
		return nil
	}
	return &QueueView{Key: run.ConcurrencyKey, Limit: run.ConcurrencyLimit, Ahead: n}
}

// StepView is one recorded step execution.
type StepView struct {
	ID string `json:"id"`
	// Key names a nested instance (a foreach item's step "each[3].work"),
	// a compensation or a hook, when it differs from ID.
	Key        string    `json:"key,omitempty"`
	Visit      int       `json:"visit,omitempty"`
	Status     string    `json:"status"`
	Output     any       `json:"output,omitempty"`
	Answer     any       `json:"answer,omitempty"`
	Error      string    `json:"error,omitempty"`
	Attempts   int       `json:"attempts,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
}

// redact is what a view shows of a secret part of a value.
func redact(any) any { return secret.Redacted }

// GetRun returns a run's view.
func (s *Service) GetRun(ctx context.Context, id string) (*RunView, error) {
	if err := s.storedRuns("reading a stored run"); err != nil { // stateless.go
		return nil, err
	}
	run, err := s.Store.GetRun(ctx, id)
	if err != nil {
		s.views.drop(id)
		return nil, runNotFound(id, err)
	}
	v := s.summary(ctx, run)
	v.Queue = s.queueOf(ctx, run)
	rows, kept := s.views.get(run)
	if !kept {
		if rows.steps, err = s.Store.Steps(ctx, id); err != nil {
			return nil, err
		}
	}
	wf, sec, _ := s.Engine.RunSecrets(ctx, run)
	for _, st := range rows.steps {
		sv := StepView{ID: st.StepID, Visit: st.Visit, Status: st.Status, Error: st.Error, Attempts: st.Attempts,
			StartedAt: st.StartedAt, DurationMS: st.FinishedAt.Sub(st.StartedAt).Milliseconds()}
		if sv.Visit == 1 {
			sv.Visit = 0
		}
		if st.Key != st.StepID {
			sv.Key = st.Key
		}
		_ = json.Unmarshal(st.Output, &sv.Output)
		if sec != nil && sv.Output != nil {
			// Secret by provenance, however short: stored sealed.
			sv.Output = sec.OutputShape(st.StepID).Apply(sv.Output, redact, nil)
		}
		if len(st.Answer) > 0 {
			secret := wf != nil && sec.Answer(st.StepID)
			if secret {
				sv.Answer = "***"
			} else {
				_ = json.Unmarshal(st.Answer, &sv.Answer)
			}
		}
		v.Steps = append(v.Steps, sv)
	}
	if kept || s.keepable(ctx, run, len(rows.steps)) {
		// A run without children: its own open pauses are all it shows.
		if run.Status == store.StatusWaiting && !kept {
			if rows.pauses, err = s.Store.OpenPauses(ctx, id); err != nil {
				return v, nil // as pause: a failed read shows no pause
			}
		}
		if !kept || (rows.pause != nil && !s.Engine.TokenFresh(rows.pause.ExpiresAt)) {
			// Signed afresh when read, and when the kept token nears its
			// expiry: the pause stays open, a read gives a token that works.
			rows.pause = s.ownPause(id, rows.pauses)
			s.views.keep(run, rows)
		}
		if rows.pause != nil {
			p := *rows.pause // each view its own copy of the kept one
			v.Pause = &p
		}
		return v, nil
	}
	// The children are read once, for the view and for the pauses the run
	// inherits from them (none for a workflow without sub-workflow steps).
	kids, err := s.Engine.Children(ctx, run)
	if err == nil {
		for i := len(kids) - 1; i >= 0; i-- {
			v.Children = append(v.Children, kids[i].ID+" ("+kids[i].Workflow+", "+kids[i].Status+")")
		}
	}
	if run.Status == store.StatusWaiting {
		v.Pause = s.pause(ctx, run, kids, err == nil)
	}
	return v, nil
}

// GetRunBrief returns a run's view without its steps and children: the
// status, outputs, error and open pause that a tool's result shows after
// the run moved (run_start, run_continue). It reads no steps, which a run
// that has been going for long has many of.
func (s *Service) GetRunBrief(ctx context.Context, id string) (*RunView, error) {
	if err := s.storedRuns("reading a stored run"); err != nil { // stateless.go
		return nil, err
	}
	run, err := s.Store.GetRun(ctx, id)
	if err != nil {
		return nil, runNotFound(id, err)
	}
	return s.briefOf(ctx, run), nil
}

// briefOf is GetRunBrief of a run row just read (watchRun returns one):
// the row is not read again, its open pause is.
func (s *Service) briefOf(ctx context.Context, run store.Run) *RunView {
	v := s.summary(ctx, run)
	v.Queue = s.queueOf(ctx, run)
	if run.Status == store.StatusWaiting {
		v.Pause = s.pause(ctx, run, nil, false)
	}
	return v
}

// pause is the open pause a waiting run shows: its own or, when it waits
// on a paused sub-workflow, the child's. known says kids are the run's
// children already read.
func (s *Service) pause(ctx context.Context, run store.Run, kids []store.Run, known bool) *engine.Pause {
	var ps []engine.Pause
	var err error
	if !known {
		kids, err = s.Engine.Children(ctx, run)
	}
	if err == nil && len(kids) < engine.MaxChildren {
		ps, err = s.Engine.PausesWith(ctx, run.ID, kids)
	} else {
		ps, err = s.Engine.Pauses(ctx, run.ID)
	}
	if err != nil || len(ps) == 0 {
		return nil
	}
	return &ps[0]
}

// summary is the part of a view that needs only the run row.
func (s *Service) summary(ctx context.Context, run store.Run) *RunView {
	v := &RunView{ID: run.ID, Workflow: run.Workflow, Version: run.Version, Status: run.Status, Error: run.Error,
		ParentID: run.ParentID, CreatedAt: run.CreatedAt, UpdatedAt: run.UpdatedAt}
	if !run.FinishedAt.IsZero() {
		t := run.FinishedAt
		v.FinishedAt = &t
	}
	_ = json.Unmarshal(run.Outputs, &v.Outputs)
	var inputs map[string]any
	okInputs := json.Unmarshal(run.Inputs, &inputs) == nil
	if !okInputs && len(v.Outputs) == 0 {
		return v
	}
	wf, sec, err := s.Engine.RunSecrets(ctx, run)
	if err == nil && sec.HasRunOutputs() {
		for name, out := range v.Outputs {
			v.Outputs[name] = sec.RunOutputShape(name).Apply(out, redact, nil) // stored sealed
		}
	}
	if okInputs {
		if err == nil {
			for name := range wf.Inputs {
				if sec.Input(name) && inputs[name] != nil {
					inputs[name] = secret.Redacted
				}
			}
		}
		v.Inputs = inputs
	}
	return v
}

// ErrCursorInvalid is the error of a run list cursor no list gave.
var ErrCursorInvalid = errors.New("the cursor is not one a list gave")

// ListRuns lists runs, newest first.
func (s *Service) ListRuns(ctx context.Context, f store.RunFilter) ([]*RunView, string, error) {
	if err := s.storedRuns("the run history"); err != nil { // stateless.go
		return nil, "", err
	}
	runs, next, err := s.Store.ListRuns(ctx, f)
	if errors.Is(err, store.ErrBadCursor) {
		return nil, "", fmt.Errorf("%w: %w", ErrCursorInvalid, err)
	}
	if err != nil {
		return nil, "", err
	}
	out := make([]*RunView, len(runs))
	for i, r := range runs {
		out[i] = s.summary(ctx, r)
		out[i].Inputs = nil
	}
	return out, next, nil
}

// Events returns a run's events after seq.
func (s *Service) Events(ctx context.Context, runID string, after int64, limit int) ([]store.Event, error) {
	if err := s.storedRuns("a stored run's events"); err != nil { // stateless.go
		return nil, err
	}
	if _, err := s.Store.GetRun(ctx, runID); err != nil {
		return nil, runNotFound(runID, err)
	}
	return s.Store.Events(ctx, runID, after, limit)
}

func runNotFound(id string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &engine.Error{Code: engine.CodeRunNotFound, Category: engine.CategoryNotFound, Message: "no run " + id, RunID: id, Err: err,
			Suggestion: "list the runs and use a run id from the list"}
	}
	return err
}

// StepPage is one page of a run's recorded steps.
type StepPage struct {
	Steps []StepView
	// From is the index of the page's first step among all of the run's.
	From int
	// Next reads the steps after this page ("" when it ends the list).
	Next string
}

// Step pages are bounded: at most MaxStepPage steps, and no more steps
// than fit stepPageBytes of JSON once the first is in (a step's output is
// never cut, so every output can be read).
const (
	DefaultStepPage = 10
	MaxStepPage     = 50
	stepPageBytes   = 64 << 10
)

// ErrStepCursor is the error of a step cursor that is not one a page gave.
var ErrStepCursor = errors.New("the steps cursor is not valid: use next_cursor exactly as returned")

// StepCursor is the cursor of the page that starts at the index-th step.
func StepCursor(index int) string { return "s" + strconv.Itoa(index) }

// PageSteps returns the page of steps that cursor starts ("" for the
// first), at most limit steps (DefaultStepPage when 0, at most MaxStepPage).
func PageSteps(steps []StepView, cursor string, limit int) (StepPage, error) {
	page, from, next, err := Page(steps, cursor, limit, DefaultStepPage, MaxStepPage, stepPageBytes)
	if err != nil {
		return StepPage{}, err
	}
	return StepPage{Steps: page, From: from, Next: next}, nil
}

// Page returns the page of items that cursor (StepCursor; "" for the
// first) starts: at most limit items (def when 0, at most max), and no
// more than fit maxBytes of JSON once the first is in. next is the cursor
// of the following page, "" at the end; a cursor no page gave is
// ErrStepCursor.
func Page[T any](items []T, cursor string, limit, def, max, maxBytes int) (page []T, from int, next string, err error) {
	if cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(cursor, "s"))
		if err != nil || !strings.HasPrefix(cursor, "s") || n < 0 || n > len(items) {
			return nil, 0, "", ErrStepCursor
		}
		from = n
	}
	if limit <= 0 {
		limit = def
	}
	limit = min(limit, max)
	size := 0
	for i := from; i < len(items) && len(page) < limit; i++ {
		b, _ := json.Marshal(items[i])
		if size += len(b); len(page) > 0 && size > maxBytes {
			break
		}
		page = append(page, items[i])
	}
	if end := from + len(page); end < len(items) {
		next = StepCursor(end)
	}
	return page, from, next, nil
}

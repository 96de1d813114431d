package stepwise

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// Run is a run as its caller sees it: secret values are masked.
type Run struct {
	ID       string
	Workflow string
	// Status is one of code's Status constants.
	Status string
	// Outputs are the workflow's outputs, once it succeeded.
	Outputs map[string]any
	// Error is why a failed run failed (nil otherwise).
	Error *RunError
	// Pause is the open pause of a waiting run (nil otherwise): answer it
	// with Continue and its Token.
	Pause     *Pause
	CreatedAt time.Time
}

// RunError is what a failed run recorded.
type RunError struct {
	// Code classifies the failure when one applies (code.StepCrashed,
	// code.NetworkNotAllowed …); often "".
	Code    string
	Message string
	// StepID and Action name the step that failed and what it used.
	StepID string
	Action string
}

// recordedError is the JSON a run records as its error (service.RunError).
type recordedError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	StepID  string `json:"step_id"`
	Action  string `json:"action"`
}

// Pause is an open pause: a question (or form) for a person, or a task
// for an agent.
type Pause struct {
	// Kind is code.PauseQuestion or code.PauseAgent.
	Kind   string
	StepID string
	// Token continues the run (Continue); it is signed, works once, and
	// expires at ExpiresAt.
	Token     string
	ExpiresAt time.Time
	// Title heads a form or agent task.
	Title string
	// Question is a question pause's question (nil for a form or an agent
	// task).
	Question *Question
	// Fields are a form's questions: the answer is an object of them.
	Fields []Question
	// Instructions and OutputSchema are an agent task's: the answer is an
	// output fitting the schema.
	Instructions string
	OutputSchema map[string]any
}

// Question is a question as shown to whoever answers it: prompt and
// default rendered, computed choices resolved.
type Question struct {
	// Name is a form field's name ("" for a lone question).
	Name   string
	Prompt string
	// Type is the answer's type: string, number, integer, boolean,
	// choice, multi_choice … (the workflow's ask.type).
	Type    string
	Choices []Choice
	// Default is the answer Continue takes for a nil value (nil: none).
	Default any
	Help    string
	// Secret: the answer is sealed when stored and never shown again.
	Secret bool
}

// Choice is one allowed answer of a choice question.
type Choice struct {
	Value any
	Label string
}

// Start starts a run of the library workflow name with inputs and
// returns it as it is then (often still running: Wait follows it). Inputs
// that do not fit the workflow are refused (code.InputInvalid) and no
// run is created.
func (e *Engine) Start(ctx context.Context, name string, inputs map[string]any) (*Run, error) {
	l, err := e.svc.LoadRunnable(name)
	if err != nil {
		return nil, errorOf(err)
	}
	return e.start(ctx, l, inputs)
}

// StartDefinition is Start of a workflow definition (YAML or JSON) that
// need not be in the library. An invalid definition is refused
// (code.WorkflowInvalid, with violations).
func (e *Engine) StartDefinition(ctx context.Context, source []byte, inputs map[string]any) (*Run, error) {
	l, err := e.svc.Parse(source)
	if err != nil {
		return nil, errorOf(err)
	}
	return e.start(ctx, l, inputs)
}

func (e *Engine) start(ctx context.Context, l *service.Loaded, inputs map[string]any) (*Run, error) {
	id, err := e.svc.StartRun(ctx, l, inputs, false)
	if err != nil {
		return nil, errorOf(err)
	}
	return e.Get(ctx, id)
}

// Continue answers the pause token names with value (nil takes a
// question's default) and returns the run it belongs to — the top-level
// run, for a sub-workflow's pause — as it is then. A value that does not
// fit is refused (code.AnswerInvalid, with violations): nothing changes
// and the token still works.
func (e *Engine) Continue(ctx context.Context, token string, value any) (*Run, error) {
	res, err := e.svc.Continue(ctx, token, value)
	if err != nil {
		return nil, errorOf(err)
	}
	id := res.RunID
	if res.ParentID != "" {
		if id, err = e.svc.RootRun(ctx, res.ParentID); err != nil {
			return nil, errorOf(err)
		}
	}
	return e.Get(ctx, id)
}

// Get returns a run (code.RunNotFound for an unknown id).
func (e *Engine) Get(ctx context.Context, runID string) (*Run, error) {
	v, err := e.svc.GetRunBrief(ctx, runID)
	if err != nil {
		return nil, errorOf(err)
	}
	return runOf(v), nil
}

// Wait waits until the run no longer runs — it waits on a pause, is held
// or finished — or ctx ends, and returns it.
func (e *Engine) Wait(ctx context.Context, runID string) (*Run, error) {
	if _, err := e.svc.Wait(ctx, runID, 0); err != nil {
		return nil, errorOf(err)
	}
	return e.Get(ctx, runID)
}

// Cancel cancels an unfinished run and its sub-workflow runs, recording
// reason. A finished run is refused (code.RunFinished).
func (e *Engine) Cancel(ctx context.Context, runID, reason string) error {
	return errorOf(e.svc.Cancel(ctx, runID, reason, false))
}

// ListOptions select the runs List returns.
type ListOptions struct {
	// Workflow keeps the runs of that workflow ("": all).
	Workflow string
	// Status keeps the runs in one of these statuses (none: all).
	Status []string
	// Limit is the page size (0: 50; at most 1000).
	Limit int
	// Cursor is the next cursor of a previous page ("": the first).
	Cursor string
}

// List returns runs, newest first, and the cursor of the next page (""
// when this was the last). Their Pause is not read (Get reads it).
func (e *Engine) List(ctx context.Context, o ListOptions) ([]*Run, string, error) {
	views, next, err := e.svc.ListRuns(ctx, service.RunFilter{Workflow: o.Workflow, Status: o.Status, Limit: o.Limit, Cursor: o.Cursor})
	if errors.Is(err, service.ErrCursorInvalid) {
		return nil, "", &Error{Code: code.ArgumentsInvalid, Message: "the cursor is not one a list gave", err: err}
	}
	if err != nil {
		return nil, "", errorOf(err)
	}
	runs := make([]*Run, len(views))
	for i, v := range views {
		runs[i] = runOf(v)
	}
	return runs, next, nil
}

// runOf converts the service's view at the boundary.
func runOf(v *service.RunView) *Run {
	r := &Run{ID: v.ID, Workflow: v.Workflow, Status: v.Status, Outputs: v.Outputs, CreatedAt: v.CreatedAt}
	if len(v.Error) > 0 {
		var re recordedError
		if json.Unmarshal(v.Error, &re) != nil {
			re.Message = string(v.Error)
		}
		r.Error = &RunError{Code: re.Code, Message: re.Message, StepID: re.StepID, Action: re.Action}
	}
	if p := v.Pause; p != nil {
		r.Pause = pauseOf(p)
	}
	return r
}

func pauseOf(p *service.Pause) *Pause {
	out := &Pause{Kind: p.Kind, StepID: p.StepID, Token: p.Token, ExpiresAt: p.ExpiresAt, Title: p.Title,
		Instructions: p.Instructions, OutputSchema: p.OutputSchema}
	if p.Kind == code.PauseQuestion {
		if len(p.Fields) > 0 {
			for _, f := range p.Fields {
				out.Fields = append(out.Fields, questionOf(f))
			}
		} else {
			q := questionOf(p.Question)
			out.Question = &q
		}
	}
	return out
}

func questionOf(q service.Question) Question {
	out := Question{Name: q.Name, Prompt: q.Prompt, Type: q.Type, Default: q.Default, Help: q.Help, Secret: q.Secret}
	for _, c := range q.Choices {
		out.Choices = append(out.Choices, Choice{Value: c.Value, Label: c.Label})
	}
	return out
}

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// RunResult is what run_start, run_continue and run_get return.
type RunResult struct {
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow,omitempty"`
	// Draft: run_start ran the draft of that name (no saved workflow has it).
	Draft bool `json:"draft,omitempty"`
	// Status is queued | pending | running | waiting | paused | succeeded | failed | canceled.
	Status string `json:"status"`
	// Queue, for a queued run: its concurrency key, limit, and how many
	// runs of its queue are ahead of it.
	Queue   *service.QueueView `json:"queue,omitempty"`
	Outputs map[string]any     `json:"outputs,omitempty"`
	Pause   *PauseView         `json:"pause,omitempty"`
	// Error says why a failed run failed: the message and, when a step
	// failed, the step, its action and what an HTTP response said.
	Error *service.RunError `json:"error,omitempty"`
	// Steps summarizes the recorded steps (run_get, and every result of a
	// failed run).
	Steps *StepSummary `json:"steps,omitempty"`
	// Next says what to do next, in one sentence.
	Next string `json:"next"`
}

// runRef names the run, for an error about the result.
func (r RunResult) runRef() string { return r.RunID }

// Summary implements summarizer.
func (r RunResult) Summary() string {
	what := r.Workflow
	if r.Draft {
		what += ", a draft"
	}
	s := fmt.Sprintf("run %s (%s) %s.", r.RunID, what, statusPhrase(r.Status))
	if r.Pause != nil {
		if r.Pause.Kind == code.PauseAgent {
			s += " It waits for you (agent step " + r.Pause.StepID + ")."
		} else {
			s += fmt.Sprintf(" It asks: %q", r.Pause.Prompt)
		}
	}
	return s + " " + r.Next
}

// statusPhrase reads a run status as a sentence's verb.
func statusPhrase(status string) string {
	switch status {
	case "succeeded", "failed":
		return status
	case "canceled":
		return "was canceled"
	default:
		return "is " + status
	}
}

// StepSummary counts recorded steps and shows the last few, or one page
// of them.
type StepSummary struct {
	Total     int `json:"total"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// Recent are the last steps (up to 10), when no steps_cursor was given.
	Recent []service.StepView `json:"recent,omitempty"`
	// Page are the steps from the step numbered From (0 is the first), when
	// run_get was given steps_cursor.
	Page []service.StepView `json:"page,omitempty"`
	From int                `json:"from,omitempty"`
	// NextCursor reads the steps not shown: call run_get with steps_cursor
	// set to it — from the first step when Recent shows the last ones, else
	// the page after Page.
	NextCursor string `json:"next_cursor,omitempty"`
	// Completed are the ids (keys, in loops and groups) of the steps that
	// succeeded, in order, and FailedSteps those that failed: a failed
	// run's results only; at most the last 100 of each.
	Completed   []string `json:"completed,omitempty"`
	FailedSteps []string `json:"failed_steps,omitempty"`
	Children    []string `json:"children,omitempty"`
}

// maxStepIDs bounds the Completed and FailedSteps lists.
const maxStepIDs = 100

// PauseView is an open pause as an agent sees it. Secret questions carry
// no value ever; they say how the person answers them.
type PauseView struct {
	// Kind is "question" (for a person) or "agent" (for you).
	Kind   string `json:"kind"`
	StepID string `json:"step_id"`
	// RunID is the run the pause belongs to (a sub-workflow's run when a
	// child paused).
	RunID     string    `json:"run_id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	Title     string    `json:"title,omitempty"`

	Prompt  string            `json:"prompt,omitempty"`
	Help    string            `json:"help,omitempty"`
	Type    string            `json:"type,omitempty"`
	Choices []workflow.Choice `json:"choices,omitempty"`
	Pattern string            `json:"pattern,omitempty"`
	Min     *float64          `json:"min,omitempty"`
	Max     *float64          `json:"max,omitempty"`
	Default any               `json:"default,omitempty"`
	// Previous: Default is the answer given the last time (a revisit, or
	// the run this one was rewound or restarted from).
	Previous bool `json:"previous,omitempty"`
	Secret   bool `json:"secret,omitempty"`
	// ChoicesError: the question's choices could not be computed
	// (choices_from failed), so it takes free text.
	ChoicesError string             `json:"choices_error,omitempty"`
	Fields       []service.Question `json:"fields,omitempty"`

	Instructions string         `json:"instructions,omitempty"`
	Persona      string         `json:"persona,omitempty"`
	OutputSchema map[string]any `json:"output_schema,omitempty"`
	Context      any            `json:"context,omitempty"`
	// TimeoutAt is when the step's timeout ends this pause: an answer must
	// come before it (the step then fails and the token stops working).
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`

	// SecretURL is a one-time page where the person types a secret
	// (HTTP servers only). Give the person the link; never ask for the
	// secret yourself.
	SecretURL string `json:"secret_url,omitempty"`
	// CallbackURL answers the pause without MCP: POST the value (JSON) to
	// it; single-use, and valid while the token is (not for secrets).
	CallbackURL string `json:"callback_url,omitempty"`
	// HowToAnswer says how to answer this pause.
	HowToAnswer string `json:"how_to_answer"`
}

func (s *Server) pauseView(p *service.Pause) *PauseView {
	if p == nil {
		return nil
	}
	v := &PauseView{Kind: p.Kind, StepID: p.StepID, RunID: p.RunID, Token: p.Token, ExpiresAt: p.ExpiresAt, Title: p.Title,
		Prompt: p.Prompt, Help: p.Help, Type: p.Type, Choices: p.Choices, Pattern: p.Pattern, Min: p.Min, Max: p.Max,
		Default: p.Default, Previous: p.Previous, Secret: p.Secret, ChoicesError: p.ChoicesError, Fields: p.Fields,
		Instructions: p.Instructions, Persona: p.Persona, OutputSchema: p.OutputSchema, Context: p.Context, TimeoutAt: p.TimeoutAt,
		CallbackURL: s.callbackURL(p)}
	switch {
	case p.Kind == code.PauseAgent:
		v.HowToAnswer = "do what the instructions say, then call run_continue with this token and a value that matches output_schema"
	case p.HasSecret():
		if url := s.secretURL(p); url != "" {
			v.SecretURL = url
			v.HowToAnswer = "a secret: never ask for it in the chat. Give the person the secret_url (a one-time page); or call run_continue with value \"$NAME\", an environment variable of the server; or the person runs `stepwise resume " + p.RunID + "` in a terminal"
		} else {
			v.HowToAnswer = "a secret: never ask for it in the chat. Call run_continue with value \"$NAME\", an environment variable of the server that holds it, or ask the person to run `stepwise resume " + p.RunID + "` in a terminal"
		}
		if len(p.Fields) > 0 {
			v.HowToAnswer += " (form fields that are not secret take plain values)"
		}
	case len(p.Fields) > 0:
		v.HowToAnswer = "ask the person, then call run_continue with this token and an object with one value per field"
	default:
		v.HowToAnswer = "ask the person (or answer from what they told you), then call run_continue with this token and the value"
	}
	return v
}

// runResult shapes a run view.
func (s *Server) runResult(v *service.RunView, withSteps bool) RunResult {
	r, _ := s.runResultPage(v, withSteps, "", 0)
	return r
}

// runResultPage shapes a run view with its steps: the last few, or the
// page that stepsCursor starts (ARGUMENTS_INVALID for a cursor no page
// gave).
func (s *Server) runResultPage(v *service.RunView, withSteps bool, stepsCursor string, stepsLimit int) (RunResult, error) {
	r := RunResult{RunID: v.ID, Workflow: v.Workflow, Status: v.Status, Queue: v.Queue, Outputs: v.Outputs, Pause: s.pauseView(v.Pause)}
	if len(v.Error) > 0 {
		var e service.RunError
		if json.Unmarshal(v.Error, &e) == nil {
			r.Error = &e
		}
	}
	if withSteps {
		sum := &StepSummary{Children: v.Children}
		for _, st := range v.Steps {
			sum.Total++
			switch st.Status {
			case "succeeded":
				sum.Succeeded++
			case "failed":
				sum.Failed++
			case "skipped":
				sum.Skipped++
			}
		}
		if stepsCursor == "" {
			from := max(0, len(v.Steps)-service.DefaultStepPage)
			sum.Recent = v.Steps[from:]
			if from > 0 {
				sum.NextCursor = service.StepCursor(0)
			}
		} else {
			p, err := service.PageSteps(v.Steps, stepsCursor, stepsLimit)
			if err != nil {
				return RunResult{}, argumentsError("steps_cursor", err.Error())
			}
			sum.Page, sum.From, sum.NextCursor = p.Steps, p.From, p.Next
		}
		if v.Status == code.StatusFailed {
			for _, st := range v.Steps {
				id := st.ID
				if st.Key != "" {
					id = st.Key
				}
				switch st.Status {
				case "succeeded":
					sum.Completed = append(sum.Completed, id)
				case "failed":
					sum.FailedSteps = append(sum.FailedSteps, id)
				}
			}
			sum.Completed = sum.Completed[max(0, len(sum.Completed)-maxStepIDs):]
			sum.FailedSteps = sum.FailedSteps[max(0, len(sum.FailedSteps)-maxStepIDs):]
		}
		r.Steps = sum
	}
	r.Next = next(r)
	return r, nil
}

// withFailedSteps is the view a result shows: for a failed run, with its
// steps (the brief view reads none), so that the result lists what
// completed and what failed.
func (s *Server) withFailedSteps(ctx context.Context, v *service.RunView) (*service.RunView, bool) {
	if v.Status != code.StatusFailed || v.Steps != nil {
		return v, v.Steps != nil
	}
	full, err := s.svc.GetRun(ctx, v.ID)
	if err != nil {
		return v, false
	}
	return full, true
}

func next(r RunResult) string {
	switch r.Status {
	case code.StatusSucceeded:
		return "Done: the outputs are final."
	case code.StatusFailed:
		return "It failed: error says why; fix the cause and call run_retry (from the failed step), or run_fork from an earlier step."
	case code.StatusCanceled:
		return "It was canceled."
	case code.StatusWaiting:
		if r.Pause != nil {
			return "Answer the pause: " + r.Pause.HowToAnswer + "."
		}
		return "It waits (a sub-workflow or timer); follow it with run_get."
	case code.StatusPaused:
		return "An operator paused it: run_resume continues it."
	case code.StatusQueued:
		return "It is queued behind its workflow's concurrency limit and starts when a run of its queue finishes: follow it with run_get (wait_seconds), or run_cancel it."
	default:
		return "It is still working: call run_get with wait_seconds to follow it."
	}
}

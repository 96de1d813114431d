package mcpserver

import (
	"encoding/json"
	"fmt"
	"time"

	"stepwise.dev/stepwise/engine"
	"stepwise.dev/stepwise/service"
	"stepwise.dev/stepwise/store"
	"stepwise.dev/stepwise/workflow"
)

// RunResult is what run_start, run_continue and run_get return.
type RunResult struct {
	RunID    string `json:"run_id"`
	Workflow string `json:"workflow,omitempty"`
	// Status is pending | running | waiting | paused | succeeded | failed | canceled.
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs,omitempty"`
	Pause   *PauseView     `json:"pause,omitempty"`
	Error   any            `json:"error,omitempty"`
	// Steps summarizes the recorded steps (run_get).
	Steps *StepSummary `json:"steps,omitempty"`
	// Next says what to do next, in one sentence.
	Next string `json:"next"`
}

// Summary implements summarizer.
func (r RunResult) Summary() string {
	s := fmt.Sprintf("run %s (%s) %s.", r.RunID, r.Workflow, statusPhrase(r.Status))
	if r.Pause != nil {
		if r.Pause.Kind == engine.KindAgent {
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

// StepSummary counts recorded steps and shows the last few.
type StepSummary struct {
	Total     int                `json:"total"`
	Succeeded int                `json:"succeeded"`
	Failed    int                `json:"failed"`
	Skipped   int                `json:"skipped"`
	Recent    []service.StepView `json:"recent,omitempty"`
	Children  []string           `json:"children,omitempty"`
}

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
	Secret  bool              `json:"secret,omitempty"`
	// ChoicesError: the question's choices could not be computed
	// (choices_from failed), so it takes free text.
	ChoicesError string            `json:"choices_error,omitempty"`
	Fields       []engine.Question `json:"fields,omitempty"`

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
	// HowToAnswer says how to answer this pause.
	HowToAnswer string `json:"how_to_answer"`
}

func (s *Server) pauseView(p *engine.Pause) *PauseView {
	if p == nil {
		return nil
	}
	v := &PauseView{Kind: p.Kind, StepID: p.StepID, RunID: p.RunID, Token: p.Token, ExpiresAt: p.ExpiresAt, Title: p.Title,
		Prompt: p.Prompt, Help: p.Help, Type: p.Type, Choices: p.Choices, Pattern: p.Pattern, Min: p.Min, Max: p.Max,
		Default: p.Default, Secret: p.Secret, ChoicesError: p.ChoicesError, Fields: p.Fields,
		Instructions: p.Instructions, Persona: p.Persona, OutputSchema: p.OutputSchema, Context: p.Context, TimeoutAt: p.TimeoutAt}
	switch {
	case p.Kind == engine.KindAgent:
		v.HowToAnswer = "do what the instructions say, then call run_continue with this token and a value that matches output_schema"
	case hasSecret(p):
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

func hasSecret(p *engine.Pause) bool {
	if p.Secret {
		return true
	}
	for _, f := range p.Fields {
		if f.Secret {
			return true
		}
	}
	return false
}

// runResult shapes a run view.
func (s *Server) runResult(v *service.RunView, withSteps bool) RunResult {
	r := RunResult{RunID: v.ID, Workflow: v.Workflow, Status: v.Status, Outputs: v.Outputs, Pause: s.pauseView(v.Pause)}
	if len(v.Error) > 0 {
		var e any
		if json.Unmarshal(v.Error, &e) == nil {
			r.Error = e
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
		const recent = 10
		from := max(0, len(v.Steps)-recent)
		sum.Recent = v.Steps[from:]
		r.Steps = sum
	}
	r.Next = next(r)
	return r
}

func next(r RunResult) string {
	switch r.Status {
	case store.StatusSucceeded:
		return "Done: the outputs are final."
	case store.StatusFailed:
		return "It failed: error says why; fix the cause and call run_retry (from the failed step), or run_fork from an earlier step."
	case store.StatusCanceled:
		return "It was canceled."
	case store.StatusWaiting:
		if r.Pause != nil {
			return "Answer the pause: " + r.Pause.HowToAnswer + "."
		}
		return "It waits (a sub-workflow or timer); follow it with run_get."
	case store.StatusPaused:
		return "An operator paused it: run_resume continues it."
	default:
		return "It is still working: call run_get with wait_seconds to follow it."
	}
}

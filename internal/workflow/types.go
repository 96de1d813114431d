package workflow

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// Workflow is a parsed workflow definition (language version 1).
type Workflow struct {
	Version     int      `json:"version"`
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Env         []string `json:"env,omitempty"`
	// Timeout is the run's deadline, from its start.
	Timeout string `json:"timeout,omitempty"`
	// Concurrency limits how many runs of the workflow are active at once.
	Concurrency *Concurrency      `json:"concurrency,omitempty"`
	Inputs      map[string]*Input `json:"inputs,omitempty"`
	Steps       []*Step           `json:"steps"`
	Outputs     map[string]any    `json:"outputs,omitempty"`
	OnSuccess   []*Hook           `json:"on_success,omitempty"`
	OnFailure   []*Hook           `json:"on_failure,omitempty"`
	// Triggers start runs without a caller (schedules, webhooks).
	Triggers []*Trigger `json:"triggers,omitempty"`

	// InputOrder lists the input names in the order they were written.
	InputOrder []string `json:"-"`

	// secrets is the secret flow, computed on first use (Secrets).
	secrets atomic.Pointer[Secrets]
}

// Concurrency is a workflow's concurrency limit: at most Limit of its
// top-level runs are active (not queued, not finished) at once per value of
// Key, a template over the inputs evaluated when a run starts ("" when
// absent: one queue for the workflow). Runs beyond it wait, queued, and
// start in the order they were created.
type Concurrency struct {
	Limit int    `json:"limit"`
	Key   string `json:"key,omitempty"`
}

// Limits of a concurrency declaration.
const (
	MaxConcurrencyLimit = 10000
	// MaxConcurrencyKey is the longest concurrency key value (in bytes) a
	// run may have.
	MaxConcurrencyKey = 256
)

// Input declares one input of a workflow.
type Input struct {
	Type        string   `json:"type"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Enum        []any    `json:"enum,omitempty"`
	Default     any      `json:"default,omitempty"`
	Pattern     string   `json:"pattern,omitempty"`
	Minimum     *float64 `json:"minimum,omitempty"`
	Maximum     *float64 `json:"maximum,omitempty"`
	MinLength   *int     `json:"min_length,omitempty"`
	MaxLength   *int     `json:"max_length,omitempty"`
	// Required defaults to true when no default is given.
	Required *bool  `json:"required,omitempty"`
	Secret   bool   `json:"secret,omitempty"`
	Env      string `json:"env,omitempty"`

	// HasDefault reports whether a default was written (it may be null).
	HasDefault bool `json:"-"`
}

// IsRequired reports whether a value must be supplied for the input.
func (in *Input) IsRequired() bool {
	if in.Required != nil {
		return *in.Required
	}
	return !in.HasDefault
}

// Step kinds. Every step has exactly one.
const (
	KindUses     = "uses"
	KindAsk      = "ask"
	KindAgent    = "agent"
	KindWorkflow = "workflow"
	KindSleep    = "sleep"
	KindFail     = "fail"
	KindSwitch   = "switch"
	KindParallel = "parallel"
	KindForeach  = "foreach"
)

// Kinds lists the step kinds in the order the documentation gives them.
var Kinds = []string{KindUses, KindAsk, KindAgent, KindWorkflow, KindSleep, KindFail, KindSwitch, KindParallel, KindForeach}

// Step is one entry of a workflow's steps (or of a nested body).
type Step struct {
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	If          Cond   `json:"if,omitempty"`

	Uses     string         `json:"uses,omitempty"`
	With     map[string]any `json:"with,omitempty"`
	Ask      *Ask           `json:"ask,omitempty"`
	Agent    *Agent         `json:"agent,omitempty"`
	Workflow string         `json:"workflow,omitempty"`
	Sleep    *Sleep         `json:"sleep,omitempty"`
	Fail     *string        `json:"fail,omitempty"`
	Switch   []*Case        `json:"switch,omitempty"`
	Parallel []*Step        `json:"parallel,omitempty"`
	Foreach  any            `json:"foreach,omitempty"`
	// Steps is the body of a foreach.
	Steps []*Step `json:"steps,omitempty"`
	// Concurrency bounds a foreach or parallel group (default: 1 for
	// foreach, all branches for parallel).
	Concurrency int `json:"concurrency,omitempty"`

	Retry           *Retry  `json:"retry,omitempty"`
	Timeout         string  `json:"timeout,omitempty"`
	ContinueOnError bool    `json:"continue_on_error,omitempty"`
	Compensate      *Action `json:"compensate,omitempty"`
	Repeat          *Repeat `json:"repeat,omitempty"`
	MaxVisits       int     `json:"max_visits,omitempty"`

	// Path is the JSON pointer of the step in its document.
	Path string `json:"-"`
}

// Kind returns the step's kind, or "" when it has none (or several; the
// validator reports both).
func (s *Step) Kind() string {
	k := s.kinds()
	if len(k) != 1 {
		return ""
	}
	return k[0]
}

func (s *Step) kinds() []string {
	var k []string
	if s.Uses != "" {
		k = append(k, KindUses)
	}
	if s.Ask != nil {
		k = append(k, KindAsk)
	}
	if s.Agent != nil {
		k = append(k, KindAgent)
	}
	if s.Workflow != "" {
		k = append(k, KindWorkflow)
	}
	if s.Sleep != nil {
		k = append(k, KindSleep)
	}
	if s.Fail != nil {
		k = append(k, KindFail)
	}
	if s.Switch != nil {
		k = append(k, KindSwitch)
	}
	if s.Parallel != nil {
		k = append(k, KindParallel)
	}
	if s.Foreach != nil {
		k = append(k, KindForeach)
	}
	return k
}

// Cond is a condition: an expression written bare or as one ${{ }}. The
// YAML booleans true and false are accepted and kept as "true"/"false".
type Cond string

// UnmarshalJSON accepts a string or a boolean.
func (c *Cond) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case string:
		*c = Cond(x)
	case bool:
		*c = Cond(fmt.Sprint(x))
	case nil:
		*c = ""
	}
	// Other types are left empty; the schema pass reports them.
	return nil
}

// Ask is a question for a person, or a small form of questions (Fields).
type Ask struct {
	Prompt string `json:"prompt,omitempty"`
	// Type is string (default), integer, number, boolean, choice or
	// multi-choice.
	Type    string  `json:"type,omitempty"`
	Choices Choices `json:"choices,omitempty"`
	// ChoicesFrom computes the choices with an action when the question
	// is reached.
	ChoicesFrom *ChoicesFrom `json:"choices_from,omitempty"`
	Pattern     string       `json:"pattern,omitempty"`
	Min         *float64     `json:"min,omitempty"`
	Max         *float64     `json:"max,omitempty"`
	Default     any          `json:"default,omitempty"`
	Help        string       `json:"help,omitempty"`
	Secret      bool         `json:"secret,omitempty"`
	Env         string       `json:"env,omitempty"`
	// Auto is an expression; when it evaluates without error to a non-null
	// value, that value answers the question without asking.
	Auto   Cond     `json:"auto,omitempty"`
	Fields []*Field `json:"fields,omitempty"`
}

// ChoicesFrom is an action whose output, when a question is reached,
// gives its choices (dynamic choices).
type ChoicesFrom struct {
	Uses string         `json:"uses"`
	With map[string]any `json:"with,omitempty"`
	// Value is an expression over `output` (the action's output) giving
	// the list; empty means the output itself.
	Value   string `json:"value,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// QuestionType returns the question's type with the default applied.
func (a *Ask) QuestionType() string {
	if a.Type == "" {
		return "string"
	}
	return a.Type
}

// Field is one question of a form.
type Field struct {
	Name string `json:"name"`
	Ask
}

// Choices is a list of choices, or one expression that yields the list at
// run time.
type Choices struct {
	List []Choice
	// Expr is set when the choices are computed: choices: ${{ … }}.
	Expr string
}

// UnmarshalJSON accepts a list of choices or a template string.
func (c *Choices) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &c.Expr)
	case len(b) > 0 && b[0] == '[':
		return json.Unmarshal(b, &c.List)
	}
	return nil // wrong type: reported by the schema pass
}

// MarshalJSON writes the list or the expression.
func (c Choices) MarshalJSON() ([]byte, error) {
	if c.Expr != "" {
		return json.Marshal(c.Expr)
	}
	return json.Marshal(c.List)
}

// IsZero reports whether no choices were given.
func (c Choices) IsZero() bool { return c.Expr == "" && c.List == nil }

// Choice is one allowed answer of a choice question.
type Choice struct {
	Value       any    `json:"value"`
	Label       string `json:"label,omitempty"`
	Description string `json:"description,omitempty"`
}

// UnmarshalJSON accepts a bare scalar (value and label at once) or an object.
func (c *Choice) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		type plain Choice
		return json.Unmarshal(b, (*plain)(c))
	}
	return json.Unmarshal(b, &c.Value)
}

// Agent is a step the calling agent performs: instructions in, JSON out.
type Agent struct {
	Instructions string         `json:"instructions"`
	Persona      string         `json:"persona,omitempty"`
	OutputSchema map[string]any `json:"output_schema,omitempty"`
	Context      any            `json:"context,omitempty"`
}

// Sleep is a durable timer: a duration, or a point in time (Until).
type Sleep struct {
	Duration string `json:"duration,omitempty"`
	Until    string `json:"until,omitempty"`
}

// UnmarshalJSON accepts a duration string or an object.
func (s *Sleep) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &s.Duration)
	case len(b) > 0 && b[0] == '{':
		type plain Sleep
		return json.Unmarshal(b, (*plain)(s))
	}
	return nil // wrong type: reported by the schema pass
}

// Case is one branch of a switch: when If holds (or always, when If is
// empty) the run continues at the step Goto.
type Case struct {
	If   Cond   `json:"if,omitempty"`
	Goto string `json:"goto"`
}

// Retry re-runs a failed step with exponential backoff and jitter.
type Retry struct {
	Attempts   int    `json:"attempts"`
	Backoff    string `json:"backoff,omitempty"`
	MaxBackoff string `json:"max_backoff,omitempty"`
}

// Repeat polls: the step runs again every Every until Until holds.
type Repeat struct {
	Until       Cond   `json:"until"`
	Every       string `json:"every,omitempty"`
	MaxAttempts int    `json:"max_attempts,omitempty"`
	Timeout     string `json:"timeout,omitempty"`
}

// Action is a bare action invocation (used by compensate).
type Action struct {
	Uses    string         `json:"uses"`
	With    map[string]any `json:"with,omitempty"`
	Timeout string         `json:"timeout,omitempty"`
	Retry   *Retry         `json:"retry,omitempty"`
}

// Hook is a deferred operation of on_success or on_failure.
type Hook struct {
	ID              string         `json:"id,omitempty"`
	If              Cond           `json:"if,omitempty"`
	Uses            string         `json:"uses"`
	With            map[string]any `json:"with,omitempty"`
	Timeout         string         `json:"timeout,omitempty"`
	Retry           *Retry         `json:"retry,omitempty"`
	ContinueOnError bool           `json:"continue_on_error,omitempty"`
	Compensate      *Action        `json:"compensate,omitempty"`

	// Path is the JSON pointer of the hook in its document.
	Path string `json:"-"`
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/token"
	"stepwise.dev/stepwise/internal/workflow"
)

// Pause kinds.
const (
	KindQuestion = code.PauseQuestion
	KindAgent    = code.PauseAgent
)

// Question is a question as shown to the person answering it (prompt and
// default rendered, computed choices resolved).
type Question struct {
	Name    string            `json:"name,omitempty"` // form fields only
	Prompt  string            `json:"prompt,omitempty"`
	Type    string            `json:"type"`
	Choices []workflow.Choice `json:"choices,omitempty"`
	Pattern string            `json:"pattern,omitempty"`
	Min     *float64          `json:"min,omitempty"`
	Max     *float64          `json:"max,omitempty"`
	Default any               `json:"default,omitempty"`
	// Previous is set when Default is the answer given the last time this
	// question was asked in the run.
	Previous bool   `json:"previous,omitempty"`
	Help     string `json:"help,omitempty"`
	Secret   bool   `json:"secret,omitempty"`
	// ChoicesError says why choices_from gave no choices: the question is
	// then asked as free text.
	ChoicesError string `json:"choices_error,omitempty"`
}

// Request is what a pause asks for: a question (or form) for a person, or
// work for the agent.
type Request struct {
	Kind   string `json:"kind"`
	StepID string `json:"step_id"`
	Title  string `json:"title,omitempty"`
	Question
	Fields []Question `json:"fields,omitempty"`

	Instructions string         `json:"instructions,omitempty"`
	Persona      string         `json:"persona,omitempty"`
	OutputSchema map[string]any `json:"output_schema,omitempty"`
	Context      any            `json:"context,omitempty"`

	// TimeoutAt is when the step's timeout ends the pause (the step then
	// fails); nil for a step without a timeout.
	TimeoutAt *time.Time `json:"timeout_at,omitempty"`
}

// Pause is an open pause with its continuation token.
type Pause struct {
	Request
	RunID     string    `json:"run_id"`
	Seq       int64     `json:"seq"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
}

// HasSecret reports whether the pause asks a secret: a secret question, or
// a form with a secret field.
func (p *Pause) HasSecret() bool {
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

// ask executes a question step: answered automatically when it can be,
// otherwise the run pauses.
func (e *Engine) ask(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	if e.timedOut(sx) {
		return e.stepFailed(ctx, rs, sx, "timed out: no answer within "+timeoutText(sx.s, env), false)
	}
	req, err := e.questionRequest(ctx, rs, sx, env)
	if errors.Is(err, errInterrupted) {
		return err
	}
	if err != nil {
		return e.stepFailedErr(ctx, rs, sx, "", err, false)
	}
	if answer, source, envRef, ok := e.autoAnswer(rs, sx, req, env); ok {
		isSecret := rs.secrets().Answer(sx.s.ID)
		stored, err := e.storedValue(answer, isSecret, envRef)
		if err != nil {
			return err
		}
		if isSecret {
			learn(rs.mask, answer)
		}
		now := e.now().UTC()
		c := store.Commit{Events: []store.Event{e.event(rs, EventStepAnswered, sx.s.ID, map[string]any{"source": source, "visit": sx.visit}, now)}}
		return e.succeedStep(ctx, rs, sx, &result{Answer: answer}, c, rs.state.Cursor+1, succeedOpts{answer: stored})
	}
	return e.openPause(ctx, rs, sx, req, env)
}

// agent executes an agent step: the run pauses with the instructions.
func (e *Engine) agent(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) error {
	if e.timedOut(sx) {
		return e.stepFailed(ctx, rs, sx, "timed out: the agent gave no result within "+timeoutText(sx.s, env), false)
	}
	req, err := agentRequest(sx.s, env, rs.learner())
	if err != nil {
		return e.stepFailedErr(ctx, rs, sx, "", err, false)
	}
	return e.openPause(ctx, rs, sx, req, env)
}

// agentRequest renders what an agent step asks for.
func agentRequest(s *workflow.Step, env map[string]any, observe expr.Observer) (Request, error) {
	a := s.Agent
	req := Request{Kind: KindAgent, StepID: s.ID, Title: s.Title, Persona: a.Persona, OutputSchema: a.OutputSchema}
	ins, err := expr.RenderObserved(a.Instructions, env, observe)
	if err != nil {
		return req, fmt.Errorf("instructions: %w", err)
	}
	req.Instructions = expr.Text(ins)
	if p, err := expr.RenderObserved(a.Persona, env, observe); err == nil {
		req.Persona = expr.Text(p)
	}
	if a.Context != nil {
		if req.Context, err = expr.RenderValueObserved(a.Context, env, observe); err != nil {
			return req, fmt.Errorf("context: %w", err)
		}
	}
	return req, nil
}

// openPause pauses the run on the question or agent step at the cursor.
// A step with a timeout waits on a durable wake-up at its end.
func (e *Engine) openPause(ctx context.Context, rs *runState, sx *stepExec, req Request, env map[string]any) error {
	now := e.now().UTC()
	timeoutAt, err := stepTimeout(sx.s, env, now)
	if err != nil {
		return e.stepFailed(ctx, rs, sx, err.Error(), false)
	}
	next := rs.next(sx, rs.state.Cursor)
	if !timeoutAt.IsZero() {
		next.Wait = &Wait{StepKey: sx.key, Visit: sx.visit, Reason: "answer", Until: timeoutAt, TimeoutAt: timeoutAt, Started: sx.started}
		req.TimeoutAt = &timeoutAt
	}
	next.PauseSeq++
	body, err := maskedJSON(rs.mask, req)
	if err != nil {
		return err
	}
	p := &store.Pause{Seq: next.PauseSeq, StepKey: sx.key, Visit: sx.visit, Kind: req.Kind, Request: body, ExpiresAt: now.Add(e.tokenTTL), CreatedAt: now}
	return e.commit(ctx, rs, store.Commit{
		Run:       store.RunUpdate{Status: store.StatusWaiting},
		OpenPause: p,
		Events: []store.Event{e.startEvent(rs, sx),
			e.event(rs, EventRunPaused, sx.s.ID, map[string]any{"kind": req.Kind, "seq": p.Seq, "visit": sx.visit}, now)},
	}, next)
}

// questionRequest renders a question (or form) for asking.
func (e *Engine) questionRequest(ctx context.Context, rs *runState, sx *stepExec, env map[string]any) (Request, error) {
	a := sx.s.Ask
	req := Request{Kind: KindQuestion, StepID: sx.s.ID, Title: sx.s.Title}
	prev, hasPrev := e.previousAnswer(rs, sx)
	from := func(cf *workflow.ChoicesFrom) ([]workflow.Choice, error) { return e.choicesFrom(ctx, rs, sx, cf, env) }
	if a.Fields == nil {
		q, err := renderQuestion(a, env, from, rs.learner())
		if err != nil {
			return req, err
		}
		if hasPrev && !a.Secret {
			q.Default, q.Previous = prev, true
		}
		req.Question = q
		return req, nil
	}
	prompt, err := expr.RenderObserved(a.Prompt, env, rs.learner())
	if err != nil {
		return req, fmt.Errorf("prompt: %w", err)
	}
	req.Prompt, req.Type = expr.Text(prompt), "form"
	prevForm, _ := prev.(map[string]any)
	for _, f := range a.Fields {
		q, err := renderQuestion(&f.Ask, env, from, rs.learner())
		if err != nil {
			return req, fmt.Errorf("field %s: %w", f.Name, err)
		}
		q.Name = f.Name
		if pv, ok := prevForm[f.Name]; ok && hasPrev && !f.Secret {
			q.Default, q.Previous = pv, true
		}
		req.Fields = append(req.Fields, q)
	}
	return req, nil
}

// renderQuestion renders a question for asking; from resolves
// choices_from (an action call).
func renderQuestion(a *workflow.Ask, env map[string]any, from func(*workflow.ChoicesFrom) ([]workflow.Choice, error), observe expr.Observer) (Question, error) {
	q := Question{Type: a.QuestionType(), Pattern: a.Pattern, Min: a.Min, Max: a.Max, Secret: a.Secret, Choices: a.Choices.List}
	prompt, err := expr.RenderObserved(a.Prompt, env, observe)
	if err != nil {
		return q, fmt.Errorf("prompt: %w", err)
	}
	q.Prompt = expr.Text(prompt)
	if a.Help != "" {
		help, err := expr.RenderObserved(a.Help, env, observe)
		if err != nil {
			return q, fmt.Errorf("help: %w", err)
		}
		q.Help = expr.Text(help)
	}
	if a.Choices.Expr != "" {
		v, err := expr.RenderObserved(a.Choices.Expr, env, observe)
		if err != nil {
			return q, fmt.Errorf("choices: %w", err)
		}
		if q.Choices, err = choiceList(v); err != nil {
			return q, fmt.Errorf("choices: the expression gave %s, %w", expr.Text(v), err)
		}
	}
	if a.ChoicesFrom != nil && from != nil {
		choices, err := from(a.ChoicesFrom)
		switch {
		case errors.Is(err, errInterrupted):
			return q, err
		case err != nil:
			// Better ask without choices than not at all: the person (or
			// agent) sees why and types the value (as text).
			q.ChoicesError = err.Error()
			q.Type, q.Min, q.Max = "string", nil, nil
		default:
			q.Choices = choices
		}
	}
	if a.Default != nil {
		d, err := expr.RenderValueObserved(a.Default, env, observe)
		if err != nil {
			return q, fmt.Errorf("default: %w", err)
		}
		q.Default = d
	}
	return q, nil
}

// choiceList reads a list of choices: scalars, or {value, label,
// description} objects.
func choiceList(v any) ([]workflow.Choice, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, fmt.Errorf("not a non-empty list")
	}
	out := make([]workflow.Choice, 0, len(list))
	for _, c := range list {
		switch x := c.(type) {
		case map[string]any:
			out = append(out, workflow.Choice{Value: x["value"], Label: expr.Text(x["label"]), Description: expr.Text(x["description"])})
		case string, bool, float64, int, int64:
			out = append(out, workflow.Choice{Value: x})
		default:
			return nil, fmt.Errorf("an item is %s, not a scalar or {value, label}", expr.Text(c))
		}
	}
	return out, nil
}

// choicesFrom calls a question's choices_from action and reads the list
// from its output.
func (e *Engine) choicesFrom(ctx context.Context, rs *runState, sx *stepExec, cf *workflow.ChoicesFrom, env map[string]any) ([]workflow.Choice, error) {
	// An execution of its own, keyed after the question's instance and
	// visit: asking again in a loop is a new call.
	call := &stepExec{s: &workflow.Step{ID: sx.s.ID + "/choices_from"}, key: sx.key + "/choices_from", visit: sx.visit, started: e.now().UTC(), attempt: 1}
	out, _, err := e.invoke(ctx, rs, call, workflow.Action{Uses: cf.Uses, With: cf.With, Timeout: cf.Timeout}, env)
	if err != nil {
		if errors.Is(err, errInterrupted) {
			return nil, err
		}
		return nil, fmt.Errorf("choices_from %s failed: %v", cf.Uses, err)
	}
	v := out
	if cf.Value != "" {
		src, _, err := expr.Condition(cf.Value)
		if err != nil {
			return nil, fmt.Errorf("choices_from value: %v", err)
		}
		scope := make(map[string]any, len(env)+1)
		for k, x := range env {
			scope[k] = x
		}
		scope["output"] = out
		if v, err = expr.Eval(src, scope); err != nil {
			return nil, fmt.Errorf("choices_from value: %v", err)
		}
		v = toData(v)
	}
	choices, err := choiceList(v)
	if err != nil {
		return nil, fmt.Errorf("choices_from %s: the list is %w", cf.Uses, err)
	}
	return choices, nil
}

// previousAnswer finds the answer this question got the last time it was
// asked in this run (a goto loop, a retried or restored run), or in the
// run this one was rewound from.
func (e *Engine) previousAnswer(rs *runState, sx *stepExec) (any, bool) {
	r, ok := rs.results[sx.s.ID]
	if !ok || r.Answer == nil {
		// Rewound: the earlier run's. The state changes under rs.mu as
		// the branches of a group commit.
		rs.mu.Lock()
		v, ok := rs.state.Earlier[sx.key]
		rs.mu.Unlock()
		return v, ok
	}
	return r.Answer, true
}

// autoAnswer answers a question without asking when its `auto`
// expression gives a valid answer, or its `env` variable is set. A failing
// or invalid automatic answer falls back to asking.
func (e *Engine) autoAnswer(rs *runState, sx *stepExec, req Request, env map[string]any) (answer any, source, envRef string, ok bool) {
	a := sx.s.Ask
	if a.Fields == nil {
		v, src, ref, ok := e.autoOne(a, req.Question, env)
		return v, src, ref, ok
	}
	form := map[string]any{}
	for i, f := range a.Fields {
		v, _, _, ok := e.autoOne(&f.Ask, req.Fields[i], env)
		if !ok {
			return nil, "", "", false
		}
		form[f.Name] = v
	}
	return form, "auto", "", true
}

func (e *Engine) autoOne(a *workflow.Ask, q Question, env map[string]any) (any, string, string, bool) {
	if a.Auto != "" {
		if src, _, err := expr.Condition(string(a.Auto)); err == nil {
			if v, err := expr.Eval(src, env); err == nil && v != nil {
				v = normalizeValue(v)
				if len(checkAnswer(q, v)) == 0 {
					return v, "auto", "", true
				}
			}
		}
	}
	if a.Env != "" {
		if s, set := e.lookupEnv(a.Env); set {
			v, err := workflow.ParseText(s, q.Type)
			if err == nil && len(checkAnswer(q, v)) == 0 {
				return v, "env", a.Env, true
			}
		}
	}
	return nil, "", "", false
}

// checkAnswer validates one answer against a rendered question.
func checkAnswer(q Question, v any) []string {
	a := &workflow.Ask{Type: q.Type, Pattern: q.Pattern, Min: q.Min, Max: q.Max}
	if q.Type == "form" {
		return nil
	}
	return workflow.CheckAnswer(a, q.Choices, v)
}

// ContinueResult is what Continue did.
type ContinueResult struct {
	RunID    string
	StepID   string
	AnswerID int64
	// ParentID is the answered run's parent ("" for a top-level run), so
	// that callers find the run to follow without reading it again.
	ParentID string
	// Settled is the run as the commit that recorded the answer left it,
	// when that commit also opened the run's next pause and the run waits
	// on it alone; nil otherwise (the run went on running, finished, or
	// may wait on more than one pause): then read the run.
	Settled *Settled
}

// Continue answers a pause. The token is verified (signature, expiry,
// run, step, sequence) and the value validated; an invalid value gives an
// *Error listing every violation and changes nothing, so the token stays
// usable. A valid value is committed and the run resumes. A token is
// consumed by exactly one successful Continue.
func (e *Engine) Continue(ctx context.Context, tok string, value any) (ContinueResult, error) {
	return e.ContinueWith(ctx, tok, value, ContinueOptions{})
}

// ContinueOptions say how an answer reached the engine.
type ContinueOptions struct {
	// ViaAgent: the value passed through an agent, where a language model
	// sees it. A secret question (or a form's secret field) then accepts
	// only an environment reference "$NAME", read from the server's
	// environment; a value in clear is refused and changes nothing.
	ViaAgent bool
	// noHandOff: the answer is committed by the Continue itself, not handed
	// to a driver (another process holds the run's lease).
	noHandOff bool
}

// errDrivenElsewhere: a hand-off's commit found the run's lease held by
// another process; nothing was written.
var errDrivenElsewhere = errors.New("the run is driven by another process")

// ContinueWith is Continue with options.
func (e *Engine) ContinueWith(ctx context.Context, tok string, value any, opts ContinueOptions) (ContinueResult, error) {
	claims, err := e.signer.Verify(tok, e.now())
	switch {
	case errors.Is(err, token.ErrExpired):
		return ContinueResult{}, &Error{Code: CodeTokenExpired, Category: CategoryAuth, RunID: claims.RunID, StepID: claims.StepKey,
			Message: "the token has expired", Err: err,
			Suggestion: "read the run " + claims.RunID + " again: while its pause is open, that gives a fresh token to continue with"}
	case err != nil:
		return ContinueResult{}, &Error{Code: CodeTokenInvalid, Category: CategoryAuth, Message: "the token is not valid: " + err.Error(), Err: err,
			Argument: "token", Suggestion: "use the token exactly as returned with the pause"}
	}
	// A conflict: the run moved (e.g. its driver committed); read it
	// again and check the answer again.
	var res ContinueResult
	err = retryConflicts(ctx, claims.RunID, "continue", func() error {
		var err error
		res, err = e.continueOnce(ctx, claims, value, opts)
		if errors.Is(err, errDrivenElsewhere) && !opts.noHandOff {
			opts.noHandOff = true // committed by Continue itself instead
			res, err = e.continueOnce(ctx, claims, value, opts)
		}
		return err
	})
	return res, err
}

func (e *Engine) continueOnce(ctx context.Context, claims token.Claims, value any, copts ContinueOptions) (ContinueResult, error) {
	res := ContinueResult{RunID: claims.RunID, StepID: claims.StepKey}
	p, err := e.store.GetPause(ctx, claims.RunID, claims.Seq)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return res, &Error{Code: CodeTokenInvalid, Category: CategoryAuth, RunID: claims.RunID, Argument: "token",
				Message: "the token names a pause that does not exist", Suggestion: "read the run again for its open pause and that pause's token"}
		}
		return res, err
	}
	if p.StepKey != claims.StepKey {
		return res, &Error{Code: CodeTokenInvalid, Category: CategoryAuth, RunID: claims.RunID, Argument: "token",
			Message: "the token does not match the pause", Suggestion: "read the run again for its open pause and that pause's token"}
	}
	if p.Status == store.PauseTimedOut {
		return res, pauseTimedOut(claims.RunID, claims.StepKey)
	}
	if p.Status != store.PauseOpen {
		return res, alreadyUsed(claims)
	}
	rs, err := e.load(ctx, claims.RunID)
	if err != nil {
		return res, notFound(claims.RunID, err)
	}
	res.ParentID = rs.run.ParentID
	if rs.run.Status == store.StatusPaused {
		return res, &Error{Code: CodeRunPaused, Category: CategoryConflict, RunID: claims.RunID, Retryable: true,
			Message: "the run is paused by an operator", Suggestion: "resume the run, then continue with the same token"}
	}
	if rs.run.Status != store.StatusWaiting {
		return res, alreadyUsed(claims)
	}
	var req Request
	if err := json.Unmarshal(p.Request, &req); err != nil {
		return res, fmt.Errorf("continue %s: request: %w", claims.RunID, err)
	}
	s := rs.wf.Step(req.StepID)
	if s == nil {
		return res, fmt.Errorf("continue %s: step %q is not in the definition", claims.RunID, req.StepID)
	}
	value = normalizeValue(value)
	if copts.ViaAgent && s.Ask != nil && s.Ask.HasSecret() {
		var vs []workflow.Violation
		if value, vs = e.agentSecret(req, value); len(vs) > 0 {
			return res, &Error{Code: CodeSecretInClear, Category: CategoryValidation, RunID: claims.RunID, StepID: s.ID,
				Message: "a secret cannot be answered through the agent", Violations: vs,
				Suggestion: "give an environment reference \"$NAME\" of the server's environment, or let the person answer it themselves (a one-time secret page, or a terminal)"}
		}
	}
	value, vs := e.validateAnswer(rs, s, req, value)
	if len(vs) > 0 {
		return res, &Error{Code: CodeAnswerInvalid, Category: CategoryValidation, RunID: claims.RunID, StepID: s.ID,
			Message: "the answer is not valid", Violations: vs, Suggestion: "fix the listed problems and answer again with the same token"}
	}
	sx := &stepExec{s: s, key: p.StepKey, visit: p.Visit, started: p.CreatedAt, attempt: 1, iteration: 1}
	now := e.now().UTC()
	isSecret := s.Ask != nil && rs.secrets().Answer(s.ID)
	stored, err := e.storedValue(value, isSecret, "")
	if err != nil {
		return res, err
	}
	if isSecret {
		learn(rs.mask, value)
	}
	r := &result{}
	opts := succeedOpts{started: true}
	if s.Ask != nil {
		r.Answer = value
		opts.answer = stored
	} else {
		r.Output = value
	}
	c := store.Commit{
		Run:        store.RunUpdate{Status: store.StatusRunning},
		ClosePause: &store.PauseClose{Seq: p.Seq, Status: store.PauseAnswered, Answer: stored, At: now},
		Answer:     &store.Answer{PauseSeq: p.Seq, StepKey: p.StepKey, Value: stored, At: now},
		Events: []store.Event{e.event(rs, EventRunContinued, s.ID, map[string]any{"seq": p.Seq}, now),
			e.event(rs, EventStepAnswered, s.ID, map[string]any{"source": "continue", "visit": p.Visit}, now)},
	}
	var answerID int64
	// A top-level question is the step at the cursor, keyed by its id;
	// anything else is inside a group.
	atCursor := rs.state.Cursor < len(rs.wf.Steps) && rs.wf.Steps[rs.state.Cursor] == s
	nested := p.StepKey != s.ID || !atCursor
	if !nested && rs.run.ParentID == "" && rs.state.Wait == nil {
		// The run's driver takes the answer along (one commit with what
		// follows it), unless it is busy: then the answer is committed here.
		// (A run with a parent wakes it after the answer is recorded; a
		// state with a wake-up has a timer to clear: both as before.)
		if loaded, ok := e.loadedAnswer(r, stored, isSecret, rs.mask); ok {
			if h := e.reserveDriver(rs.run.ID); h != nil {
				// The answer's commit takes the run's lease for the driver
				// (pend); should another live process hold it, nothing is
				// written and the answer is committed without a hand-off.
				if copts.noHandOff {
					h.abandon()
				} else {
					e.pend(rs.run.ID)
					if r.Answer != nil {
						r.Answer = loaded
					}
					return e.continueHandOff(ctx, h, rs, sx, r, c, opts, claims, res)
				}
			}
		}
	}
	if nested {
		// A question inside a group: record the instance; the group goes on
		// when the run is driven again (other pauses may remain open).
		err = e.continueNested(ctx, rs, sx, r, c, stored, isSecret)
		answerID = rs.lastAnswerID
	} else {
		err = e.succeedStepWith(ctx, rs, sx, r, c, rs.state.Cursor+1, opts, &answerID)
	}
	if errors.Is(err, store.ErrPauseClosed) {
		return res, alreadyUsed(claims)
	}
	if err != nil {
		return res, err
	}
	res.AnswerID = answerID
	// A paused sub-workflow was its parents' pause: they run again too,
	// before Continue returns, so that reading a parent shows it running.
	e.wakeParent(ctx, rs)
	if !nested && e.asLoaded(rs, s.ID, r, stored, isSecret) {
		e.keep(rs) // the driver goes on from here: rs is not ours any more
	}
	e.schedule(claims.RunID)
	return res, nil
}

// loadedAnswer is the answer of r as a load of the run would read it back
// (decoded from what was stored: numbers as JSON numbers, secrets opened);
// ok is false when that cannot be done.
func (e *Engine) loadedAnswer(r *result, stored []byte, isSecret bool, mask *secret.Masker) (any, bool) {
	if r.Answer == nil {
		return nil, true
	}
	v, err := e.openValue(stored, isSecret, mask)
	return v, err == nil
}

// continueHandOff records a top-level answer through the run's driver,
// reserved by h: the answer's commit is queued in a pipeline of the run's
// state and both are handed to the driver, which goes on from there; the
// pure steps after the answer and the next question (or whatever the
// driver commits first) share its commit. The Continue returns once that
// commit is done, with its outcome: a continue that lost the pause to
// another gets "already used", as before, and nothing of it is written.
func (e *Engine) continueHandOff(ctx context.Context, h *handOff, rs *runState, sx *stepExec, r *result, c store.Commit, opts succeedOpts, claims token.Claims, res ContinueResult) (ContinueResult, error) {
	type outcome struct {
		res     store.CommitResult
		settled *Settled
		err     error
	}
	done := make(chan outcome, 1)
	var queuedIt bool
	opts.queued = func(cr store.CommitResult, settled *Settled, err error) { done <- outcome{cr, settled, err} }
	opts.queuedIt = &queuedIt
	rs.ahead = newAhead(rs.run)
	err := e.succeedStep(ctx, rs, sx, r, c, rs.state.Cursor+1, opts)
	if !queuedIt {
		// Nothing was queued (the record failed before its commit, which
		// was then made, or not, the usual way): the driver starts afresh.
		h.start(nil)
		if errors.Is(err, store.ErrPauseClosed) {
			return res, alreadyUsed(claims)
		}
		return res, err
	}
	h.start(rs)
	select {
	case out := <-done:
		if errors.Is(out.err, store.ErrPauseClosed) {
			return res, alreadyUsed(claims)
		}
		if out.err != nil && ctx.Err() == nil && (errors.Is(out.err, store.ErrLeaseLost) || errors.Is(out.err, store.ErrLeaseHeld)) {
			// Another process holds the run's lease: the commit that
			// carries the answer wrote nothing. Answer without a hand-off.
			return res, errDrivenElsewhere
		}
		if out.err != nil && ctx.Err() == nil && (errors.Is(out.err, context.Canceled) || errors.Is(out.err, context.DeadlineExceeded)) {
			// The driver was stopped (a Cancel of the run, the engine's
			// shutdown) before the commit that carries the answer, which
			// wrote nothing: not this Continue's failure. Read the pause
			// again, as after a conflict (a canceled pause: "already used").
			return res, fmt.Errorf("continue %s: the run's driver stopped: %w", claims.RunID, store.ErrConflict)
		}
		if out.err != nil {
			return res, out.err
		}
		res.AnswerID = out.res.AnswerID
		res.Settled = out.settled
		return res, nil
	case <-ctx.Done():
		// The driver goes on; whether the answer was recorded shows in
		// the run (continuing again with the token says "already used").
		return res, ctx.Err()
	}
}

// continueNested records the answer of a pause inside a group without
// moving the cursor; the run runs again unless other pauses stay open.
func (e *Engine) continueNested(ctx context.Context, rs *runState, sx *stepExec, r *result, c store.Commit, stored []byte, isSecret bool) error {
	now := e.now().UTC()
	row := store.Step{Key: sx.key, Visit: sx.visit, StepID: sx.s.ID, Status: "succeeded", Attempts: 1, StartedAt: sx.started, FinishedAt: now}
	if sx.s.Ask != nil {
		row.Answer = stored
	} else if out, _, err := e.storedOutput(rs, sx.s.ID, r.Output); err == nil {
		row.Output = out
	}
	c.Steps = append(c.Steps, row)
	c.Events = append(c.Events, e.event(rs, EventStepSucceeded, sx.s.ID, map[string]any{"key": sx.key, "visit": sx.visit}, now))
	if ps, err := e.store.OpenPauses(ctx, rs.run.ID); err == nil && len(ps) > 1 {
		c.Run.Status = store.StatusWaiting // others still wait for their answers
	}
	return e.commit(ctx, rs, c, rs.state)
}

// succeedStepWith is succeedStep that also reports the answer id.
func (e *Engine) succeedStepWith(ctx context.Context, rs *runState, sx *stepExec, r *result, c store.Commit, cursor int, o succeedOpts, answerID *int64) error {
	err := e.succeedStep(ctx, rs, sx, r, c, cursor, o)
	*answerID = rs.lastAnswerID
	return err
}

func alreadyUsed(c token.Claims) error {
	return &Error{Code: CodeTokenAlreadyUsed, Category: CategoryConflict, RunID: c.RunID, StepID: c.StepKey,
		Message: "this pause was already answered (or the run moved on)", Suggestion: "read the run's current state"}
}

// normalizeValue brings a caller's value into the data model at every
// depth (numbers decoded as json.Number, Go types): the one place values
// given to the engine (inputs, answers, agent outputs) are normalized.
func normalizeValue(v any) any {
	return workflow.Normalize(v)
}

// validateAnswer checks a value against the paused step: question type and
// constraints, form fields (filling defaults), or the agent's output
// schema.
func (e *Engine) validateAnswer(rs *runState, s *workflow.Step, req Request, v any) (any, []workflow.Violation) {
	bad := func(path, msg string) workflow.Violation {
		return workflow.Violation{Path: path, Rule: "answer", Message: rs.mask.Mask(msg)}
	}
	switch {
	case req.Kind == KindAgent:
		return v, e.checkOutputSchema(rs, s, v)
	case len(req.Fields) > 0:
		form, ok := v.(map[string]any)
		if !ok {
			return v, []workflow.Violation{bad("", fmt.Sprintf("a form is answered with an object of fields (%s)", fieldNames(req.Fields)))}
		}
		var vs []workflow.Violation
		out := map[string]any{}
		known := map[string]bool{}
		for _, f := range req.Fields {
			known[f.Name] = true
			fv, present := form[f.Name]
			if !present || fv == nil {
				if f.Default != nil {
					out[f.Name] = f.Default
					continue
				}
				vs = append(vs, bad("/"+f.Name, fmt.Sprintf("field %q is required", f.Name)))
				continue
			}
			for _, p := range checkAnswer(f, fv) {
				vs = append(vs, bad("/"+f.Name, fmt.Sprintf("field %q %s", f.Name, p)))
			}
			out[f.Name] = fv
		}
		for name := range form {
			if !known[name] {
				vs = append(vs, bad("/"+name, fmt.Sprintf("the form has no field %q (it has %s)", name, fieldNames(req.Fields))))
			}
		}
		return out, vs
	default:
		if v == nil && req.Default != nil {
			return req.Default, nil
		}
		var vs []workflow.Violation
		for _, p := range checkAnswer(req.Question, v) {
			vs = append(vs, bad("", "the answer "+p))
		}
		return v, vs
	}
}

func fieldNames(fields []Question) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Pauses returns the open pauses of a run, each with its token. A run
// that waits for a paused sub-workflow shows the child's pauses: their
// tokens continue the child.
func (e *Engine) Pauses(ctx context.Context, runID string) ([]Pause, error) {
	return e.pauses(ctx, runID, 0)
}

func (e *Engine) pauses(ctx context.Context, runID string, depth int) ([]Pause, error) {
	var kids []store.Run
	if depth < maxDepth {
		kids, _, _ = e.store.ListRuns(ctx, store.RunFilter{ParentID: runID, Status: []string{store.StatusWaiting}, Limit: MaxChildren})
	}
	return e.openPauses(ctx, runID, kids, depth)
}

// openPauses lists the open pauses of a run, then those of its waiting
// children (their parent inherits them).
func (e *Engine) openPauses(ctx context.Context, runID string, waitingKids []store.Run, depth int) ([]Pause, error) {
	ps, err := e.store.OpenPauses(ctx, runID)
	if err != nil {
		return nil, err
	}
	var inherited []Pause
	if depth < maxDepth {
		// Paused sub-workflow runs pause their parent too.
		for i := len(waitingKids) - 1; i >= 0; i-- {
			kid := waitingKids[i]
			var sub []Pause
			if e.mayHaveChildren(ctx, kid.Version) {
				sub, err = e.pauses(ctx, kid.ID, depth+1)
			} else {
				sub, err = e.openPauses(ctx, kid.ID, nil, depth+1)
			}
			if err == nil {
				inherited = append(inherited, sub...)
			}
		}
	}
	out, err := e.pausesOf(runID, ps, len(inherited))
	if err != nil {
		return nil, err
	}
	return append(out, inherited...), nil
}

// PausesOf is the Pauses of a run whose own open pause rows the caller has
// read (store.OpenPauses) and that has no children (MayHaveChildren): each
// row's request decoded afresh and its token signed.
func (e *Engine) PausesOf(runID string, rows []store.Pause) ([]Pause, error) {
	return e.pausesOf(runID, rows, 0)
}

// pausesOf turns open pause rows into Pauses, with room for extra more.
func (e *Engine) pausesOf(runID string, rows []store.Pause, extra int) ([]Pause, error) {
	out := make([]Pause, 0, len(rows)+extra)
	now := e.now()
	for _, p := range rows {
		var req Request
		if err := json.Unmarshal(p.Request, &req); err != nil {
			return nil, fmt.Errorf("pause %s/%d: %w", runID, p.Seq, err)
		}
		exp := e.tokenExpiry(p.ExpiresAt, now)
		tok := e.signer.Sign(token.Claims{RunID: runID, StepKey: p.StepKey, Seq: p.Seq, Expires: exp})
		out = append(out, Pause{Request: req, RunID: runID, Seq: p.Seq, Token: tok, ExpiresAt: exp})
	}
	return out, nil
}

// tokenExpiry is when the token a read of an open pause hands out at now
// expires. An open pause never expires; its tokens do. The first token
// expires when the pause row says (its opening plus the token lifetime);
// once less than half a lifetime is left, reads hand out a token that
// expires one or more whole lifetimes later, the first such end with at
// least half a lifetime left. Reads within one such window give the same
// token. Token expiry has second precision, so the time is in whole
// seconds, the same the token carries.
func (e *Engine) tokenExpiry(first, now time.Time) time.Time {
	exp := first.Truncate(time.Second)
	if short := now.Add(e.tokenTTL / 2).Sub(exp); short > 0 {
		step := e.tokenTTL.Round(time.Second)
		if step < time.Second {
			step = time.Second
		}
		exp = exp.Add(step * (short/step + 1))
	}
	return exp
}

// TokenFresh reports whether a token that expires at exp, handed out with
// a pause, may still be handed out: at least half a token lifetime left.
// A caller that keeps a signed Pause reads the pause again when not (its
// token is signed afresh: see Pauses).
func (e *Engine) TokenFresh(exp time.Time) bool {
	return !e.now().Add(e.tokenTTL / 2).After(exp)
}

// Cancel stops a run: its open pause is closed and it is marked canceled.
// With compensate, the compensations of its completed steps run first (in
// reverse order), then its on_failure hooks, and then it is canceled.
func (e *Engine) Cancel(ctx context.Context, runID, reason string, compensate bool) error {
	return retryConflicts(ctx, runID, "cancel", func() error {
		run, err := e.store.GetRun(ctx, runID)
		if err != nil {
			return notFound(runID, err)
		}
		if store.Finished(run.Status) {
			return runFinished(runID, run.Status)
		}
		e.interrupt(runID)
		if run.Status == store.StatusQueued {
			compensate = false // nothing ran: it only leaves its queue
		}
		now := e.now().UTC()
		data, _ := json.Marshal(map[string]any{"reason": nilIfEmpty(reason)})
		errJSON, _ := json.Marshal(map[string]any{"message": "canceled" + suffix(reason)})
		c := store.Commit{RunID: runID, Rev: run.Rev,
			Run:    store.RunUpdate{Status: store.StatusCanceled, Error: errJSON, FinishedAt: now},
			Events: []store.Event{{Type: EventRunCanceled, Data: data, At: now}}}
		if ps, err := e.store.OpenPauses(ctx, runID); err == nil {
			for _, p := range ps {
				c.CancelPauses = append(c.CancelPauses, p.Seq)
			}
		}
		var st State
		if json.Unmarshal(run.State, &st) == nil && st.Wait != nil {
			c.ClearTimers = []string{st.Wait.StepKey} // a canceled run wakes no more
			if st.Wait.Child != "" {
				// Cancel the sub-workflow first (compensating it too when asked).
				if err := e.Cancel(ctx, st.Wait.Child, "its parent run was canceled", compensate); err != nil && CodeOf(err) != CodeRunFinished {
					return err
				}
			}
		}
		if compensate && st.Phase == "" {
			// Hand the run to a driver that compensates, then cancels.
			st.Wait, st.Phase, st.Final = nil, phaseCompensate, &Final{Status: store.StatusCanceled, Error: errJSON}
			state, _ := json.Marshal(st)
			c.Run = store.RunUpdate{Status: store.StatusRunning, State: state}
			c.Events = []store.Event{{Type: EventRunCompensating, Data: data, At: now}}
		}
		res, err := e.store.Commit(ctx, c)
		if err != nil {
			return err
		}
		e.publish(runID, c.Run.Status, c.Events, res.EventSeqs)
		if c.Run.Status == store.StatusRunning {
			e.schedule(runID)
		}
		if run.ConcurrencyLimit > 0 && c.Run.Status == store.StatusCanceled {
			e.wantAdmission() // its slot, if it held one, is free
		}
		return nil
	})
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// ResumeResult is what Resume found.
type ResumeResult struct {
	// Status is the run's status.
	Status string
	// DrivenBy, when set, is the owner of the lease of a run that another
	// live process drives (until Until, renewed while it does): Resume
	// left the run to it, and looks again should that lease expire.
	DrivenBy string
	Until    time.Time
}

// Resume makes sure a running run is being driven: here, after a crash of
// the process that drove it (taken over at once when that process is
// known to be gone), or by the live process that drives it, which it is
// left to (ResumeResult.DrivenBy).
func (e *Engine) Resume(ctx context.Context, runID string) (ResumeResult, error) {
	run, err := e.store.GetRun(ctx, runID)
	if err != nil {
		return ResumeResult{}, notFound(runID, err)
	}
	if run.Status == store.StatusPaused {
		if err := e.UnholdRun(ctx, runID); err != nil {
			return ResumeResult{}, err
		}
		run, err = e.store.GetRun(ctx, runID)
		if err != nil {
			return ResumeResult{}, err
		}
	}
	if run.Status == store.StatusQueued {
		// Nothing to resume but its queue: admit what it has room for (this
		// run, if its turn came and no process admitted it yet).
		e.admit(ctx, store.AdmitRequest{Workflow: run.Workflow, Key: run.ConcurrencyKey})
		if run, err = e.store.GetRun(ctx, runID); err != nil {
			return ResumeResult{}, err
		}
	}
	res := ResumeResult{Status: run.Status}
	if run.Status != store.StatusRunning && run.Status != store.StatusPending {
		return res, nil
	}
	if _, err := e.hold(ctx, runID, false); err != nil {
		var held *store.LeaseHeldError
		if !errors.As(err, &held) {
			return res, err
		}
		res.DrivenBy, res.Until = held.Owner, held.Expires
		e.notHeld(runID, err)
		return res, nil
	}
	e.schedule(runID)
	return res, nil
}

// actionCall is the call of an action for one execution of a step; call
// done when the action returned (what its output held back goes out).
func actionCall(e *Engine, rs *runState, sx *stepExec, input map[string]any) (call action.Call, done func()) {
	logger := slog.New(&lazyAttrs{inner: e.log.Handler(), attrs: []slog.Attr{slog.String("run_id", rs.run.ID), slog.String("step_id", sx.s.ID)}})
	out := &maskWriter{w: e.output, mask: rs.mask}
	return action.Call{
		Input:          input,
		IdempotencyKey: sx.idempotencyKey(rs.run.ID),
		Attempt:        max(sx.attempt, 1),
		Logger:         slogMasked(logger, rs.mask),
		Output:         out,
		Scope:          rs.scope,
	}, out.flush
}

// slogMasked wraps a logger so that the run's secrets are masked.
func slogMasked(l *slog.Logger, m *secret.Masker) *slog.Logger {
	return slog.New(secret.NewHandler(l.Handler(), m))
}

// maskWriter masks secrets in free-form action output. Actions write whole
// lines, or pieces of a long one (as the shell action forwards it); every
// write is masked with MaskStream, and the end of it that a secret could
// begin in waits for the next write, so that a secret cut across two
// writes (a piece of a line, or a secret of several lines) is masked too.
//
// Each stream of an action that writes several at once (a command's stdout
// and stderr) has its own maskWriter (Stream): what one holds back must not
// go out with the other's next line.
type maskWriter struct {
	w    io.Writer
	mask *secret.Masker
	mu   sync.Mutex
	held string // raw text held back from the last write
	// streams are the writers Stream gave out, flushed with this one.
	streams []*maskWriter
}

var _ action.Streams = (*maskWriter)(nil)

// Stream implements action.Streams: a writer for one stream of the
// action's output, with its own held-back text.
func (m *maskWriter) Stream() io.Writer {
	s := &maskWriter{w: m.w, mask: m.mask}
	m.mu.Lock()
	m.streams = append(m.streams, s)
	m.mu.Unlock()
	return s
}

func (m *maskWriter) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// A line's end holds nothing back unless a secret goes on past it (a
	// secret of several lines, printed line by line).
	out, held := m.mask.MaskStream(m.held + string(p))
	m.held = held
	if out == "" {
		return len(p), nil
	}
	if _, err := io.WriteString(m.w, out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes what is held back, its streams' too (the action has
// returned).
func (m *maskWriter) flush() {
	m.mu.Lock()
	if m.held != "" {
		_, _ = io.WriteString(m.w, m.mask.Mask(m.held))
		m.held = ""
	}
	streams := m.streams
	m.mu.Unlock()
	for _, s := range streams {
		s.flush()
	}
}

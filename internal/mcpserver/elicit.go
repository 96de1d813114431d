package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/service"
)

// maxElicitRounds bounds how many questions one tool call asks the person
// through elicitation before it returns the pause to the agent.
const maxElicitRounds = 20

// elicitState travels with a multi round-trip request: what was asked.
type elicitState struct {
	Root  string `json:"root"`
	Token string `json:"token"`
	Mode  string `json:"mode"`
	Page  string `json:"page,omitempty"`
}

// encodeState is st as the requestState a client carries: signed with the
// server's key (the spec wants it integrity-protected; any replica opens
// it).
func (s *Server) encodeState(st elicitState) string {
	b, _ := json.Marshal(st)
	return s.svc.SignState(b)
}

// decodeState opens a requestState encodeState made; anything else
// (forged, altered, truncated, another server's) is refused.
func (s *Server) decodeState(state string) (elicitState, error) {
	var st elicitState
	b, err := s.svc.OpenState(state)
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	if err != nil || st.Root == "" || st.Token == "" {
		return st, argumentsError("requestState", "requestState is not one this server issued")
	}
	return st, nil
}

// await waits for a run to finish or pause. When it pauses on a question
// the connected client can put before the person (elicitation), it asks
// there and goes on with the answer; otherwise the pause is returned.
//
// sub, opened before the action that set the run going, carries the events
// for progress notifications.
func (s *Server) await(ctx context.Context, req *mcp.CallToolRequest, sub *service.Subscription, runID string, wait time.Duration, elicit bool) (RunResult, error) {
	return s.awaitAsking(ctx, req, sub, runID, wait, elicit, "", service.ContinueResult{})
}

// awaitAsking is await where problem says what was wrong with the answer
// the person gave last (to tell them when asking again), and continued is
// the Continue the wait follows, if any.
func (s *Server) awaitAsking(ctx context.Context, req *mcp.CallToolRequest, sub *service.Subscription, runID string, wait time.Duration, elicit bool, problem string, continued service.ContinueResult) (RunResult, error) {
	p := s.progress(ctx, req, runID)
	defer p.end()
	for round := 0; ; round++ {
		v, err := s.svc.AwaitContinued(ctx, runID, continued, wait, sub, p.onEvent())
		continued = service.ContinueResult{} // later rounds follow an elicited answer
		if err != nil {
			return RunResult{}, err
		}
		res := s.runResult(s.withFailedSteps(ctx, v))
		if !elicit || round >= maxElicitRounds || v.Status != code.StatusWaiting || v.Pause == nil || req.Session == nil {
			return res, nil
		}
		answered, p, err := s.elicit(ctx, req, runID, v.Pause, wait, problem)
		if err != nil {
			return RunResult{}, err
		}
		if !answered {
			return res, nil
		}
		problem = p
	}
}

// elicitMode tells how the client can put a pause before the person:
// "form", "url" (secrets, over HTTP) or "" (not at all).
func (s *Server) elicitMode(req *mcp.CallToolRequest, p *service.Pause) string {
	c := req.ClientCapabilities()
	if p.Kind != code.PauseQuestion || c == nil || c.Elicitation == nil {
		return ""
	}
	caps := c.Elicitation
	if p.HasSecret() {
		if caps.URL != nil && s.opts.BaseURL != "" {
			return "url"
		}
		return ""
	}
	if caps.Form != nil || caps.URL == nil {
		if _, ok := formSchema(p); ok {
			return "form"
		}
	}
	return ""
}

// legacy reports whether the request's protocol lets the server send
// elicitation requests itself (before 2026-07-28); newer ones return them
// in the tool result (multi round-trip requests). Capabilities and version
// are the request's own (its _meta) from 2026-07-28, the session's before.
func legacy(req *mcp.CallToolRequest) bool {
	v := req.ProtocolVersion()
	return v != "" && v < "2026-07-28"
}

// elicit asks the person for a pause's answer. It reports whether the run
// got an answer; problem is what was wrong with an answer that was refused
// (to say when asking again).
func (s *Server) elicit(ctx context.Context, req *mcp.CallToolRequest, root string, p *service.Pause, wait time.Duration, problem string) (bool, string, error) {
	mode := s.elicitMode(req, p)
	if mode == "" {
		return false, "", nil
	}
	st := elicitState{Root: root, Token: p.Token, Mode: mode}
	params := &mcp.ElicitParams{Mode: mode}
	switch mode {
	case "form":
		schema, _ := formSchema(p)
		params.RequestedSchema = schema
		params.Message = questionMessage(p, problem)
	case "url":
		page, url := s.secrets.open(p, s.opts.BaseURL)
		st.Page = page
		params.URL, params.ElicitationID = url, page
		params.Message = "stepwise needs a secret for run " + p.RunID + ": " + p.Prompt + " Open the one-time page to type it; it goes straight to stepwise, not to the assistant."
	}
	if !legacy(req) {
		return false, "", &inputNeeded{requests: mcp.InputRequestMap{"answer": params}, state: s.encodeState(st)}
	}
	res, err := req.Session.Elicit(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		s.log.Warn("elicitation failed; returning the pause", "run_id", p.RunID, "error", err)
		return false, "", nil
	}
	return s.applyElicit(ctx, req, st, p, res, wait)
}

// resumeElicitation is a tool call retried with the person's answer
// (multi round-trip): apply it, then wait for the run as usual.
func (s *Server) resumeElicitation(ctx context.Context, req *mcp.CallToolRequest, wait time.Duration) (RunResult, error) {
	st, err := s.decodeState(req.Params.RequestState)
	if err != nil {
		return RunResult{}, err
	}
	sub := s.svc.Subscribe()
	defer sub.Close()
	v, err := s.svc.GetRun(ctx, st.Root)
	if err != nil {
		return RunResult{}, err
	}
	// The pause may have moved on already (a secret page posted before this
	// retry arrived, or an answer from elsewhere): then the run goes on as
	// if answered here.
	answered, problem := true, ""
	if v.Pause != nil && v.Pause.Token == st.Token {
		res, _ := req.Params.InputResponses["answer"].(*mcp.ElicitResult)
		if answered, problem, err = s.applyElicit(ctx, req, st, v.Pause, res, wait); err != nil {
			return RunResult{}, err
		}
	}
	if !answered {
		// Declined or canceled: the pause goes to the agent.
		return s.await(ctx, req, sub, st.Root, 0, false)
	}
	return s.awaitAsking(ctx, req, sub, st.Root, wait, true, problem, service.ContinueResult{})
}

// applyElicit continues the run with what the person gave. Declining or
// canceling leaves the run waiting.
func (s *Server) applyElicit(ctx context.Context, req *mcp.CallToolRequest, st elicitState, p *service.Pause, res *mcp.ElicitResult, wait time.Duration) (bool, string, error) {
	if res == nil || res.Action != "accept" {
		if st.Page != "" {
			s.secrets.close(st.Page)
		}
		return false, "", nil
	}
	if st.Mode == "url" {
		// Accepting only means the person opened the page: wait for the
		// value to arrive there.
		ok := s.secrets.wait(ctx, st.Page, max(wait, 5*time.Minute))
		if ok && req.Session != nil {
			_ = req.Session.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: st.Page})
		}
		return ok, "", nil
	}
	value := fromForm(p, res.Content)
	if _, err := s.svc.Continue(ctx, st.Token, value); err != nil {
		var ee *service.Error
		if errors.As(err, &ee) && ee.Code == code.AnswerInvalid {
			return true, ee.Error(), nil // ask again, saying what was wrong
		}
		if errors.As(err, &ee) {
			return false, "", nil // the pause moved on (answered elsewhere, expired): report the run as it is
		}
		return false, "", err
	}
	return true, "", nil
}

func questionMessage(p *service.Pause, problem string) string {
	msg := p.Prompt
	if p.Title != "" && msg == "" {
		msg = p.Title
	}
	if p.Help != "" {
		msg += "\n" + p.Help
	}
	if problem != "" {
		msg = "That answer was not accepted (" + problem + ").\n" + msg
	}
	return msg
}

// formSchema is the elicitation schema of a question: one property
// "value", or one per field of a form. ok is false for what a form cannot
// express (objects, lists that are not multi-choice).
func formSchema(p *service.Pause) (map[string]any, bool) {
	props := map[string]any{}
	var required []string
	if len(p.Fields) == 0 {
		prop, ok := fieldSchema(p.Question)
		if !ok {
			return nil, false
		}
		props["value"] = prop
		if p.Default == nil {
			required = append(required, "value")
		}
	} else {
		for _, f := range p.Fields {
			prop, ok := fieldSchema(f)
			if !ok {
				return nil, false
			}
			props[f.Name] = prop
			if f.Default == nil {
				required = append(required, f.Name)
			}
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return schema, true
}

func fieldSchema(q service.Question) (map[string]any, bool) {
	prop := map[string]any{}
	if q.Prompt != "" {
		prop["title"] = q.Prompt
	}
	if q.Help != "" {
		prop["description"] = q.Help
	}
	if q.Previous {
		prop["description"] = withPreviousHint(q.Help)
	}
	switch q.Type {
	case "string", "":
		prop["type"] = "string"
		if d, ok := q.Default.(string); ok {
			prop["default"] = d
		}
	case "integer", "number":
		prop["type"] = q.Type
		if q.Min != nil {
			prop["minimum"] = *q.Min
		}
		if q.Max != nil {
			prop["maximum"] = *q.Max
		}
		if d, ok := q.Default.(float64); ok {
			prop["default"] = d
		} else if d, ok := q.Default.(int64); ok {
			prop["default"] = d
		}
	case "boolean":
		prop["type"] = "boolean"
		if d, ok := q.Default.(bool); ok {
			prop["default"] = d
		}
	case "choice":
		if len(q.Choices) == 0 {
			return nil, false
		}
		prop["type"] = "string"
		prop["enum"] = choiceTexts(q)
		if q.Default != nil {
			prop["default"] = expr.Text(q.Default)
		}
	case "multi-choice":
		if len(q.Choices) == 0 {
			return nil, false
		}
		prop["type"] = "array"
		prop["items"] = map[string]any{"type": "string", "enum": choiceTexts(q)}
	default:
		return nil, false
	}
	return prop, true
}

func choiceTexts(q service.Question) []string {
	out := make([]string, len(q.Choices))
	for i, c := range q.Choices {
		out[i] = expr.Text(c.Value)
	}
	return out
}

// fromForm turns an elicitation's content back into the question's value:
// choices by their text back to their values.
func fromForm(p *service.Pause, content map[string]any) any {
	if len(p.Fields) == 0 {
		v, ok := content["value"]
		if !ok {
			return nil
		}
		return typed(p.Question, v)
	}
	out := map[string]any{}
	for _, f := range p.Fields {
		if v, ok := content[f.Name]; ok {
			out[f.Name] = typed(f, v)
		}
	}
	return out
}

func typed(q service.Question, v any) any {
	back := func(x any) any {
		t := expr.Text(x)
		for _, c := range q.Choices {
			if expr.Text(c.Value) == t {
				return c.Value
			}
		}
		return x
	}
	switch q.Type {
	case "choice":
		return back(v)
	case "multi-choice":
		list, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(list))
		for i, x := range list {
			out[i] = back(x)
		}
		return out
	}
	return v
}

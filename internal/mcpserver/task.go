package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/mcptasks"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// A run is a task (the MCP Tasks extension, package mcptasks): the tools
// that set a run going (run_start, run_continue, run_retry, run_fork,
// wf_<name>) answer a client that declared the extension with the run's
// task once the run is recorded, and tasks/get, tasks/update and
// tasks/cancel read, answer and cancel the run. Nothing of a task is kept
// besides the run: any replica with the server's key serves it, before and
// after a restart.

// taskIDPrefix starts every task id; the rest is the run id signed with
// the server's key (Service.SignState), so that an id is bound to its run
// and cannot be made up.
const taskIDPrefix = "swt_"

// taskDomain separates a task id's signed data from a requestState's
// (JSON, starting with '{').
const taskDomain = "task\x00"

// taskPollMs is the polling interval tasks suggest.
const taskPollMs = 1000

// taskID is the task id of a top-level run.
func (s *Server) taskID(runID string) string {
	return taskIDPrefix + s.svc.SignState([]byte(taskDomain+runID))
}

// taskRun is the run of a task id; mcptasks.ErrUnknownTask for an id this
// server (or a replica with its key) did not issue.
func (s *Server) taskRun(id string) (string, error) {
	rest, ok := strings.CutPrefix(id, taskIDPrefix)
	if !ok {
		return "", mcptasks.ErrUnknownTask
	}
	b, err := s.svc.OpenState(rest)
	if err != nil {
		return "", mcptasks.ErrUnknownTask
	}
	runID, ok := strings.CutPrefix(string(b), taskDomain)
	if !ok || runID == "" {
		return "", mcptasks.ErrUnknownTask
	}
	return runID, nil
}

// asTask answers the tool call req with the task of runID, when the
// client declared the extension on the call and can answer the task's
// input requests (form elicitation: questions and agent steps come as
// forms); it reports whether it did. Other clients get the run's result,
// whose pause the agent answers with run_continue. The run is recorded
// (it was started or continued before): a tasks/get for the task
// resolves on any replica.
func (s *Server) asTask(ctx context.Context, req *mcp.CallToolRequest, runID string) (bool, error) {
	if !mcptasks.Declared(ctx) || !canElicitForm(req) {
		return false, nil
	}
	t, err := s.tasks.get(ctx, runID)
	if err != nil {
		return false, err
	}
	return mcptasks.Create(ctx, t.Task), nil
}

// tasks serves the extension's methods from runs; the ids of the
// conformance fixtures' tasks (fixtureTaskPrefix) go to fixtures, when the
// server has them.
type tasks struct {
	s *Server
	// fixtures is set by AddConformanceFixtures, before the server serves.
	fixtures *fixtureTasks
}

// fixture is the handler of a fixture task's id, nil for any other id.
func (t *tasks) fixture(id string) mcptasks.Handler {
	if t.fixtures != nil && strings.HasPrefix(id, fixtureTaskPrefix) {
		return t.fixtures
	}
	return nil
}

func newTasks(s *Server) *tasks { return &tasks{s: s} }

// Get implements mcptasks.Handler.
func (t *tasks) Get(ctx context.Context, id string) (*mcptasks.DetailedTask, error) {
	if f := t.fixture(id); f != nil {
		return f.Get(ctx, id)
	}
	runID, err := t.s.taskRun(id)
	if err != nil {
		return nil, err
	}
	return t.get(ctx, runID)
}

// get maps the run to its task: running → working, a pause →
// input_required, succeeded or failed → completed with run_get's result,
// canceled → cancelled.
func (t *tasks) get(ctx context.Context, runID string) (*mcptasks.DetailedTask, error) {
	// The brief view first: a running run's steps, which may be many, are
	// read only once it finished (for run_get's result).
	v, err := t.s.svc.GetRunBrief(ctx, runID)
	if err == nil {
		switch v.Status {
		case code.StatusSucceeded, code.StatusFailed:
			v, err = t.s.svc.GetRun(ctx, runID) // as run_get reads it
		}
	}
	if err != nil {
		var ee *service.Error
		if errors.As(err, &ee) && ee.Code == code.RunNotFound {
			return nil, mcptasks.ErrUnknownTask
		}
		return nil, err
	}
	d := &mcptasks.DetailedTask{Task: mcptasks.Task{TaskID: t.s.taskID(runID), Status: mcptasks.Working,
		CreatedAt: mcptasks.Time(v.CreatedAt), LastUpdatedAt: mcptasks.Time(v.UpdatedAt), PollIntervalMs: taskPollMs}}
	if v.FinishedAt != nil {
		if keep := t.s.svc.Retention(); keep > 0 {
			ttl := (v.FinishedAt.Add(keep).Sub(v.CreatedAt)).Milliseconds()
			d.TTLMs = &ttl
		}
	}
	switch {
	case v.Status == code.StatusSucceeded || v.Status == code.StatusFailed:
		out, err := t.s.runResultPage(v, true, "", 0) // as run_get shapes it
		if err != nil {
			return nil, err
		}
		res, err := boundResult("run_get", out)
		if err != nil {
			res = errorResult(toolError(t.s.log, "run_get", err))
		}
		res.IsError = v.Status == code.StatusFailed
		d.Status, d.Result, d.StatusMessage = mcptasks.Completed, res, out.Summary()
	case v.Status == code.StatusCanceled:
		d.Status = mcptasks.Cancelled
		if out := t.s.runResult(v, false); out.Error != nil {
			d.StatusMessage = out.Error.Message
		}
	case v.Status == code.StatusWaiting:
		ps, err := t.s.svc.OpenPauses(ctx, runID)
		if err != nil {
			return nil, err
		}
		if len(ps) == 0 { // waiting on a sub-workflow that runs, or answered since
			if d.StatusMessage, err = t.runningMessage(ctx, runID); err != nil {
				return nil, err
			}
			break
		}
		d.Status = mcptasks.InputRequired
		d.InputRequests = mcp.InputRequestMap{}
		var msgs []string
		for i := range ps {
			key, r, err := t.key(ctx, runID, &ps[i])
			if err != nil {
				return nil, err
			}
			d.InputRequests[key] = t.request(runID, &ps[i], r.Problem)
			msgs = append(msgs, waitingMessage(&ps[i], r.Problem))
		}
		d.StatusMessage = strings.Join(msgs, "; ")
	case v.Status == code.StatusPaused:
		d.StatusMessage = "held (run_pause): it takes no step until run_resume"
	case v.Status == code.StatusQueued:
		d.StatusMessage = "queued behind its workflow's concurrency limit: it starts when a run of its queue finishes"
	default:
		if d.StatusMessage, err = t.runningMessage(ctx, runID); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// runningMessage says where a running run is, from its last event: the
// step it runs, or the one it finished last.
func (t *tasks) runningMessage(ctx context.Context, runID string) (string, error) {
	ev, err := t.s.svc.LastEvent(ctx, runID)
	if err != nil {
		return "", err
	}
	return eventMessage(ev), nil
}

func eventMessage(ev service.StoredEvent) string {
	switch {
	case ev.StepID == "":
		return "running"
	case ev.Type == code.EventStepStarted:
		return "running step " + ev.StepID
	case strings.HasPrefix(ev.Type, "step."):
		return "running: step " + ev.StepID + " " + strings.TrimPrefix(ev.Type, "step.")
	}
	return "running: " + ev.Type + " at step " + ev.StepID
}

func waitingMessage(p *service.Pause, problem string) string {
	msg := "waiting for the answer to question " + p.StepID
	if p.Kind == code.PauseAgent {
		msg = "waiting for the result of agent step " + p.StepID
	}
	if problem != "" {
		msg = "the answer was refused (" + problem + "); " + msg
	}
	return msg
}

// pauseKey names a pause uniquely over the run's lifetime: its step and
// sequence number (and, for a sub-workflow's pause, its run).
func pauseKey(root string, p *service.Pause) string {
	k := p.StepID + "." + strconv.FormatInt(p.Seq, 10)
	if p.RunID != root {
		h := sha256.Sum256([]byte(p.RunID))
		k = hex.EncodeToString(h[:4]) + "." + k
	}
	return k
}

// key is the input request key of an open pause: a new one after each
// refused answer (recorded with the run), since a key answered is never
// offered again.
func (t *tasks) key(ctx context.Context, root string, p *service.Pause) (string, service.Refusal, error) {
	base := pauseKey(root, p)
	r, err := t.s.svc.Refusal(ctx, p.RunID, p.Seq)
	if err != nil || r.Count == 0 {
		return base, r, err
	}
	return base + ".r" + strconv.Itoa(r.Count), r, nil
}

// request is the elicitation that asks for a pause's answer. A question's
// form is elicit.go's; a secret goes to a one-time page (url mode) over
// HTTP, else its form asks for "$NAME", an environment variable of the
// server that holds it. An agent step's form has the instructions as its
// message and the output schema as its schema (wrapped in an object
// "value" unless it is an object itself).
func (t *tasks) request(root string, p *service.Pause, problem string) *mcp.ElicitParams {
	if p.Kind == code.PauseAgent {
		msg := p.Instructions
		if p.Persona != "" {
			msg = "As " + p.Persona + ": " + msg
		}
		if p.Context != nil {
			if b, err := json.Marshal(p.Context); err == nil {
				msg += "\nContext: " + string(b)
			}
		}
		if problem != "" {
			msg = "That result was not accepted (" + problem + ").\n" + msg
		}
		return &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: agentSchema(p)}
	}
	if p.HasSecret() {
		if t.s.opts.BaseURL != "" {
			_, link := t.s.secrets.open(p, t.s.opts.BaseURL) // the pause's page, made on its first read
			return &mcp.ElicitParams{Mode: "url", URL: link, ElicitationID: pauseKey(root, p),
				Message: "stepwise needs a secret for run " + p.RunID + ": " + p.Prompt + " Open the one-time page to type it; it goes straight to stepwise."}
		}
		return &mcp.ElicitParams{Mode: "form", Message: questionMessage(p, problem) +
			"\nThis answer is a secret: give the name of an environment variable of the stepwise server that holds it, as $NAME (a value is refused).",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string", "pattern": "^\\$[A-Za-z_][A-Za-z0-9_]*$"}}, "required": []string{"value"}}}
	}
	if schema, ok := formSchema(p); ok {
		return &mcp.ElicitParams{Mode: "form", Message: questionMessage(p, problem), RequestedSchema: schema}
	}
	// What a form cannot express: the answer as JSON text.
	return &mcp.ElicitParams{Mode: "form", Message: questionMessage(p, problem),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string", "description": "the answer as JSON"}}, "required": []string{"value"}}}
}

// agentSchema is an agent step's output schema as an elicitation's
// requested schema: an object schema as it is, any other in "value".
func agentSchema(p *service.Pause) map[string]any {
	if p.OutputSchema != nil && p.OutputSchema["type"] == "object" {
		return p.OutputSchema
	}
	inner := p.OutputSchema
	if inner == nil {
		inner = map[string]any{}
	}
	return map[string]any{"type": "object", "properties": map[string]any{"value": inner}, "required": []string{"value"}}
}

// answerOf is the value an accepted elicitation gives a pause.
func answerOf(p *service.Pause, content map[string]any) any {
	switch {
	case p.Kind == code.PauseAgent:
		if p.OutputSchema != nil && p.OutputSchema["type"] == "object" {
			return content
		}
		return content["value"]
	case p.HasSecret():
		return content["value"]
	}
	if _, ok := formSchema(p); ok {
		return fromForm(p, content)
	}
	text, _ := content["value"].(string)
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return text
	}
	return v
}

// Update implements mcptasks.Handler: the response under an open pause's
// current key answers it, validated as run_continue validates (every open
// pause, those of parallel branches too); other keys are ignored. A refused answer (or a declined or canceled elicitation)
// leaves the pause open, offered again under a new key.
func (t *tasks) Update(ctx context.Context, id string, responses mcp.InputResponseMap) error {
	if f := t.fixture(id); f != nil {
		return f.Update(ctx, id, responses)
	}
	runID, err := t.s.taskRun(id)
	if err != nil {
		return err
	}
	ps, err := t.s.svc.OpenPauses(ctx, runID)
	if err != nil {
		var ee *service.Error
		if errors.As(err, &ee) && ee.Code == code.RunNotFound {
			return mcptasks.ErrUnknownTask
		}
		return err
	}
	for i := range ps {
		if err := t.answer(ctx, runID, &ps[i], responses); err != nil {
			return err
		}
	}
	return nil
}

// answer answers the pause p of the task's run with its response, if
// responses has one under the pause's current key.
func (t *tasks) answer(ctx context.Context, runID string, p *service.Pause, responses mcp.InputResponseMap) error {
	key, _, err := t.key(ctx, runID, p)
	if err != nil {
		return err
	}
	resp, ok := responses[key].(*mcp.ElicitResult)
	if !ok {
		return nil
	}
	refuse := func(problem string) error {
		_, _, err := t.s.svc.RecordRefusal(ctx, p.RunID, p.Seq, problem)
		return err
	}
	if resp.Action != "accept" {
		return refuse("the request was " + resp.Action + "ed; the run still waits for it — tasks/cancel stops it")
	}
	if p.HasSecret() && t.s.opts.BaseURL != "" && p.Kind != code.PauseAgent {
		return nil // the value arrives through the page
	}
	if _, err := t.s.svc.ContinueFromAgent(ctx, p.Token, answerOf(p, resp.Content)); err != nil {
		var ee *service.Error
		if errors.As(err, &ee) && (ee.Code == code.AnswerInvalid || ee.Code == code.SecretInClear) {
			if p.HasSecret() {
				return refuse("the answer was not accepted: give $NAME, an environment variable of the server") // what was wrong may tell of the secret
			}
			return refuse(violationsText(ee))
		}
		if errors.As(err, &ee) {
			return nil // the pause moved on (answered elsewhere, timed out)
		}
		return err
	}
	return nil
}

// violationsText says what was wrong with an answer, every violation.
func violationsText(ee *service.Error) string {
	if len(ee.Violations) == 0 {
		return ee.Message
	}
	parts := make([]string, 0, len(ee.Violations))
	for _, v := range ee.Violations {
		parts = append(parts, violationText(v))
	}
	return strings.Join(parts, "; ")
}

func violationText(v workflow.Violation) string {
	if v.Path != "" {
		return v.Path + ": " + v.Message
	}
	return v.Message
}

// Cancel implements mcptasks.Handler: the run is canceled (a run already
// finished stays as it is).
func (t *tasks) Cancel(ctx context.Context, id string) error {
	if f := t.fixture(id); f != nil {
		return f.Cancel(ctx, id)
	}
	runID, err := t.s.taskRun(id)
	if err != nil {
		return err
	}
	if err := t.s.svc.Cancel(ctx, runID, "canceled by tasks/cancel", false); err != nil {
		var ee *service.Error
		if errors.As(err, &ee) && ee.Code == code.RunNotFound {
			return mcptasks.ErrUnknownTask
		}
		if errors.As(err, &ee) && ee.Code == code.RunFinished {
			return nil
		}
		return err
	}
	return nil
}

// Watch implements mcptasks.Watcher: once subscribed, every task's state
// is told, then a task may have changed at each event of its run or of
// its sub-workflow runs (the engine's bus: this
// process's runs, and those of other replicas it is told of).
func (t *tasks) Watch(ctx context.Context, taskIDs []string, changed func(taskID string)) {
	var mu sync.Mutex
	byRun := map[string]string{} // run (the task's, or a sub-workflow's) → task id
	for _, id := range taskIDs {
		runID, err := t.s.taskRun(id)
		if err != nil {
			continue
		}
		byRun[runID] = id
		kids, _ := t.s.svc.Children(ctx, runID) // none known: the parent's events still tell
		for _, k := range kids {
			byRun[k] = id
		}
	}
	if len(byRun) == 0 {
		<-ctx.Done()
		return
	}
	task := func(runID string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		id, ok := byRun[runID]
		return id, ok
	}
	events, unsubscribe := t.s.svc.Engine.SubscribeWanting(64, func(runID string) bool { _, ok := task(runID); return ok })
	defer unsubscribe()
	for _, id := range taskIDs { // watched from here on: their state now
		changed(id)
	}
	service.Consume(ctx, events, func(ev service.Event) {
		id, mine := task(ev.RunID)
		if !mine {
			return
		}
		if ev.Type == code.EventChildStarted {
			var data struct {
				Child string `json:"child_run_id"`
			}
			if json.Unmarshal(ev.Data, &data) == nil && data.Child != "" {
				mu.Lock()
				byRun[data.Child] = id
				mu.Unlock()
			}
		}
		changed(id)
	})
}

// TaskTransport wraps a transport of this server's sessions so that
// subscriptions/listen carries notifications/tasks (mcptasks.WithNotifications):
// for the transports whose connections the caller makes (stdio).
func (s *Server) TaskTransport(t mcp.Transport) mcp.Transport {
	return mcptasks.WithNotifications(t, s.tasks)
}

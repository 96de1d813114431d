package web

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/graph"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// Statuses a run list filters by.
var runStatuses = []string{code.StatusQueued, code.StatusPending, code.StatusRunning, code.StatusWaiting, code.StatusPaused,
	code.StatusSucceeded, code.StatusFailed, code.StatusCanceled}

// runsPageSize is how many runs a page of the list shows.
const runsPageSize = 50

// runsData is the runs page.
type runsData struct {
	Workflow, Query, After, Before string
	Statuses                       []statusOption
	Runs                           []runRow
	Next                           template.URL // the next page, "" when last
	Problem                        string
}

type statusOption struct {
	Name    string
	Checked bool
}

type runRow struct {
	ID, Workflow, Status, Parent string
	Started                      time.Time
	Duration                     string
}

// timeLayouts are the forms a time filter is accepted in (datetime-local
// inputs send the first).
var timeLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", time.RFC3339, "2006-01-02"}

func parseTime(s string) (time.Time, error) {
	for _, l := range timeLayouts {
		if t, err := time.ParseInLocation(l, strings.TrimSpace(s), time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("not a time")
}

func (h *Handler) runsPage(w http.ResponseWriter, r *http.Request, c caller) {
	q := r.URL.Query()
	d := runsData{Workflow: strings.TrimSpace(q.Get("workflow")), Query: strings.TrimSpace(q.Get("q")), After: q.Get("after"), Before: q.Get("before")}
	f := service.RunFilter{Workflow: d.Workflow, Limit: runsPageSize, Cursor: q.Get("cursor")}
	for _, s := range runStatuses {
		on := slices.Contains(q["status"], s)
		d.Statuses = append(d.Statuses, statusOption{s, on})
		if on {
			f.Status = append(f.Status, s)
		}
	}
	var problems []string
	if d.After != "" {
		t, err := parseTime(d.After)
		if err != nil {
			problems = append(problems, "“from” is not a date and time")
		}
		f.CreatedAfter = t
	}
	if d.Before != "" {
		t, err := parseTime(d.Before)
		if err != nil {
			problems = append(problems, "“to” is not a date and time")
		}
		f.CreatedBefore = t
	}
	f.Search = d.Query
	status := http.StatusOK
	if len(problems) > 0 {
		d.Problem = strings.Join(problems, "; ") + "."
		status = http.StatusBadRequest
	} else {
		runs, next, err := h.svc.ListRuns(r.Context(), f)
		switch {
		case errors.Is(err, service.ErrCursorInvalid):
			d.Problem = "That page link is no longer valid: start from the first page."
			status = http.StatusBadRequest
		case err != nil:
			h.fail(w, r, c, err)
			return
		}
		now := time.Now()
		for _, v := range runs {
			d.Runs = append(d.Runs, rowOf(v, now))
		}
		if next != "" {
			nq := url.Values{}
			for k, vs := range q {
				if k != "cursor" {
					nq[k] = vs
				}
			}
			nq.Set("cursor", next)
			d.Next = template.URL("/runs?" + nq.Encode()) // built by url.Values: safe
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "runs", h.page(c, "Runs", "runs", d))
}

func rowOf(v *service.RunView, now time.Time) runRow {
	end := now
	if v.FinishedAt != nil {
		end = *v.FinishedAt
	}
	return runRow{ID: v.ID, Workflow: v.Workflow, Status: v.Status, Parent: v.ParentID, Started: v.CreatedAt,
		Duration: durationText(end.Sub(v.CreatedAt))}
}

// runData is a run's page.
type runData struct {
	Run       *service.RunView
	Graph     template.HTML
	Steps     []stepRow
	Events    []eventRow
	MoreEvent bool
	LastSeq   int64
	Children  []childLink
	Form      *answerForm
	SecretURL string
	Controls  []string
	Live      bool // the run may still change: the page follows it
	CSRF      string
}

type stepRow struct {
	service.StepView
	Name string // Key or ID
}

type eventRow struct {
	Seq    int64
	At     time.Time
	Type   string
	StepID string
	Data   string
}

type childLink struct{ ID, Text string }

// maxEvents is how many events a run's page shows (the first ones; the
// live view adds the newer).
const maxEvents = 500

// maxGraphSteps bounds the workflows drawn.
const maxGraphSteps = 2000

func (h *Handler) runData(ctx context.Context, id string) (*runData, error) {
	v, err := h.svc.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	d := &runData{Run: v, Live: !code.Finished(v.Status)}
	for _, s := range v.Steps {
		row := stepRow{StepView: s, Name: s.ID}
		if s.Key != "" {
			row.Name = s.Key
		}
		d.Steps = append(d.Steps, row)
	}
	evs, err := h.svc.Events(ctx, id, 0, maxEvents+1)
	if err != nil {
		return nil, err
	}
	if len(evs) > maxEvents {
		evs, d.MoreEvent = evs[:maxEvents], true
	}
	status := service.StepStatuses(v)
	for _, e := range evs {
		d.Events = append(d.Events, eventOf(e))
		d.LastSeq = e.Seq
		// A step is recorded when it ends: one that started and is not
		// recorded yet is running while the run is.
		if e.Type == code.EventStepStarted && status[e.StepID] == "" && v.Status == code.StatusRunning {
			status[e.StepID] = code.StatusRunning
		}
	}
	if v.Pause != nil {
		status[v.Pause.StepID] = code.StatusWaiting
	}
	if l, err := h.svc.Definition(ctx, id); err == nil && countSteps(l.Workflow.Steps) <= maxGraphSteps {
		svg, err := graph.SVG(l.Workflow, graph.SVGOptions{Status: status})
		if err == nil {
			d.Graph = template.HTML(svg) // graph.SVG escapes what it draws
		}
	}
	for _, ch := range v.Children {
		cid, _, _ := strings.Cut(ch, " ")
		d.Children = append(d.Children, childLink{ID: cid, Text: ch})
	}
	if v.Pause != nil && v.Pause.Kind == code.PauseQuestion {
		if v.Pause.HasSecret() {
			if h.opts.SecretURL != nil {
				d.SecretURL = h.opts.SecretURL(v.Pause)
			}
		} else {
			d.Form = formOf(v.Pause, nil, nil)
		}
	}
	d.Controls = controlsFor(v.Status)
	return d, nil
}

func countSteps(steps []*workflow.Step) int {
	n := 0
	for _, s := range steps {
		n += 1 + countSteps(s.Parallel) + countSteps(s.Steps)
	}
	return n
}

func eventOf(e service.StoredEvent) eventRow {
	data := ""
	if len(e.Data) > 0 && string(e.Data) != "null" && string(e.Data) != "{}" {
		data = string(e.Data)
		if len(data) > 2000 {
			data = data[:2000] + "…"
		}
	}
	return eventRow{Seq: e.Seq, At: e.At, Type: e.Type, StepID: e.StepID, Data: data}
}

// controlsFor lists the controls that apply to a run in status.
func controlsFor(status string) []string {
	switch status {
	case code.StatusRunning, code.StatusPending:
		return []string{"pause", "cancel"}
	case code.StatusQueued:
		return []string{"cancel"}
	case code.StatusWaiting:
		return []string{"pause", "cancel", "fork"}
	case code.StatusPaused:
		return []string{"resume", "cancel"}
	case code.StatusFailed:
		return []string{"retry", "fork"}
	case code.StatusSucceeded, code.StatusCanceled:
		return []string{"fork"}
	}
	return nil
}

func (h *Handler) runPage(w http.ResponseWriter, r *http.Request, c caller) {
	d, err := h.runData(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, c, err)
		return
	}
	d.CSRF = h.page(c, "", "", nil).CSRF
	name := "run"
	if r.URL.Query().Get("fragment") == "live" {
		name = "fragment-live"
	}
	h.render(w, r, name, h.page(c, "Run "+d.Run.ID, "runs", d))
}

// fail shows an error page: 404 for a run or workflow not found.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, c caller, err error) {
	var ee *service.Error
	status, msg := http.StatusInternalServerError, "Something failed on the server's side; see its log."
	switch {
	case errors.As(err, &ee) && ee.Category == code.CategoryNotFound:
		status, msg = http.StatusNotFound, ee.Message
	case errors.As(err, &ee) && (ee.Category == code.CategoryValidation || ee.Category == code.CategoryConflict || ee.Category == code.CategoryAuth):
		status, msg = http.StatusConflict, ee.Message
		if ee.Suggestion != "" {
			msg += " (" + ee.Suggestion + ")"
		}
	default:
		h.log.Error("dashboard", "path", r.URL.Path, "error", err)
	}
	w.WriteHeader(status)
	h.render(w, r, "error", h.page(c, "Error", "", nil).with(msg))
}

func (p pageData) with(msg string) pageData { p.Message = msg; return p }

// answerForm is an open question as a form.
type answerForm struct {
	Seq     int64
	StepID  string
	Title   string
	Prompt  string
	Help    string
	Fields  []formField
	Problem []string // not tied to one field
}

type formField struct {
	Name, Label, Help, Input, Value, Pattern string
	Required                                 bool
	Previous                                 bool // Value is the earlier answer
	Min, Max                                 string
	Choices                                  []formChoice
	Multi                                    bool
	Errors                                   []string
}

type formChoice struct {
	Value, Label, Description string
	Checked                   bool
}

// formOf builds the form of p, with the values and problems of a refused
// answer.
func formOf(p *service.Pause, posted url.Values, problems map[string][]string) *answerForm {
	f := &answerForm{Seq: p.Seq, StepID: p.StepID, Title: p.Title, Prompt: p.Prompt, Help: p.Help}
	field := func(name string, q service.Question, label string) formField {
		ff := formField{Name: name, Label: label, Help: q.Help, Input: "text", Pattern: q.Pattern, Required: q.Default == nil, Previous: q.Previous}
		if q.Min != nil {
			ff.Min = strconv.FormatFloat(*q.Min, 'f', -1, 64)
		}
		if q.Max != nil {
			ff.Max = strconv.FormatFloat(*q.Max, 'f', -1, 64)
		}
		if q.Default != nil {
			ff.Value = valueText(q.Default)
		}
		switch q.Type {
		case "integer", "number":
			ff.Input = "number"
		case "boolean":
			ff.Input = "boolean"
			ff.Choices = []formChoice{{Value: "true", Label: "Yes"}, {Value: "false", Label: "No"}}
		case "choice", "multi-choice":
			ff.Input, ff.Multi = "choice", q.Type == "multi-choice"
			for _, c := range q.Choices {
				label := c.Label
				if label == "" {
					label = valueText(c.Value)
				}
				ff.Choices = append(ff.Choices, formChoice{Value: valueText(c.Value), Label: label, Description: c.Description})
			}
		case "object", "array":
			ff.Input = "json"
		case "string":
			if q.Max == nil || *q.Max > 200 {
				ff.Input = "textarea"
			}
		}
		if ff.Input != "text" && ff.Input != "number" {
			ff.Pattern = ""
		}
		if ff.Input != "number" && ff.Input != "text" && ff.Input != "textarea" {
			ff.Min, ff.Max = "", ""
		}
		if ff.Input == "text" || ff.Input == "textarea" {
			ff.Min, ff.Max = "", "" // lengths, checked by the server
		}
		var picked []string
		if posted != nil {
			picked = posted[name]
			ff.Value = strings.Join(picked, ",")
		} else if ff.Multi {
			if l, ok := q.Default.([]any); ok {
				for _, x := range l {
					picked = append(picked, valueText(x))
				}
			}
		} else if q.Default != nil {
			picked = []string{valueText(q.Default)}
		}
		for i := range ff.Choices {
			ff.Choices[i].Checked = slices.Contains(picked, ff.Choices[i].Value)
		}
		ff.Errors = problems[name]
		return ff
	}
	if len(p.Fields) == 0 {
		label := p.Prompt
		if label == "" {
			label = "Answer"
		}
		f.Prompt = ""
		f.Fields = []formField{field("value", p.Question, label)}
	} else {
		for _, q := range p.Fields {
			label := q.Prompt
			if label == "" {
				label = q.Name
			}
			f.Fields = append(f.Fields, field(q.Name, q, label))
		}
	}
	f.Problem = problems[""]
	return f
}

// valueText is a choice or default value as form text.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return strings.TrimSpace(jsonText(v))
}

// answerValue reads the posted answer with the question's types; problems
// are by field name.
func answerValue(p *service.Pause, form url.Values) (any, map[string][]string) {
	problems := map[string][]string{}
	parse := func(name string, q service.Question) (any, bool) {
		texts := form[name]
		text := strings.Join(texts, ",")
		if q.Type == "multi-choice" {
			list := make([]any, 0, len(texts))
			for _, t := range texts {
				v := any(t)
				for _, c := range q.Choices {
					if valueText(c.Value) == t {
						v = c.Value
					}
				}
				list = append(list, v)
			}
			return list, true
		}
		if q.Type == "choice" {
			for _, c := range q.Choices {
				if valueText(c.Value) == text {
					return c.Value, true
				}
			}
			return text, true
		}
		if len(texts) == 0 || (text == "" && q.Type != "string") {
			if q.Default != nil {
				return nil, false
			}
			problems[name] = append(problems[name], "An answer is needed.")
			return nil, false
		}
		v, err := workflow.ParseText(text, q.Type)
		if err != nil {
			problems[name] = append(problems[name], "Not a valid "+q.Type+".")
			return nil, false
		}
		return v, true
	}
	if len(p.Fields) == 0 {
		v, ok := parse("value", p.Question)
		if !ok && len(problems) == 0 {
			return p.Default, nil
		}
		return v, problems
	}
	out := map[string]any{}
	for _, q := range p.Fields {
		if v, ok := parse(q.Name, q); ok {
			out[q.Name] = v
		}
	}
	return out, problems
}

// answer serves POST /runs/{id}/answer: the open question's answer,
// through service.Continue.
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, c caller) {
	r.Body = http.MaxBytesReader(w, r.Body, 256<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return
	}
	if !h.checkPost(w, r, c) {
		return
	}
	id := r.PathValue("id")
	d, err := h.runData(r.Context(), id)
	if err != nil {
		h.fail(w, r, c, err)
		return
	}
	d.CSRF = h.page(c, "", "", nil).CSRF
	p := d.Run.Pause
	seq, _ := strconv.ParseInt(r.PostFormValue("seq"), 10, 64)
	if p == nil || p.Kind != code.PauseQuestion || p.Seq != seq || p.HasSecret() {
		w.WriteHeader(http.StatusConflict)
		d.Form = nil
		if p != nil && p.Kind == code.PauseQuestion && !p.HasSecret() {
			d.Form = formOf(p, nil, nil)
		}
		h.render(w, r, "run", h.page(c, "Run "+id, "runs", d).with("That question is no longer open: nothing was changed. The page shows the run as it is now."))
		return
	}
	value, problems := answerValue(p, r.PostForm)
	if len(problems) == 0 {
		_, err = h.svc.Continue(r.Context(), p.Token, value)
		var ee *service.Error
		switch {
		case err == nil:
			http.Redirect(w, r, "/runs/"+url.PathEscape(id), http.StatusSeeOther)
			return
		case errors.As(err, &ee) && ee.Code == code.AnswerInvalid:
			for _, v := range ee.Violations {
				name := strings.TrimPrefix(v.Path, "/")
				if len(p.Fields) == 0 {
					name = "value"
				}
				problems[name] = append(problems[name], v.Message)
			}
			if len(ee.Violations) == 0 {
				problems[""] = append(problems[""], ee.Message)
			}
		default:
			h.fail(w, r, c, err)
			return
		}
	}
	// Problems on fields the form does not have are shown above it.
	known := map[string]bool{"value": true}
	for _, q := range p.Fields {
		known[q.Name] = true
	}
	for name, msgs := range problems {
		if name != "" && !known[name] {
			problems[""] = append(problems[""], msgs...)
		}
	}
	d.Form = formOf(p, r.PostForm, problems)
	w.WriteHeader(http.StatusUnprocessableEntity)
	h.render(w, r, "run", h.page(c, "Run "+id, "runs", d).with("The answer was not accepted: nothing was changed."))
}

// controlData is the confirmation page of a control.
type controlData struct {
	Run    *service.RunView
	Action string
	Steps  []string // fork: the steps to fork from
	Step   string
}

var controlTitles = map[string]string{"cancel": "Cancel", "retry": "Retry", "fork": "Fork", "pause": "Pause", "resume": "Resume"}

func (h *Handler) controlPage(w http.ResponseWriter, r *http.Request, c caller) {
	h.showControl(w, r, c, http.StatusOK, "")
}

func (h *Handler) showControl(w http.ResponseWriter, r *http.Request, c caller, status int, msg string) {
	action := r.FormValue("action")
	if controlTitles[action] == "" {
		w.WriteHeader(http.StatusBadRequest)
		h.render(w, r, "error", h.page(c, "Error", "", nil).with("No such control: give action=cancel, retry, fork, pause or resume."))
		return
	}
	v, err := h.svc.GetRun(r.Context(), r.PathValue("id"))
	if err != nil {
		h.fail(w, r, c, err)
		return
	}
	d := controlData{Run: v, Action: action, Step: r.FormValue("step")}
	if action == "fork" {
		seen := map[string]bool{}
		for _, s := range v.Steps {
			if !seen[s.ID] {
				seen[s.ID] = true
				d.Steps = append(d.Steps, s.ID)
			}
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "control", h.page(c, controlTitles[action]+" run "+v.ID, "runs", d).with(msg))
}

// control serves POST /runs/{id}/control: a confirmed cancel, retry,
// fork, pause or resume.
func (h *Handler) control(w http.ResponseWriter, r *http.Request, c caller) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return
	}
	if !h.checkPost(w, r, c) {
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		h.showControl(w, r, c, http.StatusUnprocessableEntity, "Tick the box to confirm: nothing was changed.")
		return
	}
	id := r.PathValue("id")
	ctx := r.Context()
	target := id
	var err error
	switch r.PostFormValue("action") {
	case "cancel":
		err = h.svc.Cancel(ctx, id, "canceled from the dashboard", r.PostFormValue("compensate") == "yes")
	case "retry":
		err = h.svc.RetryRun(ctx, id, nil)
	case "fork":
		target, err = h.svc.ForkRun(ctx, id, r.PostFormValue("step"), nil)
	case "pause":
		err = h.svc.PauseRun(ctx, id)
	case "resume":
		_, err = h.svc.Resume(ctx, id)
	default:
		h.showControl(w, r, c, http.StatusBadRequest, "")
		return
	}
	if err != nil {
		var ee *service.Error
		if errors.As(err, &ee) {
			msg := ee.Message
			if ee.Suggestion != "" {
				msg += " (" + ee.Suggestion + ")"
			}
			h.showControl(w, r, c, http.StatusConflict, "Refused: "+msg+".")
			return
		}
		h.fail(w, r, c, err)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(target), http.StatusSeeOther)
}

package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// secretPages are one-time pages where a person types the answer of a
// secret question, so that it reaches stepwise without passing through the
// agent. The random id in the URL is the capability: it names one pause,
// works until that pause is answered (or expires) and never again.
type secretPages struct {
	// db, when set, keeps the pages instead (the replicas on one
	// database share them); the fields below are then unused.
	db  service.SecretPageStore
	log *slog.Logger

	mu      sync.Mutex
	byID    map[string]*secretPage
	byToken map[string]string
	// given remembers, until their pause would have expired, the pages
	// whose secret arrived: a waiter that starts after the post still
	// learns it was given.
	given map[string]time.Time
}

type secretPage struct {
	id    string
	pause service.Pause
	done  chan struct{}
	ended bool
}

func newSecretPages() *secretPages {
	return &secretPages{byID: map[string]*secretPage{}, byToken: map[string]string{}, given: map[string]time.Time{}}
}

// open returns the page of a pause, creating it the first time.
func (sp *secretPages) open(p *service.Pause, base string) (id, link string) {
	if sp.db != nil {
		id, err := sp.dbOpen(p)
		if err == nil {
			return id, base + "/secrets/" + id
		}
		sp.log.Error("secret page: kept by this replica only", "run_id", p.RunID, "error", err)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.sweep()
	if id, ok := sp.byToken[p.Token]; ok {
		return id, base + "/secrets/" + id
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	id = base64.RawURLEncoding.EncodeToString(b)
	sp.byID[id] = &secretPage{id: id, pause: *p, done: make(chan struct{})}
	sp.byToken[p.Token] = id
	return id, base + "/secrets/" + id
}

// sweep forgets pages whose pause expired. Called with mu held.
func (sp *secretPages) sweep() {
	now := time.Now()
	for id, pg := range sp.byID {
		if !pg.pause.ExpiresAt.IsZero() && now.After(pg.pause.ExpiresAt) {
			sp.endLocked(id)
		}
	}
	for id, until := range sp.given {
		if now.After(until) {
			delete(sp.given, id)
		}
	}
}

func (sp *secretPages) get(id string) *secretPage {
	if sp.db != nil {
		if pg := sp.dbGet(id); pg != nil {
			return pg
		}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.byID[id]
}

// complete ends a page whose secret was given.
func (sp *secretPages) complete(id string) {
	if sp.db != nil {
		sp.dbEnd(id, true)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if pg, ok := sp.byID[id]; ok {
		until := pg.pause.ExpiresAt
		if until.IsZero() {
			until = time.Now().Add(time.Hour)
		}
		sp.given[id] = until
	}
	sp.endLocked(id)
}

// close ends a page: its link stops working.
func (sp *secretPages) close(id string) {
	if sp.db != nil {
		sp.dbEnd(id, false)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.endLocked(id)
}

func (sp *secretPages) endLocked(id string) {
	pg, ok := sp.byID[id]
	if !ok {
		return
	}
	delete(sp.byID, id)
	delete(sp.byToken, pg.pause.Token)
	if !pg.ended {
		pg.ended = true
		close(pg.done)
	}
}

// wait waits until the page's secret was given (true), or d passes or the
// page ends otherwise (false).
func (sp *secretPages) wait(ctx context.Context, id string, d time.Duration) bool {
	sp.mu.Lock()
	pg := sp.byID[id]
	if sp.db != nil && pg == nil {
		sp.mu.Unlock()
		return sp.dbWait(ctx, id, d)
	}
	_, given := sp.given[id]
	sp.mu.Unlock()
	if given {
		return true
	}
	if pg == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-pg.done:
		sp.mu.Lock()
		defer sp.mu.Unlock()
		_, given := sp.given[id]
		return given
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// secretURL is the one-time page of a secret pause, or "" when the server
// serves no HTTP.
func (s *Server) secretURL(p *service.Pause) string {
	if s.opts.BaseURL == "" || s.opts.Stateless { // a page would answer a stored run
		return ""
	}
	_, link := s.secrets.open(p, s.opts.BaseURL)
	return link
}

// SecretURL is the one-time page where the secret question of pause p
// is answered, or "" when the server serves no HTTP.
func (s *Server) SecretURL(p *service.Pause) string { return s.secretURL(p) }

// SecretHandler serves /secrets/{id}: GET shows the form, POST takes the
// value, seals it (the engine does) and continues the run.
func (s *Server) SecretHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
		h.Set("Content-Type", "text/html; charset=utf-8")
		id := strings.TrimPrefix(r.URL.Path, "/secrets/")
		pg := s.secrets.get(id)
		if pg == nil || strings.Contains(id, "/") {
			w.WriteHeader(http.StatusNotFound)
			_ = pageTmpl().Execute(w, pageData{Done: "This link was already used or has expired. Ask for the question again."})
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			_ = pageTmpl().Execute(w, s.pageData(pg, nil))
		case http.MethodPost:
			if !s.sameOrigin(r) {
				w.WriteHeader(http.StatusForbidden)
				_ = pageTmpl().Execute(w, pageData{Done: "Refused: the form was sent from another site."})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if err := r.ParseForm(); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				_ = pageTmpl().Execute(w, s.pageData(pg, []string{"The form could not be read."}))
				return
			}
			value, problems := formValue(&pg.pause, r.PostForm)
			if len(problems) > 0 {
				w.WriteHeader(http.StatusUnprocessableEntity)
				_ = pageTmpl().Execute(w, s.pageData(pg, problems))
				return
			}
			_, err := s.svc.Continue(r.Context(), pg.pause.Token, value)
			var ee *service.Error
			switch {
			case err == nil:
				s.secrets.complete(id)
				_ = pageTmpl().Execute(w, pageData{Done: "Received. stepwise continues the run; you can close this page."})
			case errors.As(err, &ee) && ee.Code == code.AnswerInvalid:
				w.WriteHeader(http.StatusUnprocessableEntity)
				var msgs []string
				for _, v := range ee.Violations {
					msgs = append(msgs, v.Message)
				}
				_ = pageTmpl().Execute(w, s.pageData(pg, msgs))
			case errors.As(err, &ee):
				s.secrets.close(id)
				w.WriteHeader(http.StatusGone)
				_ = pageTmpl().Execute(w, pageData{Done: "This question can no longer be answered here: " + ee.Message + "."})
			default:
				s.log.Error("secret page", "run_id", pg.pause.RunID, "error", err)
				w.WriteHeader(http.StatusInternalServerError)
				_ = pageTmpl().Execute(w, s.pageData(pg, []string{"stepwise could not record the answer; try again."}))
			}
		default:
			w.Header().Set("Allow", "GET, POST")
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
}

// sameOrigin accepts a POST without an Origin header (not a browser's
// cross-site form) or with the server's own origin.
func (s *Server) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" || o == "null" && r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	base, err := url.Parse(s.opts.BaseURL)
	return err == nil && strings.EqualFold(base.Host, u.Host)
}

// formValue reads the posted answer with the question's types.
func formValue(p *service.Pause, form url.Values) (any, []string) {
	if len(p.Fields) == 0 {
		v, err := workflow.ParseText(form.Get("value"), p.Type)
		if err != nil {
			return nil, []string{"The answer is not a valid " + p.Type + "."}
		}
		return v, nil
	}
	out := map[string]any{}
	var problems []string
	for _, f := range p.Fields {
		text, ok := form[f.Name]
		if !ok || (len(text) == 1 && text[0] == "" && f.Default != nil) {
			continue // the default applies
		}
		v, err := workflow.ParseText(strings.Join(text, ","), f.Type)
		if err != nil {
			problems = append(problems, f.Prompt+": not a valid "+f.Type+".")
			continue
		}
		out[f.Name] = v
	}
	return out, problems
}

type pageField struct {
	Name, Label, Help, Input string
	Choices                  []string
}

type pageData struct {
	Title    string
	Prompt   string
	Run      string
	Fields   []pageField
	Problems []string
	Done     string
}

func (s *Server) pageData(pg *secretPage, problems []string) pageData {
	p := &pg.pause
	d := pageData{Title: p.Title, Prompt: p.Prompt, Run: p.RunID, Problems: problems}
	field := func(name string, q service.Question) pageField {
		f := pageField{Name: name, Label: q.Prompt, Help: q.Help, Input: "text"}
		if q.Secret {
			f.Input = "password"
		}
		if q.Type == "choice" && !q.Secret {
			for _, c := range q.Choices {
				f.Choices = append(f.Choices, expr.Text(c.Value))
			}
		}
		return f
	}
	if len(p.Fields) == 0 {
		f := field("value", p.Question)
		f.Label = ""
		d.Fields = []pageField{f}
	} else {
		for _, q := range p.Fields {
			d.Fields = append(d.Fields, field(q.Name, q))
		}
	}
	return d
}

// pageTmpl is the secret page, parsed on first use: most servers never
// show it, and every start of the binary would pay for parsing it.
var pageTmpl = sync.OnceValue(func() *template.Template { return template.Must(template.New("secret").Parse(pageSource)) })

const pageSource = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>stepwise — a secret is needed</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#222}
label{display:block;margin:1rem 0 .25rem;font-weight:600}input,select{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}
button{margin-top:1.25rem;padding:.5rem 1.25rem;font:inherit}.help{color:#555;font-size:.9rem}.problem{color:#a00}</style></head>
<body>{{if .Done}}<p>{{.Done}}</p>{{else}}
<h1>{{if .Title}}{{.Title}}{{else}}A secret is needed{{end}}</h1>
<p>{{.Prompt}}</p><p class="help">For run {{.Run}}. What you type goes to stepwise only — not to the assistant — and is stored sealed.</p>
{{range .Problems}}<p class="problem">{{.}}</p>{{end}}
<form method="post" autocomplete="off">
{{range .Fields}}{{if .Label}}<label for="{{.Name}}">{{.Label}}</label>{{end}}
{{if .Choices}}<select id="{{.Name}}" name="{{.Name}}">{{range .Choices}}<option>{{.}}</option>{{end}}</select>
{{else}}<input id="{{.Name}}" name="{{.Name}}" type="{{.Input}}" autocomplete="off" spellcheck="false">{{end}}
{{if .Help}}<p class="help">{{.Help}}</p>{{end}}{{end}}
<button type="submit">Send to stepwise</button></form>{{end}}
</body></html>`

package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/service"
)

const testToken = "test-token-0123456789abcdef"

const askWorkflow = `version: 1
name: ask-things
title: Ask things
steps:
  - id: name
    ask:
      prompt: "Your name <script>alert('prompt')</script>?"
      type: string
  - id: count
    ask:
      prompt: How many?
      type: integer
      min: 1
      max: 5
outputs:
  name: ${{ steps.name.answer }}
  count: ${{ steps.count.answer }}
`

const secretWorkflow = `version: 1
name: secret-ask
steps:
  - id: api_key
    ask:
      prompt: API key?
      secret: true
`

const quickWorkflow = `version: 1
name: quick
steps:
  - id: one
    uses: noop
`

const napWorkflow = `version: 1
name: nap
steps:
  - id: nap
    sleep: 300ms
  - id: done
    uses: noop
`

type dash struct {
	t   *testing.T
	svc *service.Service
	h   *Handler
	srv *httptest.Server
}

func newDash(t *testing.T, tokens ...string) *dash {
	t.Helper()
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"ask-things.yaml": askWorkflow, "nap.yaml": napWorkflow, "quick.yaml": quickWorkflow, "secret-ask.yaml": secretWorkflow} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc, err := service.Open(context.Background(), service.Options{Home: home, Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	h := New(svc, Options{AuthTokens: tokens, Poll: 50 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
		_ = svc.Close(context.Background())
	})
	return &dash{t: t, svc: svc, h: h, srv: srv}
}

// start starts a run of a library workflow.
func (d *dash) start(name string) string {
	d.t.Helper()
	l, err := d.svc.LoadLibraryWorkflow(name)
	if err != nil {
		d.t.Fatal(err)
	}
	id, err := d.svc.StartRun(context.Background(), l, nil, false)
	if err != nil {
		d.t.Fatal(err)
	}
	return id
}

// waitStatus waits until the run stops running and returns its view.
func (d *dash) waitStatus(id string) *service.RunView {
	d.t.Helper()
	if _, err := d.svc.Wait(context.Background(), id, 10*time.Second); err != nil {
		d.t.Fatal(err)
	}
	v, err := d.svc.GetRun(context.Background(), id)
	if err != nil {
		d.t.Fatal(err)
	}
	return v
}

// client is a browser: cookies, no redirects followed.
func (d *dash) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (d *dash) get(c *http.Client, path string) (int, string, http.Header) {
	d.t.Helper()
	resp, err := c.Get(d.srv.URL + path)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func (d *dash) post(c *http.Client, path string, form url.Values) (int, string, http.Header) {
	d.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", d.srv.URL)
	resp, err := c.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// login signs c in and returns the CSRF token of its session.
func (d *dash) login(c *http.Client) string {
	d.t.Helper()
	code, _, h := d.post(c, "/login", url.Values{"token": {testToken}, "next": {"/runs"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/runs" {
		d.t.Fatalf("login: %d to %q", code, h.Get("Location"))
	}
	return d.csrf(c)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (d *dash) csrf(c *http.Client) string {
	d.t.Helper()
	_, body, _ := d.get(c, "/catalogs") // any page with a form: sign-out
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		d.t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	return m[1]
}

func TestAnonymousGoesToLogin(t *testing.T) {
	d := newDash(t, testToken)
	for _, p := range []string{"/", "/runs", "/runs/x", "/workflows", "/catalogs", "/actions", "/runs/x/events"} {
		code, _, h := d.get(d.client(), p)
		if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/login?next=") {
			t.Errorf("GET %s anonymously: %d to %q, want a redirect to /login", p, code, h.Get("Location"))
		}
	}
	code, body, h := d.get(d.client(), "/login")
	if code != http.StatusOK || !strings.Contains(body, `name="token"`) {
		t.Errorf("login page: %d", code)
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("CSP %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") == "" {
		t.Errorf("security headers %v", h)
	}
}

func TestBadTokenRefused(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	code, body, h := d.post(c, "/login", url.Values{"token": {"not-the-token-at-all"}})
	if code != http.StatusUnauthorized || !strings.Contains(body, "not accepted") || h.Get("Set-Cookie") != "" {
		t.Errorf("bad token: %d, cookie %q", code, h.Get("Set-Cookie"))
	}
	if code, _, _ := d.get(c, "/runs"); code != http.StatusSeeOther {
		t.Errorf("after a refused sign-in: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, d.srv.URL+"/runs", nil)
	req.Header.Set("Authorization", "Bearer not-the-token-at-all")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad bearer: %d", resp.StatusCode)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("good bearer: %d", resp.StatusCode)
	}
}

func TestCookieSession(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	code, _, h := d.post(c, "/login", url.Values{"token": {testToken}, "next": {"//evil.example/x"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/runs" {
		t.Errorf("login: %d to %q (an off-site next must not be followed)", code, h.Get("Location"))
	}
	ck := h.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict", cookieName + "="} {
		if !strings.Contains(ck, want) {
			t.Errorf("cookie %q lacks %s", ck, want)
		}
	}
	if code, body, _ := d.get(c, "/runs"); code != http.StatusOK || !strings.Contains(body, "<h1>Runs</h1>") {
		t.Errorf("signed in: %d", code)
	}
	csrf := d.csrf(c)
	if code, _, _ := d.post(c, "/logout", url.Values{csrfField: {"wrong"}}); code != http.StatusForbidden {
		t.Errorf("logout without the CSRF token: %d", code)
	}
	if code, _, _ := d.post(c, "/logout", url.Values{csrfField: {csrf}}); code != http.StatusSeeOther {
		t.Errorf("logout: %d", code)
	}
	if code, _, _ := d.get(c, "/runs"); code != http.StatusSeeOther {
		t.Errorf("after logout: %d, want a redirect to sign in", code)
	}
}

func TestCSRFRefusedChangesNothing(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	csrf := d.login(c)
	id := d.start("ask-things")
	before := d.waitStatus(id)
	if before.Pause == nil {
		t.Fatal("no pause")
	}
	seq := before.Pause.Seq
	answer := url.Values{"seq": {itoa(seq)}, "value": {"Ada"}}
	for name, form := range map[string]url.Values{"missing": answer, "wrong": with(answer, csrfField, "x"+csrf)} {
		if code, _, _ := d.post(c, "/runs/"+id+"/answer", form); code != http.StatusForbidden {
			t.Errorf("CSRF %s: %d, want 403", name, code)
		}
	}
	// The right token from another site.
	req, _ := http.NewRequest(http.MethodPost, d.srv.URL+"/runs/"+id+"/answer", strings.NewReader(with(answer, csrfField, csrf).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %d", resp.StatusCode)
	}
	// Cancel, unconfirmed and without a token.
	if code, _, _ := d.post(c, "/runs/"+id+"/control", url.Values{"action": {"cancel"}, "confirm": {"yes"}}); code != http.StatusForbidden {
		t.Errorf("cancel without CSRF: %d", code)
	}
	after := d.waitStatus(id)
	if after.Status != "waiting" || after.Pause == nil || after.Pause.Seq != seq || len(after.Steps) != len(before.Steps) {
		t.Errorf("a refused POST changed the run: %s, %+v", after.Status, after.Pause)
	}
}

func with(v url.Values, k, val string) url.Values {
	out := url.Values{}
	for key, vs := range v {
		out[key] = vs
	}
	out.Set(k, val)
	return out
}

func itoa(n int64) string { return strings.TrimSpace(jsonText(n)) }

func TestAnswerThroughTheForm(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	csrf := d.login(c)
	id := d.start("ask-things")
	v := d.waitStatus(id)
	code, body, _ := d.get(c, "/runs/"+id)
	if code != http.StatusOK || !strings.Contains(body, `id="answer-form"`) || !strings.Contains(body, `<label for="f-value">`) {
		t.Fatalf("run page: %d\n%s", code, body)
	}
	post := func(value string, seq int64) (int, string) {
		code, body, _ := d.post(c, "/runs/"+id+"/answer", url.Values{csrfField: {csrf}, "seq": {itoa(seq)}, "value": {value}})
		return code, body
	}
	if code, _ := post("<script>alert('answer')</script>", v.Pause.Seq); code != http.StatusSeeOther {
		t.Fatalf("answer: %d", code)
	}
	v = d.waitStatus(id)
	if v.Status != "waiting" || v.Pause == nil || v.Pause.StepID != "count" {
		t.Fatalf("after the first answer: %s %+v", v.Status, v.Pause)
	}
	// Bad answers: not an integer, out of bounds; each shown at the field,
	// nothing changed.
	for _, bad := range []struct{ value, want string }{{"abc", "Not a valid integer"}, {"9", "at most 5"}} {
		code, body := post(bad.value, v.Pause.Seq)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, `id="err-value"`) || !strings.Contains(body, bad.want) {
			t.Errorf("answer %q: %d, want 422 with %q at the field", bad.value, code, bad.want)
		}
		if !strings.Contains(body, `value="`+bad.value+`"`) {
			t.Errorf("answer %q: the form does not keep the value given", bad.value)
		}
		now := d.waitStatus(id)
		if now.Status != "waiting" || now.Pause == nil || now.Pause.Seq != v.Pause.Seq {
			t.Errorf("a refused answer %q changed the run: %s %+v", bad.value, now.Status, now.Pause)
		}
	}
	// A stale form (the pause it was for is gone) changes nothing.
	if code, _ := post("3", v.Pause.Seq-1); code != http.StatusConflict {
		t.Errorf("stale form: %d", code)
	}
	if code, _ := post("3", v.Pause.Seq); code != http.StatusSeeOther {
		t.Fatalf("answer 3: %d", code)
	}
	v = d.waitStatus(id)
	if v.Status != "succeeded" || v.Outputs["count"] != float64(3) {
		t.Fatalf("run %s, outputs %v", v.Status, v.Outputs)
	}
	// The answer with <script> is shown escaped.
	_, body, _ = d.get(c, "/runs/"+id)
	if strings.Contains(body, "<script>alert") {
		t.Errorf("a <script> answer or prompt reached the page unescaped")
	}
	if !strings.Contains(body, "&lt;script&gt;alert(&#39;answer&#39;)") && !strings.Contains(body, `\u003cscript\u003ealert`) {
		t.Errorf("the answer is not shown:\n%s", body)
	}
}

func TestXSSEscaped(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	d.login(c)
	id := d.start("ask-things")
	d.waitStatus(id)
	for _, p := range []string{"/runs/" + id, "/runs/" + id + "?fragment=live", "/workflows/ask-things", "/runs?q=%3Cscript%3Ealert(1)%3C/script%3E", "/actions?q=%3Cscript%3Ex"} {
		code, body, _ := d.get(c, p)
		if code != http.StatusOK {
			t.Errorf("%s: %d", p, code)
		}
		if strings.Contains(body, "<script>") {
			t.Errorf("%s: an unescaped <script> in the page", p)
		}
	}
	_, body, _ := d.get(c, "/runs/"+id)
	if !strings.Contains(body, "&lt;script&gt;alert(&#39;prompt&#39;)&lt;/script&gt;") {
		t.Errorf("the prompt is not shown escaped")
	}
}

func TestPagesRender(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	d.login(c)
	waiting := d.start("ask-things")
	done := d.start("nap")
	d.waitStatus(waiting)
	v := d.waitStatus(done)
	if v.Status != "succeeded" {
		t.Fatalf("nap: %s", v.Status)
	}
	pages := map[string][]string{
		"/":                         {`/runs/` + waiting + `"`, `/runs/` + done + `"`, "ask-things", "nap"},
		"/runs?status=succeeded":    {`/runs/` + done + `"`},
		"/runs?workflow=ask-things": {`/runs/` + waiting + `"`},
		"/runs?q=na":                {`/runs/` + done + `"`},
		"/runs?q=" + done[:30]:      {`/runs/` + done + `"`},
		"/runs/" + done:             {`data-step="nap"`, `data-status="succeeded"`, "run.succeeded", "step.succeeded"},
		"/runs/" + waiting:          {`data-step="name"`, `data-status="waiting"`, "answer-form", `data-live="true"`},
		"/runs/" + waiting + "/control?action=cancel": {`name="confirm"`, "Cancel"},
		"/runs/" + done + "/control?action=fork":      {`<select id="step" name="step">`},
		"/workflows":                                  {"ask-things", "nap"},
		"/workflows/nap":                              {"sleep: 300ms", `data-step="done"`, `/runs/` + done + `"`, "<h2>Versions</h2>", v.Version + "</code>, first run", "(the library's now)"},
		"/catalogs":                                   {"No catalogs"},
		"/actions?q=noop":                             {"noop"},
		"/actions?name=noop":                          {"Input (with:)"},
		"/static/app.js":                              {"EventSource"},
		"/static/app.css":                             {".badge"},
	}
	for p, wants := range pages {
		code, body, _ := d.get(c, p)
		if code != http.StatusOK {
			t.Errorf("%s: %d", p, code)
			continue
		}
		for _, w := range wants {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", p, w)
			}
		}
	}
	if _, body, _ := d.get(c, "/runs/"+waiting+"?fragment=live"); strings.Contains(body, "<html") {
		t.Errorf("the live fragment is a whole page")
	}
	// Filters exclude.
	if _, body, _ := d.get(c, "/runs?status=succeeded"); strings.Contains(body, `/runs/`+waiting+`"`) {
		t.Errorf("status filter kept a waiting run")
	}
	if _, body, _ := d.get(c, "/runs?q=zzz"); strings.Contains(body, `/runs/`+waiting+`"`) || strings.Contains(body, `/runs/`+done+`"`) {
		t.Errorf("search kept runs that do not match")
	}
	for p, want := range map[string]int{"/runs/nope": 404, "/workflows/nope": 404, "/runs?after=yesterday": 400, "/runs?cursor=bogus": 400, "/runs/x/control?action=explode": 400} {
		if code, _, _ := d.get(c, p); code != want {
			t.Errorf("%s: %d, want %d", p, code, want)
		}
	}
}

func TestRunsPaging(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	d.login(c)
	for i := 0; i < runsPageSize+3; i++ {
		d.waitStatus(d.start("quick"))
	}
	_, body, _ := d.get(c, "/runs?workflow=quick")
	m := regexp.MustCompile(`href="/runs\?([^"]+)" rel="next"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no next page link")
	}
	first := strings.Count(body, `<td><a href="/runs/`)
	_, body2, _ := d.get(c, "/runs?"+strings.ReplaceAll(m[1], "&amp;", "&"))
	for _, r := range regexp.MustCompile(`<td><a href="/runs/([^"]+)"`).FindAllStringSubmatch(body2, -1) {
		if strings.Contains(body, `href="/runs/`+r[1]+`"`) {
			t.Errorf("run %s on both pages", r[1])
		}
	}
	second := strings.Count(body2, `<td><a href="/runs/`)
	if first != runsPageSize || second != 3 || strings.Contains(body2, `rel="next"`) {
		t.Errorf("pages of %d and %d runs, want %d and 3", first, second, runsPageSize)
	}
}

func TestControlsNeedConfirmation(t *testing.T) {
	d := newDash(t, testToken)
	c := d.client()
	csrf := d.login(c)
	id := d.start("ask-things")
	d.waitStatus(id)
	code, body, _ := d.post(c, "/runs/"+id+"/control", url.Values{csrfField: {csrf}, "action": {"cancel"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "confirm") {
		t.Errorf("unconfirmed cancel: %d", code)
	}
	if v := d.waitStatus(id); v.Status != "waiting" {
		t.Fatalf("an unconfirmed cancel changed the run: %s", v.Status)
	}
	code, _, h := d.post(c, "/runs/"+id+"/control", url.Values{csrfField: {csrf}, "action": {"cancel"}, "confirm": {"yes"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/runs/"+id {
		t.Errorf("cancel: %d to %q", code, h.Get("Location"))
	}
	if v := d.waitStatus(id); v.Status != "canceled" {
		t.Errorf("after cancel: %s", v.Status)
	}
	// Fork the canceled run from its first step: a new run.
	code, _, h = d.post(c, "/runs/"+id+"/control", url.Values{csrfField: {csrf}, "action": {"fork"}, "step": {"name"}, "confirm": {"yes"}})
	if code != http.StatusSeeOther || h.Get("Location") == "/runs/"+id {
		t.Fatalf("fork: %d to %q", code, h.Get("Location"))
	}
	forked := strings.TrimPrefix(h.Get("Location"), "/runs/")
	if v := d.waitStatus(forked); v.Workflow != "ask-things" || v.Status != "waiting" {
		t.Errorf("forked run: %s %s", v.Workflow, v.Status)
	}
	// Retry of a run that did not fail: refused, shown, nothing changed.
	code, body, _ = d.post(c, "/runs/"+forked+"/control", url.Values{csrfField: {csrf}, "action": {"retry"}, "confirm": {"yes"}})
	if code != http.StatusConflict || !strings.Contains(body, "Refused") {
		t.Errorf("retry of a waiting run: %d", code)
	}
}

func TestLiveEvents(t *testing.T) {
	d := newDash(t, testToken)
	id := d.start("nap")
	req, _ := http.NewRequest(http.MethodGet, d.srv.URL+"/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var statuses []string
	steps := map[string]bool{}
	var last int64
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev liveEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		switch ev.Kind {
		case "status":
			statuses = append(statuses, ev.Status)
		case "event":
			if ev.Seq != 0 {
				if ev.Seq != last+1 {
					t.Errorf("event %d after %d", ev.Seq, last)
				}
				last = ev.Seq
			}
			if ev.Type == "step.succeeded" {
				steps[ev.StepID] = true
			}
		}
	}
	// The stream ended by itself: the run finished.
	if len(statuses) == 0 || statuses[len(statuses)-1] != "succeeded" || !steps["nap"] || !steps["done"] {
		t.Errorf("statuses %v, steps %v", statuses, steps)
	}
	// From a later point: only the events after it.
	req, _ = http.NewRequest(http.MethodGet, d.srv.URL+"/runs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Last-Event-ID", itoa(last-1))
	resp2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if n := strings.Count(string(b), "\nid: ") + strings.Count(string(b)[:min(4, len(b))], "id: "); n != 1 {
		t.Errorf("resumed stream: %d events, want 1:\n%s", n, b)
	}
}

func TestNoTokensNoSignIn(t *testing.T) {
	d := newDash(t)
	c := d.client()
	if code, _, _ := d.get(c, "/runs"); code != http.StatusOK {
		t.Fatalf("no tokens: %d", code)
	}
	id := d.start("ask-things")
	v := d.waitStatus(id)
	_, body, _ := d.get(c, "/runs/"+id)
	m := csrfRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token in the form")
	}
	if code, _, _ := d.post(c, "/runs/"+id+"/answer", url.Values{"seq": {itoa(v.Pause.Seq)}, "value": {"x"}}); code != http.StatusForbidden {
		t.Errorf("no CSRF token: %d", code)
	}
	if code, _, _ := d.post(c, "/runs/"+id+"/answer", url.Values{csrfField: {m[1]}, "seq": {itoa(v.Pause.Seq)}, "value": {"x"}}); code != http.StatusSeeOther {
		t.Errorf("with the token: %d", code)
	}
}

func TestSessionsBounded(t *testing.T) {
	s := newSessions(time.Hour, 3, time.Now)
	var ids []string
	for i := 0; i < 5; i++ {
		id, _ := s.create()
		ids = append(ids, id)
	}
	if len(s.byID) != 3 || s.get(ids[0]) != nil || s.get(ids[4]) == nil {
		t.Errorf("%d sessions kept; the oldest must go", len(s.byID))
	}
	now := time.Now()
	exp := newSessions(time.Minute, 10, func() time.Time { return now })
	id, _ := exp.create()
	now = now.Add(2 * time.Minute)
	if exp.get(id) != nil {
		t.Error("an expired session is still accepted")
	}
}

func TestSecretQuestionGoesToItsPage(t *testing.T) {
	d := newDash(t, testToken)
	d.h.opts.SecretURL = func(p *service.Pause) string { return "https://stepwise.example/secrets/one-" + p.StepID }
	c := d.client()
	csrf := d.login(c)
	id := d.start("secret-ask")
	v := d.waitStatus(id)
	if v.Pause == nil {
		t.Fatal("no pause")
	}
	_, body, _ := d.get(c, "/runs/"+id)
	if strings.Contains(body, "answer-form") || !strings.Contains(body, `href="https://stepwise.example/secrets/one-api_key"`) {
		t.Errorf("a secret question must link to its one-time page, with no form here")
	}
	code, _, _ := d.post(c, "/runs/"+id+"/answer", url.Values{csrfField: {csrf}, "seq": {itoa(v.Pause.Seq)}, "value": {"sk-123"}})
	if code != http.StatusConflict {
		t.Errorf("a secret answered through the dashboard's form: %d, want 409", code)
	}
	if now := d.waitStatus(id); now.Status != "waiting" || now.Pause == nil || now.Pause.Seq != v.Pause.Seq {
		t.Errorf("the refused secret changed the run: %s", now.Status)
	}
}

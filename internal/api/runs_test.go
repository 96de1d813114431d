package api

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// TestRoundTripQuestion: a run that asks a question is started, pauses
// with a token, refuses a bad answer (422, violations, nothing changed:
// the same token still works), takes a good one and succeeds; the used
// token is refused after.
func TestRoundTripQuestion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "greet"})
	run := a.run(t, http.StatusCreated)
	if run.Status != code.StatusWaiting || run.Pause == nil || run.Pause.Token == "" || run.Pause.StepID != "name" || run.Pause.Prompt != "Your name?" {
		t.Fatalf("started run: %+v", run)
	}
	if loc := a.header.Get("Location"); loc != "/api/runs/"+run.RunID {
		t.Errorf("Location %q", loc)
	}
	path := "/api/runs/" + run.RunID
	token := run.Pause.Token

	p := f.do(http.MethodPost, path+"/continue", ContinueRequest{Token: token, Value: "bob"}).problem(t, http.StatusUnprocessableEntity, code.AnswerInvalid)
	if len(p.Violations) == 0 || p.RunID != run.RunID {
		t.Errorf("a refused answer's problem has no violations or run: %+v", p)
	}
	again := f.do(http.MethodGet, path, nil).run(t, http.StatusOK)
	if again.Status != code.StatusWaiting || again.Pause == nil || again.Pause.StepID != "name" {
		t.Fatalf("after a refused answer the run changed: %+v", again)
	}
	if v, err := f.svc.GetRun(context.Background(), run.RunID); err != nil || len(v.Steps) != 0 && v.Steps[0].Answer != nil {
		t.Fatalf("a refused answer was recorded: %+v, %v", v, err)
	}

	done := f.do(http.MethodPost, path+"/continue", ContinueRequest{Token: token, Value: "Ada"}).run(t, http.StatusOK)
	if done.Status != code.StatusSucceeded || done.Outputs["greeting"] != "Hello, Ada" || done.Pause != nil || done.FinishedAt == nil {
		t.Fatalf("after the answer: %+v", done)
	}
	f.do(http.MethodPost, path+"/continue", ContinueRequest{Token: token, Value: "Eve"}).problem(t, http.StatusConflict, code.TokenAlreadyUsed)
	if got := f.do(http.MethodGet, path, nil).run(t, http.StatusOK); got.Outputs["greeting"] != "Hello, Ada" {
		t.Errorf("a used token changed the outputs: %+v", got.Outputs)
	}
}

// TestStartRefusals: what cannot start gets a problem and starts nothing.
func TestStartRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cases := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"neither", StartRequest{}, 400, code.ArgumentsInvalid},
		{"both", StartRequest{Workflow: "quick", Definition: quick}, 400, code.ArgumentsInvalid},
		{"unknown workflow", StartRequest{Workflow: "nope"}, 404, code.WorkflowNotFound},
		{"invalid inputs", StartRequest{Workflow: "quick", Inputs: map[string]any{"n": "three"}}, 422, code.InputInvalid},
		{"invalid definition", StartRequest{Definition: "version: 1\nname: x\nsteps: [{id: a, uses: no.such}]\n"}, 422, code.WorkflowInvalid},
		{"negative wait", map[string]any{"workflow": "quick", "inputs": map[string]any{"n": 1}, "wait_seconds": -1}, 400, code.ArgumentsInvalid},
		{"bad JSON", `{"workflow": "quick",`, 400, code.ArgumentsInvalid},
		{"unknown field", `{"workflow": "quick", "input": {"n": 1}}`, 400, code.ArgumentsInvalid},
		{"two values", `{"workflow": "quick"} {}`, 400, code.ArgumentsInvalid},
		{"not an object", `[1]`, 400, code.ArgumentsInvalid},
	}
	for _, c := range cases {
		p := f.do(http.MethodPost, "/api/runs", c.body).problem(t, c.status, c.code)
		if c.status == 422 && len(p.Violations) == 0 {
			t.Errorf("%s: no violations: %+v", c.name, p)
		}
	}
	// Another media type: 415, read no further.
	f.send(http.MethodPost, "/api/runs", `workflow=quick`, map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/x-www-form-urlencoded"}).
		problem(t, http.StatusUnsupportedMediaType, CodeMediaType)
	// A body over the bound: 413.
	small := New(f.svc, Options{MaxBodyBytes: 64})
	rec := httptestDo(small, http.MethodPost, "/api/runs", `{"definition": "`+strings.Repeat("x", 100)+`"}`)
	rec.problem(t, http.StatusRequestEntityTooLarge, CodeBodyTooLarge)
	if runs, _, err := f.svc.ListRuns(context.Background(), service.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("refused starts left runs: %d, %v", len(runs), err)
	}
	// Inline, with inputs, and no wait: the answer comes at once, and the
	// run finishes.
	run := f.do(http.MethodPost, "/api/runs", map[string]any{"definition": quick, "inputs": map[string]any{"n": 3}, "wait_seconds": 0}).run(t, http.StatusCreated)
	got := f.do(http.MethodGet, "/api/runs/"+run.RunID+"?wait_seconds=10", nil).run(t, http.StatusOK)
	if got.Status != code.StatusSucceeded || got.Outputs["n"] != float64(3) || got.Inputs["n"] != float64(3) {
		t.Fatalf("inline run: %+v", got)
	}
}

// TestListFiltersAndPaging: filters by workflow, status and creation time;
// pages by cursor with no run twice or missed.
func TestListFiltersAndPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var quickIDs, greetIDs []string
	for i := range 5 {
		r := f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "quick", Inputs: map[string]any{"n": i}}).run(t, http.StatusCreated)
		if r.Status != code.StatusSucceeded {
			t.Fatalf("quick run: %+v", r)
		}
		quickIDs = append(quickIDs, r.RunID)
	}
	mid := time.Now()
	for range 2 {
		greetIDs = append(greetIDs, f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "greet"}).run(t, http.StatusCreated).RunID)
	}
	list := func(q url.Values) RunList {
		t.Helper()
		a := f.do(http.MethodGet, "/api/runs?"+q.Encode(), nil)
		if a.status != http.StatusOK {
			t.Fatalf("list %s: %d %s", q.Encode(), a.status, a.body)
		}
		var l RunList
		if err := decodeStrict(a.body, &l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	var paged []string
	q := url.Values{"workflow": {"quick"}, "limit": {"2"}}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the pages do not end")
		}
		l := list(q)
		if len(l.Runs) > 2 {
			t.Fatalf("a page of limit 2 has %d runs", len(l.Runs))
		}
		for _, r := range l.Runs {
			if r.Workflow != "quick" || r.Status != code.StatusSucceeded {
				t.Errorf("filter workflow=quick listed %+v", r)
			}
			paged = append(paged, r.RunID)
		}
		if l.NextCursor == "" {
			break
		}
		q.Set("cursor", l.NextCursor)
	}
	want := slices.Clone(quickIDs)
	slices.Reverse(want) // newest first
	if !slices.Equal(paged, want) {
		t.Errorf("pages %v, want %v", paged, want)
	}
	var waiting []string
	for _, r := range list(url.Values{"status": {"waiting"}}).Runs {
		waiting = append(waiting, r.RunID)
	}
	slices.Sort(waiting)
	slices.Sort(greetIDs)
	if !slices.Equal(waiting, greetIDs) {
		t.Errorf("status=waiting listed %v, want %v", waiting, greetIDs)
	}
	if n := len(list(url.Values{"since": {mid.UTC().Format(time.RFC3339Nano)}}).Runs); n != 2 {
		t.Errorf("since the greet runs: %d runs, want 2", n)
	}
	if n := len(list(url.Values{"since": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}).Runs); n != 0 {
		t.Errorf("since an hour ahead: %d runs", n)
	}
	for _, bad := range []string{"status=done", "limit=500", "limit=-1", "limit=x", "cursor=nonsense", "since=yesterday", "colour=red", "status=waiting&status=failed"} {
		p := f.do(http.MethodGet, "/api/runs?"+bad, nil).problem(t, http.StatusBadRequest, code.ArgumentsInvalid)
		if p.Argument == "" && !strings.HasPrefix(bad, "since") {
			t.Errorf("%s: the problem names no argument: %+v", bad, p)
		}
	}
}

// TestAuth: without the token, or with another, every route answers 401
// with WWW-Authenticate, and nothing starts.
func TestAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, hdr := range []map[string]string{{}, {"Authorization": "Bearer wrong"}, {"Authorization": testToken}, {"Authorization": "Basic " + testToken}, {"Authorization": "Bearer "}} {
		for _, rt := range routes {
			path := strings.ReplaceAll(rt.path, "{run_id}", "r1")
			a := f.send(rt.method, path, `{"workflow": "quick", "inputs": {"n": 1}}`, hdr)
			a.problem(t, http.StatusUnauthorized, CodeUnauthorized)
			if !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s: WWW-Authenticate %q", rt.method, path, a.header.Get("WWW-Authenticate"))
			}
		}
	}
	if runs, _, err := f.svc.ListRuns(context.Background(), service.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("unauthorized requests left runs: %d, %v", len(runs), err)
	}
	// No tokens configured (loopback): no authentication.
	open := New(f.svc, Options{})
	if a := httptestDo(open, http.MethodGet, "/api/runs", ""); a.status != http.StatusOK {
		t.Errorf("without tokens: %d %s", a.status, a.body)
	}
}

// TestUnknownRunAndMethods: an unknown run is 404 on every route of a
// run; a method a path does not take is 405 with Allow.
func TestUnknownRunAndMethods(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.do(http.MethodGet, "/api/runs/nope", nil).problem(t, http.StatusNotFound, code.RunNotFound)
	f.do(http.MethodPost, "/api/runs/nope/continue", ContinueRequest{Token: "x", Value: 1}).problem(t, http.StatusNotFound, code.RunNotFound)
	f.do(http.MethodPost, "/api/runs/nope/cancel", CancelRequest{}).problem(t, http.StatusNotFound, code.RunNotFound)
	a := f.do(http.MethodDelete, "/api/runs/nope", nil)
	a.problem(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if a.header.Get("Allow") != "GET" {
		t.Errorf("Allow %q", a.header.Get("Allow"))
	}
	a = f.do(http.MethodPut, "/api/runs", nil)
	a.problem(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if a.header.Get("Allow") != "POST, GET" {
		t.Errorf("Allow %q", a.header.Get("Allow"))
	}
}

// TestContinueRefusals: a token of another run, a forged token, no token:
// refused, and the runs are unchanged.
func TestContinueRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	one := f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "greet"}).run(t, http.StatusCreated)
	two := f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "greet"}).run(t, http.StatusCreated)
	f.do(http.MethodPost, "/api/runs/"+one.RunID+"/continue", ContinueRequest{Token: two.Pause.Token, Value: "Ada"}).problem(t, http.StatusConflict, code.TokenInvalid)
	forged := one.Pause.Token[:len(one.Pause.Token)-4] + "AAAA"
	f.do(http.MethodPost, "/api/runs/"+one.RunID+"/continue", ContinueRequest{Token: forged, Value: "Ada"}).problem(t, http.StatusConflict, code.TokenInvalid)
	f.do(http.MethodPost, "/api/runs/"+one.RunID+"/continue", ContinueRequest{Value: "Ada"}).problem(t, http.StatusBadRequest, code.ArgumentsInvalid)
	for _, r := range []Run{one, two} {
		if got := f.do(http.MethodGet, "/api/runs/"+r.RunID, nil).run(t, http.StatusOK); got.Status != code.StatusWaiting {
			t.Errorf("run %s after refused answers: %s", r.RunID, got.Status)
		}
	}
}

// TestCancel: a waiting run is canceled with its reason; canceling it
// again is a conflict.
func TestCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	run := f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "greet"}).run(t, http.StatusCreated)
	got := f.do(http.MethodPost, "/api/runs/"+run.RunID+"/cancel", CancelRequest{Reason: "not needed"}).run(t, http.StatusOK)
	if got.Status != code.StatusCanceled || got.Pause != nil {
		t.Fatalf("canceled run: %+v", got)
	}
	p := f.do(http.MethodPost, "/api/runs/"+run.RunID+"/cancel", "").problem(t, http.StatusConflict, code.RunFinished)
	if p.RunID != run.RunID {
		t.Errorf("problem %+v", p)
	}
	f.do(http.MethodPost, "/api/runs/"+run.RunID+"/continue", ContinueRequest{Token: run.Pause.Token, Value: "Ada"}).problem(t, http.StatusConflict, code.TokenAlreadyUsed)
}

// TestStatusOf: the mapping of error codes and categories to statuses.
func TestStatusOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code, category string
		want           int
	}{
		{code.ArgumentsInvalid, code.CategoryValidation, 400},
		{code.InputInvalid, code.CategoryValidation, 422},
		{code.AnswerInvalid, code.CategoryValidation, 422},
		{code.WorkflowNotFound, code.CategoryNotFound, 404},
		{code.RunNotFound, code.CategoryNotFound, 404},
		{code.RunFinished, code.CategoryConflict, 409},
		{code.TokenAlreadyUsed, code.CategoryAuth, 409},
		{code.TokenInvalid, code.CategoryAuth, 409},
		{code.TokenExpired, code.CategoryAuth, 410},
		{code.PauseTimedOut, code.CategoryConflict, 410},
		{code.ShuttingDown, code.CategoryInternal, 503},
		{code.ShellNotAllowed, service.CategorySecurity, 403},
		{"SOMETHING_NEW", "", 500},
	} {
		if got := StatusOf(c.code, c.category); got != c.want {
			t.Errorf("StatusOf(%s, %s) = %d, want %d", c.code, c.category, got, c.want)
		}
	}
}

// httptestDo serves one request by h directly.
func httptestDo(h http.Handler, method, path, body string) answer {
	req := httptestRequest(method, path, body)
	rec := newRecorder()
	h.ServeHTTP(rec, req)
	return answer{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

// TestForeignHost: a request that reached the loopback server under
// another host name (DNS rebinding) is refused before anything.
func TestForeignHost(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.send(http.MethodPost, "/api/runs", `{"workflow": "quick", "inputs": {"n": 1}}`,
		map[string]string{"Authorization": "Bearer " + testToken, "Host": "evil.example:80"})
	a.problem(t, http.StatusForbidden, CodeForeignHost)
	if runs, _, err := f.svc.ListRuns(context.Background(), service.RunFilter{}); err != nil || len(runs) != 0 {
		t.Fatalf("a foreign host's request left runs: %d, %v", len(runs), err)
	}
}

// TestContinueSubWorkflowPause: a parent run shows its child's pause; the
// child's token answers it at the parent's continue, and the answer
// follows the parent to its end.
func TestContinueSubWorkflowPause(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	parent := `version: 1
name: parent
steps:
  - id: sub
    workflow: greet
outputs:
  said: ${{ steps.sub.output.greeting }}
`
	run := f.do(http.MethodPost, "/api/runs", StartRequest{Definition: parent}).run(t, http.StatusCreated)
	if run.Status != code.StatusWaiting || run.Pause == nil || run.Pause.RunID == run.RunID {
		t.Fatalf("the parent does not show its child's pause: %+v", run)
	}
	done := f.do(http.MethodPost, "/api/runs/"+run.RunID+"/continue", ContinueRequest{Token: run.Pause.Token, Value: "Ada"}).run(t, http.StatusOK)
	if done.RunID != run.RunID || done.Status != code.StatusSucceeded || done.Outputs["said"] != "Hello, Ada" {
		t.Fatalf("the parent after its child's answer: %+v", done)
	}
}

// TestExpiredToken: a token past its lifetime is 410 and changes
// nothing; reading the run gives a fresh token that answers.
func TestExpiredToken(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	f := newFixtureWith(t, service.Options{Now: clock, TokenTTL: time.Minute})
	run := f.do(http.MethodPost, "/api/runs", StartRequest{Workflow: "greet"}).run(t, http.StatusCreated)
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	path := "/api/runs/" + run.RunID
	p := f.do(http.MethodPost, path+"/continue", ContinueRequest{Token: run.Pause.Token, Value: "Ada"}).problem(t, http.StatusGone, code.TokenExpired)
	if p.RunID != run.RunID {
		t.Errorf("problem %+v", p)
	}
	fresh := f.do(http.MethodGet, path, nil).run(t, http.StatusOK)
	if fresh.Status != code.StatusWaiting || fresh.Pause == nil || fresh.Pause.Token == run.Pause.Token {
		t.Fatalf("after the expiry the run reads %+v", fresh)
	}
	done := f.do(http.MethodPost, path+"/continue", ContinueRequest{Token: fresh.Pause.Token, Value: "Ada"}).run(t, http.StatusOK)
	if done.Status != code.StatusSucceeded {
		t.Fatalf("the fresh token: %+v", done)
	}
}

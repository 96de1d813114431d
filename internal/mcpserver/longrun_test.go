package mcpserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// longWorkflow has 13 steps with outputs, then an HTTP call that fails.
func longWorkflow() string {
	var b strings.Builder
	b.WriteString("version: 1\nname: long\ninputs:\n  token: {type: string, secret: true}\n  url: {type: string}\nsteps:\n")
	for i := 1; i <= 13; i++ {
		fmt.Fprintf(&b, "  - {id: s%d, uses: transform, with: {value: {n: %d, text: 'output of step %d'}}}\n", i, i, i)
	}
	b.WriteString("  - id: call\n    uses: http\n    with:\n      url: '${{ inputs.url }}'\n      headers: {Authorization: 'Bearer ${{ inputs.token }}'}\n")
	return b.String()
}

// longResult is a run result as the JSON has it.
type longResult struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
	Error  *struct {
		Message      string `json:"message"`
		StepID       string `json:"step_id"`
		Action       string `json:"action"`
		HTTPStatus   int    `json:"http_status"`
		ResponseBody string `json:"response_body"`
	} `json:"error"`
	Steps *struct {
		Total       int        `json:"total"`
		Failed      int        `json:"failed"`
		Recent      []longStep `json:"recent"`
		Page        []longStep `json:"page"`
		From        int        `json:"from"`
		NextCursor  string     `json:"next_cursor"`
		Completed   []string   `json:"completed"`
		FailedSteps []string   `json:"failed_steps"`
	} `json:"steps"`
}

type longStep struct {
	ID     string `json:"id"`
	Output any    `json:"output"`
}

// A 13-step run that fails at an HTTP call is readable over MCP: the
// failure result lists the completed and failed steps, its error carries
// the step, action, status and the response's start with the secret
// masked, and run_get pages through every step's output.
func TestLongRunIsReadableOverMCP(t *testing.T) {
	const token = "tok-0123456789-secret"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"error": "upstream down", "echo": %q}`, r.Header.Get("Authorization"))
	}))
	defer api.Close()
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)

	var r longResult
	if call(t, cs, "run_start", map[string]any{"definition": longWorkflow(), "inputs": map[string]any{"token": token, "url": api.URL}, "wait_seconds": 60}, &r) {
		t.Fatalf("run_start: %+v", r)
	}
	if r.Status != "failed" || r.Error == nil {
		t.Fatalf("result: %+v", r)
	}
	if r.Steps == nil {
		t.Fatalf("the failure result lists no steps: %+v", r)
	}
	if got := r.Error; got.StepID != "call" || got.Action != "http" || got.HTTPStatus != http.StatusBadGateway ||
		!strings.Contains(got.ResponseBody, "upstream down") || !strings.Contains(got.ResponseBody, "***") {
		t.Errorf("error: %+v", got)
	}
	if all := toText(r); strings.Contains(all, token) {
		t.Errorf("the secret shows in the result: %s", all)
	}
	if len(r.Steps.Completed) != 13 || r.Steps.Completed[0] != "s1" || r.Steps.Completed[12] != "s13" ||
		len(r.Steps.FailedSteps) != 1 || r.Steps.FailedSteps[0] != "call" || r.Steps.Total != 14 || r.Steps.Failed != 1 {
		t.Errorf("steps of the failure: %+v", r.Steps)
	}

	// run_get: the last 10, and a cursor to the first.
	var g longResult
	if call(t, cs, "run_get", map[string]any{"run_id": r.RunID}, &g) {
		t.Fatalf("run_get: %+v", g)
	}
	if len(g.Steps.Recent) != 10 || g.Steps.Recent[0].ID != "s5" || g.Steps.NextCursor == "" {
		t.Fatalf("run_get steps: %+v", g.Steps)
	}
	// Paging reaches every step's output, the earliest included.
	var seen []string
	cursor := g.Steps.NextCursor
	for pages := 0; cursor != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		var p longResult
		if call(t, cs, "run_get", map[string]any{"run_id": r.RunID, "steps_cursor": cursor, "steps_limit": 4}, &p) {
			t.Fatalf("run_get page %s: %+v", cursor, p)
		}
		if len(p.Steps.Page) == 0 || len(p.Steps.Page) > 4 || p.Steps.From != len(seen) || len(p.Steps.Recent) != 0 {
			t.Fatalf("page %s: %+v", cursor, p.Steps)
		}
		for _, st := range p.Steps.Page {
			seen = append(seen, st.ID)
			if st.ID == "s1" {
				out, _ := st.Output.(map[string]any)
				if out["text"] != "output of step 1" {
					t.Errorf("s1's output: %v", st.Output)
				}
			}
		}
		cursor = p.Steps.NextCursor
	}
	if len(seen) != 14 || seen[0] != "s1" || seen[13] != "call" {
		t.Errorf("paged steps: %v", seen)
	}
	// A cursor no page gave changes nothing and says which argument.
	for _, bad := range []map[string]any{
		{"run_id": r.RunID, "steps_cursor": "s99"},
		{"run_id": r.RunID, "steps_cursor": "bogus"},
		{"run_id": r.RunID, "steps_cursor": "s0", "steps_limit": 51},
	} {
		var te struct {
			ErrorCode string            `json:"error_code"`
			Context   map[string]string `json:"context"`
		}
		if !call(t, cs, "run_get", bad, &te) || te.ErrorCode != CodeArgumentsInvalid || !strings.HasPrefix(te.Context["argument"], "steps_") {
			t.Errorf("%v: %+v", bad, te)
		}
	}
}

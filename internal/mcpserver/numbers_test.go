package mcpserver

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// numberSessions connects a Go SDK client to a fresh server over stdio
// and over streamable HTTP: values travel as JSON text on both.
func numberSessions(t *testing.T) map[string]*mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)

	stdio := stdioClient(t, newEnv(t, Options{}, service.Options{}))

	h := newEnv(t, Options{Version: "test", BaseURL: "http://127.0.0.1"}, service.Options{})
	hs := httptest.NewServer(h.srv.HTTPHandler(HTTPOptions{}))
	t.Cleanup(hs.Close)
	web, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = web.Close() })
	return map[string]*mcp.ClientSession{"stdio": stdio, "http": web}
}

// stdioClient connects a Go SDK client to e's server over pipes the way
// `serve` serves stdin and stdout (ConnectStdio).
func stdioClient(t *testing.T, e *env) *mcp.ClientSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := e.srv.ConnectStdio(context.Background(), inR, outW)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = inW.Close(); _ = outR.Close(); _ = ss.Close() })
	return cs
}

// continueWith answers the pause of r with value and returns the run
// after it; a refused answer fails the test with the tool's error.
func continueWith(t *testing.T, cs *mcp.ClientSession, r RunResult, value any) RunResult {
	t.Helper()
	if r.Status != "waiting" || r.Pause == nil {
		t.Fatalf("expected a pause, got %s: %+v", r.Status, r)
	}
	var next RunResult
	if call(t, cs, "run_continue", map[string]any{"token": r.Pause.Token, "value": value, "wait_seconds": 30}, &next) {
		var raw map[string]any
		call(t, cs, "run_continue", map[string]any{"token": r.Pause.Token, "value": value, "wait_seconds": 30}, &raw)
		t.Fatalf("run_continue %s with %v refused: %v", r.Pause.StepID, value, raw)
	}
	return next
}

// TestNumbersAtEveryDepth: numbers nested in object and array inputs, in
// a form, in a multi-choice answer and in an agent's output are accepted
// over the real MCP transports and stay numbers that expressions compute
// with.
func TestNumbersAtEveryDepth(t *testing.T) {
	def, err := os.ReadFile(filepath.Join("testdata", "numbers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, cs := range numberSessions(t) {
		t.Run(name, func(t *testing.T) {
			args := map[string]any{"definition": string(def), "wait_seconds": 30, "inputs": map[string]any{
				"spec":  map[string]any{"n": 21, "deep": map[string]any{"xs": []any{1, 2.5}}},
				"sizes": []any{4, 5},
				"grid":  []any{3, 4},                    // an array input with an enum of arrays
				"box":   map[string]any{"w": 3, "h": 4}, // an object input with an enum of objects
			}}
			var r RunResult
			if call(t, cs, "run_start", args, &r) {
				var refusal map[string]any
				call(t, cs, "run_start", args, &refusal)
				t.Fatalf("run_start refused: %v", refusal)
			}
			r = continueWith(t, cs, r, map[string]any{"email": "ada@example.com", "start_week": 12, "ratio": 0.5})
			r = continueWith(t, cs, r, []any{1, 3})
			r = continueWith(t, cs, r, map[string]any{"scores": []any{7, 8, 9}, "nested": map[string]any{"n": 3}})
			if r.Status != "succeeded" {
				t.Fatalf("the run did not finish: %+v", r)
			}
			want := map[string]float64{"doubled": 42, "first": 5, "week": 13, "picked": 300, "score": 80, "half": 1.5, "area": 16}
			got, _ := r.Outputs["result"].(map[string]any)
			for k, w := range want {
				if g, ok := got[k].(float64); !ok || g != w {
					t.Errorf("output %s = %v, want %v (outputs %v)", k, got[k], w, r.Outputs)
				}
			}
		})
	}
}

// TestTeamOnboardingOverMCP: the README's main example runs to completion
// over MCP, its form answered with start_week as a JSON number.
func TestTeamOnboardingOverMCP(t *testing.T) {
	def, err := os.ReadFile(filepath.Join("..", "..", "examples", "team-onboarding.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]any{
		"username": "ada",
		"role":     "engineer",
		"tools":    []any{"git", "chat"},
		"details":  map[string]any{"email": "ada@example.com", "start_week": 12},
		"seat":     7,
		"confirm":  true,
		"welcome":  map[string]any{"note": "Welcome aboard, Ada!", "buddy": "grace"},
		"review":   true,
	}
	for name, cs := range numberSessions(t) {
		t.Run(name, func(t *testing.T) {
			var r RunResult
			if call(t, cs, "run_start", map[string]any{"definition": string(def), "wait_seconds": 30}, &r) {
				t.Fatalf("run_start refused: %+v", r)
			}
			for i := 0; r.Status == "waiting" && i < 20; i++ {
				if r.Pause == nil {
					t.Fatalf("waiting without a pause: %+v", r)
				}
				a, ok := answers[r.Pause.StepID]
				if !ok {
					t.Fatalf("unexpected pause %s", r.Pause.StepID)
				}
				r = continueWith(t, cs, r, a)
			}
			if r.Status != "succeeded" {
				t.Fatalf("the run did not finish: %+v", r)
			}
			summary, _ := r.Outputs["summary"].(map[string]any)
			if summary["email"] != "ada@example.com" || summary["desk"] != float64(7) || summary["buddy"] != "grace" {
				t.Fatalf("outputs: %v", r.Outputs)
			}
		})
	}
}

package mcpserver

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// elicitor answers form elicitations from a list of canned responses and
// records what it was asked.
type elicitor struct {
	mu      sync.Mutex
	answers []*mcp.ElicitResult
	asked   []*mcp.ElicitParams
}

func (el *elicitor) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	el.mu.Lock()
	defer el.mu.Unlock()
	el.asked = append(el.asked, req.Params)
	if len(el.answers) == 0 {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}
	a := el.answers[0]
	el.answers = el.answers[1:]
	return a, nil
}

func accept(content map[string]any) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

var protocols = []string{"2025-11-25", "2026-07-28"}

func connectVersion(t *testing.T, e *env, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.MCP().Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestElicitationAnswersQuestions(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, Options{}, service.Options{})
			// The first answer breaks the pattern: the person is asked again,
			// told why.
			el := &elicitor{answers: []*mcp.ElicitResult{accept(map[string]any{"value": "ada"}), accept(map[string]any{"value": "Ada"})}}
			cs := connectVersion(t, e, &mcp.ClientOptions{ElicitationHandler: el.handle}, version)
			var run RunResult
			if call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &run) {
				t.Fatalf("run_start: %+v", run)
			}
			// The question went to the person; the agent step comes back.
			if run.Status != "waiting" || run.Pause == nil || run.Pause.Kind != "agent" || !strings.Contains(run.Pause.Instructions, "Ada") {
				t.Fatalf("after elicitation: %+v", run)
			}
			if len(el.asked) != 2 || el.asked[0].Mode != "form" || !strings.Contains(el.asked[1].Message, "not accepted") {
				t.Fatalf("asked: %+v", el.asked)
			}
			if !strings.Contains(el.asked[0].Message, "Your name?") {
				t.Errorf("message %q", el.asked[0].Message)
			}
		})
	}
}

func TestElicitationDeclinedReturnsThePause(t *testing.T) {
	for _, version := range protocols {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t, Options{}, service.Options{})
			el := &elicitor{answers: []*mcp.ElicitResult{{Action: "decline"}}}
			cs := connectVersion(t, e, &mcp.ClientOptions{ElicitationHandler: el.handle}, version)
			var run RunResult
			call(t, cs, "run_start", map[string]any{"workflow": "greet"}, &run)
			if run.Status != "waiting" || run.Pause == nil || run.Pause.Kind != "question" || run.Pause.Token == "" {
				t.Fatalf("declined: %+v", run)
			}
			if len(el.asked) != 1 {
				t.Fatalf("asked %d times", len(el.asked))
			}
			// The agent can still answer it.
			if call(t, cs, "run_continue", map[string]any{"token": run.Pause.Token, "value": "Bob"}, &run) || run.Pause == nil || run.Pause.Kind != "agent" {
				t.Fatalf("continue after decline: %+v", run)
			}
		})
	}
}

func TestElicitationChoicesAndSecretsStayOutOfForms(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{LookupEnv: func(name string) (string, bool) {
		if name == "VAULT_PW" {
			return "s3cret-pass", true
		}
		return "", false
	}})
	el := &elicitor{answers: []*mcp.ElicitResult{accept(map[string]any{"value": "green"})}}
	cs := connectVersion(t, e, &mcp.ClientOptions{ElicitationHandler: el.handle}, "2025-11-25")
	var run RunResult
	call(t, cs, "run_start", map[string]any{"workflow": "vault"}, &run)
	// A secret question is never put in a form, and over stdio there is no
	// secret page: the pause says how to answer.
	if len(el.asked) != 0 || run.Pause == nil || !run.Pause.Secret || run.Pause.SecretURL != "" || !strings.Contains(run.Pause.HowToAnswer, "$NAME") {
		t.Fatalf("secret pause: %+v, asked %d", run, len(el.asked))
	}
	var te ToolError
	if !call(t, cs, "run_continue", map[string]any{"token": run.Pause.Token, "value": "typed-in-chat"}, &te) || te.ErrorCode != "SECRET_IN_CLEAR" {
		t.Fatalf("clear secret through the agent: %+v", te)
	}
	if !call(t, cs, "run_continue", map[string]any{"token": run.Pause.Token, "value": "$NOT_SET"}, &te) || te.ErrorCode != "SECRET_IN_CLEAR" || !strings.Contains(te.Violations[0].Message, "NOT_SET") {
		t.Fatalf("unset variable: %+v", te)
	}
	// An environment reference answers it; then the choice goes to the person.
	if call(t, cs, "run_continue", map[string]any{"token": run.Pause.Token, "value": "$VAULT_PW"}, &run) {
		t.Fatalf("env reference: %+v", run)
	}
	if run.Status != "succeeded" || run.Outputs["label"] != "green" || run.Outputs["length"] != float64(len("s3cret-pass")) {
		t.Fatalf("final: %+v", run)
	}
	if len(el.asked) != 1 {
		t.Fatalf("asked %d", len(el.asked))
	}
	schema := el.asked[0].RequestedSchema.(map[string]any)
	enum := schema["properties"].(map[string]any)["value"].(map[string]any)["enum"].([]any)
	if len(enum) != 2 || enum[0] != "red" {
		t.Errorf("choice schema: %v", schema)
	}
}

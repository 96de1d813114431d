package mcpserver

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// toolNames lists a session's tools, sorted.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestMountCoreAndWorkflow: Mount puts exactly the profile's tools on a
// program's server; a workflow's pair goes on it too, profile or not, and
// runs the workflow through its pauses.
func TestMountCoreAndWorkflow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{}, service.Options{})
	prog := mcp.NewServer(&mcp.Implementation{Name: "prog", Version: "1"}, nil)
	s, err := Mount(prog, e.svc, Options{Tools: ToolsCore})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MountWorkflow("greet"); err != nil {
		t.Fatal(err)
	}
	if err := s.MountWorkflow("no-such"); err == nil {
		t.Error("mounting a workflow not in the library succeeded")
	}
	cs := connectServer(t, &Server{mcp: prog}, nil)
	want := append(slices.Clone(coreTools), "greet_start", "greet_continue")
	slices.Sort(want)
	if got := toolNames(t, cs); !slices.Equal(got, want) {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	var r RunResult
	if call(t, cs, "greet_start", map[string]any{"greeting": "Hi"}, &r) || r.Status != "waiting" || r.Pause == nil {
		t.Fatalf("greet_start = %+v, want waiting on a pause", r)
	}
	tok := r.Pause.Token
	if !call(t, cs, "greet_continue", map[string]any{"token": tok, "value": "lowercase"}, nil) {
		t.Error("an answer breaking the pattern was accepted")
	}
	if call(t, cs, "greet_continue", map[string]any{"token": tok, "value": "Ada"}, &r) || r.Status != "waiting" || r.Pause == nil || r.Pause.Kind != "agent" {
		t.Fatalf("greet_continue = %+v, want waiting on the agent step", r)
	}
	if call(t, cs, "greet_continue", map[string]any{"token": r.Pause.Token, "value": map[string]any{"line": "Hi, Ada!"}}, &r) || r.Status != "succeeded" || r.Outputs["line"] != "Hi, Ada!" {
		t.Fatalf("greet_continue = %+v, want succeeded with the line", r)
	}
}

// TestMountUnknownProfile: refused, nothing added.
func TestMountUnknownProfile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{}, service.Options{})
	prog := mcp.NewServer(&mcp.Implementation{Name: "prog", Version: "1"}, nil)
	if _, err := Mount(prog, e.svc, Options{Tools: "most"}); err == nil {
		t.Fatal("an unknown profile was accepted")
	}
	if _, err := Mount(nil, e.svc, Options{}); err == nil {
		t.Fatal("a nil server was accepted")
	}
}

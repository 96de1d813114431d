package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

func TestActionSearch(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools.Tools, func(tool *mcp.Tool) bool { return tool.Name == "action_search" })
	if i < 0 {
		t.Fatal("action_search is not listed")
	}
	if a := tools.Tools[i].Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint {
		t.Errorf("action_search annotations %+v, want read-only and idempotent", a)
	}

	var out ActionSearchOut
	if call(t, cs, "action_search", map[string]any{"query": "greeting someone"}, &out) {
		t.Fatalf("greeting someone: error %+v", out)
	}
	if len(out.Results) == 0 || out.Results[0].Kind != "workflow" || out.Results[0].Name != "greet" {
		t.Fatalf("greeting someone: %+v, want the workflow greet first", out.Results)
	}
	g := out.Results[0]
	if g.Title != "Greet someone" || len(g.Inputs) != 1 || g.Inputs[0].Name != "greeting" || g.Valid == nil || !*g.Valid || g.Score <= 0 {
		t.Errorf("greet result %+v, want title, its input, valid and a score", g)
	}

	out = ActionSearchOut{}
	if call(t, cs, "action_search", map[string]any{"query": "log", "include_workflows": false}, &out) {
		t.Fatal("log: error")
	}
	if len(out.Results) == 0 || out.Results[0].Name != "log" || out.Results[0].Safety != "read-only" {
		t.Fatalf("log: %+v, want the action log first with its safety", out.Results)
	}
	for _, r := range out.Results {
		if r.Kind != "action" {
			t.Errorf("include_workflows false returned %s %s", r.Kind, r.Name)
		}
	}

	// The text content starts with a one-line summary.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "action_search", Arguments: map[string]any{"query": "", "limit": 2}})
	if err != nil || res.IsError {
		t.Fatalf("empty query: %v %+v", err, res)
	}
	// The first two names of everything: the registry's actions and the
	// library's greet and vault.
	all := append(e.svc.Actions.Names(), "greet", "vault")
	slices.Sort(all)
	var want []string
	for _, name := range all[:2] {
		if a, ok := e.svc.Actions.Get(name); ok {
			want = append(want, "action "+name+" ("+a.Safety()+")")
		} else {
			want = append(want, "workflow "+name)
		}
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if prefix := "2 results, best first: " + strings.Join(want, ", ") + ".\n"; !strings.HasPrefix(text, prefix) {
		t.Errorf("empty query, limit 2: %q, want it to start with %q", text, prefix)
	}

	var te ToolError
	if !call(t, cs, "action_search", map[string]any{"query": "x", "limit": "many"}, &te) || te.ErrorCode != CodeArgumentsInvalid {
		t.Errorf("limit \"many\": %+v, want ARGUMENTS_INVALID", te)
	}
	te = ToolError{}
	if !call(t, cs, "action_search", map[string]any{}, &te) || te.ErrorCode != CodeArgumentsInvalid {
		t.Errorf("no query: %+v, want ARGUMENTS_INVALID", te)
	}

	// A workflow added to the library is found by the next call.
	def := "version: 1\nname: archive-mail\ntitle: Archive mailboxes\ndescription: Moves old mail to cold storage.\ntags: [mail]\nsteps:\n  - id: a\n    uses: noop\n"
	if err := os.WriteFile(filepath.Join(e.svc.Home.WorkflowsDir(), "archive-mail.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	out = ActionSearchOut{}
	call(t, cs, "action_search", map[string]any{"query": "mailboxes"}, &out)
	if len(out.Results) != 1 || out.Results[0].Name != "archive-mail" {
		t.Errorf("mailboxes after adding archive-mail: %+v", out.Results)
	}
}

package mcpclient

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/action"
)

var updateDocs = flag.Bool("update", false, "rewrite the mcp schema block of docs/ACTIONS.md")

// TestActionsDocShowsTheSchema keeps the mcp action's input schema block
// of docs/ACTIONS.md equal to the code (the other actions are checked in
// package action).
func TestActionsDocShowsTheSchema(t *testing.T) {
	const path = "../../docs/ACTIONS.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := "<!-- BEGIN generated: mcp input_schema -->\n", "<!-- END generated: mcp input_schema -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatal("docs/ACTIONS.md has no generated input schema block for mcp")
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(action.InfoOf(New(Config{})).InputSchema); err != nil {
		t.Fatal(err)
	}
	want := "```json\n" + b.String() + "```\n"
	if doc[i+len(begin):j] == want {
		return
	}
	if !*updateDocs {
		t.Fatal("docs/ACTIONS.md: the mcp input schema differs from the code; run go test ./mcpclient -run TestActionsDoc -update")
	}
	if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

package action

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated schema blocks of docs/ACTIONS.md")

const actionsDoc = "../../docs/ACTIONS.md"

// TestActionsDocShowsTheSchemas keeps the schema blocks of docs/ACTIONS.md
// equal to the schemas in the code. A block is written between
//
//	<!-- BEGIN generated: NAME input_schema -->
//	<!-- END generated: NAME input_schema -->
//
// (or output_schema); `go test ./action -run TestActionsDoc -update`
// rewrites every block. Every built-in action must have its input schema there.
func TestActionsDocShowsTheSchemas(t *testing.T) {
	data, err := os.ReadFile(actionsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	found := map[string]bool{}
	ws, err := OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The built-ins, and the workspace actions a service registers (the mcp
	// action's block is checked in package mcpclient).
	documented := append(Builtins().Infos(), InfoOf(NewShell(ws, ShellPolicy{})), InfoOf(File{Workspace: ws}))
	for _, info := range documented {
		for kind, schema := range map[string]map[string]any{"input_schema": info.InputSchema, "output_schema": info.OutputSchema} {
			begin := "<!-- BEGIN generated: " + info.Name + " " + kind + " -->\n"
			end := "<!-- END generated: " + info.Name + " " + kind + " -->"
			i := strings.Index(doc, begin)
			j := strings.Index(doc, end)
			if i < 0 || j < i {
				continue
			}
			found[info.Name+" "+kind] = true
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(schema); err != nil {
				t.Fatal(err)
			}
			want := "```json\n" + b.String() + "```\n"
			got := doc[i+len(begin) : j]
			if got == want {
				continue
			}
			if *updateDocs {
				doc = doc[:i+len(begin)] + want + doc[j:]
				continue
			}
			t.Errorf("docs/ACTIONS.md: the %s of %s differs from the code; run go test ./action -run TestActionsDoc -update", kind, info.Name)
		}
	}
	for _, info := range documented {
		if !found[info.Name+" input_schema"] {
			t.Errorf("docs/ACTIONS.md has no generated input schema block for %s", info.Name)
		}
	}
	if *updateDocs && doc != string(data) {
		if err := os.WriteFile(actionsDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

package graph

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/workflow"
)

var update = flag.Bool("update", false, "rewrite the golden charts of testdata/")

// TestGoldenExamples draws every workflow of examples/ (together they use
// every step kind) and compares it with testdata/examples/NAME.mmd.
func TestGoldenExamples(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	jsonFiles, _ := filepath.Glob("../../examples/*.json")
	files = append(files, jsonFiles...)
	if len(files) < 8 {
		t.Fatalf("want at least 8 examples, found %d", len(files))
	}
	want := map[string]bool{}
	for _, f := range files {
		golden := filepath.Join("testdata", "examples", stem(f)+".mmd")
		want[golden] = true
		t.Run(stem(f), func(t *testing.T) { compareGolden(t, loadValid(t, f), golden) })
	}
	// A golden left behind by a removed example would go unchecked.
	have, _ := filepath.Glob("testdata/examples/*.mmd")
	for _, g := range have {
		if !want[g] && !*update {
			t.Errorf("%s has no example in examples/", g)
		}
	}
}

// TestGoldenCases draws the hand-written edge cases of testdata/cases.
func TestGoldenCases(t *testing.T) {
	files, _ := filepath.Glob("testdata/cases/*.yaml")
	if len(files) < 4 {
		t.Fatalf("want at least 4 cases, found %d", len(files))
	}
	for _, f := range files {
		t.Run(stem(f), func(t *testing.T) {
			compareGolden(t, loadValid(t, f), strings.TrimSuffix(f, ".yaml")+".mmd")
		})
	}
	// Ids the language forbids, as a workflow built in code may have them.
	t.Run("unsafe-ids", func(t *testing.T) {
		compareGolden(t, unsafeIDs(), "testdata/cases/unsafe-ids.mmd")
	})
}

// unsafeIDs has step ids that are not Mermaid identifiers: with -, a
// leading digit, spaces, quotes, non-ASCII, empty, and one that looks like
// the encoding of another.
func unsafeIDs() *workflow.Workflow {
	msg := "stop"
	return &workflow.Workflow{Version: 1, Name: "unsafe ids", Steps: []*workflow.Step{
		{ID: "deploy-prod", Uses: "log"},
		{ID: "9lives", If: "true", Uses: "log"},
		{ID: "two words", Switch: []*workflow.Case{{If: "x", Goto: "deploy-prod"}, {Goto: "ünï"}}, MaxVisits: 2},
		{ID: `a"b]`, Parallel: []*workflow.Step{{ID: "x-1", Uses: "log"}, {ID: "", Uses: "log"}}},
		{ID: "ünï", Foreach: "${{ [1] }}", Steps: []*workflow.Step{{ID: "end", Fail: &msg}}},
		{ID: "deploy_2d_prod", Uses: "log"},
	}}
}

func loadValid(t *testing.T, file string) *workflow.Workflow {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := workflow.Load(data, workflow.Options{})
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return w
}

// compareGolden draws w, checks the chart's structure and compares the
// text with the golden file (rewritten with -update).
func compareGolden(t *testing.T, w *workflow.Workflow, golden string) {
	t.Helper()
	got := Mermaid(w)
	if _, err := parseChart(got); err != nil {
		t.Fatalf("malformed chart: %v\n%s", err, got)
	}
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./graph -run Golden -update)", err)
	}
	if got != string(want) {
		t.Errorf("chart differs from %s (go test ./graph -run Golden -update rewrites it)\n--- got\n%s--- want\n%s", golden, got, want)
	}
}

func stem(file string) string {
	return strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
}

// TestReadmeExample keeps the chart shown in README.md equal to what the
// command prints for testdata/cases/review-loop.yaml.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```mermaid\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no mermaid block")
	}
	if got := Mermaid(loadValid(t, "testdata/cases/review-loop.yaml")); got != block {
		t.Errorf("README.md's chart is not the one of testdata/cases/review-loop.yaml:\n%s", got)
	}
}

package graph

import (
	"os"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/workflow"
)

// FuzzMermaid draws whatever document decodes, valid or not: drawing must
// never panic, and a valid workflow's chart must be well formed.
func FuzzMermaid(f *testing.F) {
	examples, _ := filepath.Glob("../../examples/*.*")
	cases, _ := filepath.Glob("testdata/cases/*.yaml")
	for _, p := range append(examples, cases...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := workflow.Check(data, workflow.Options{})
		if res.Workflow == nil {
			return
		}
		text := Mermaid(res.Workflow)
		if !res.Valid() {
			return
		}
		if _, err := parseChart(text); err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
	})
}

// FuzzSVG draws whatever document decodes, valid or not: drawing must
// never fail or panic, and a valid workflow's drawing must be well formed,
// each step once, with no two boxes overlapping.
func FuzzSVG(f *testing.F) {
	examples, _ := filepath.Glob("../../examples/*.*")
	cases, _ := filepath.Glob("testdata/cases/*.yaml")
	for _, p := range append(examples, cases...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := workflow.Check(data, workflow.Options{})
		if res.Workflow == nil {
			return
		}
		if !res.Valid() {
			if _, err := SVG(res.Workflow, SVGOptions{}); err != nil {
				t.Fatal(err)
			}
			return
		}
		checkDrawing(t, res.Workflow, SVGOptions{})
	})
}

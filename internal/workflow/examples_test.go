package workflow

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExamplesValidate validates every workflow in examples/ and checks
// that, together, they use every step kind.
func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	jsonFiles, _ := filepath.Glob("../../examples/*.json")
	files = append(files, jsonFiles...)
	if len(files) < 8 {
		t.Fatalf("want at least 8 examples, found %d", len(files))
	}
	kinds := map[string]bool{}
	names := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res := Check(data, Options{})
		for _, v := range res.Violations {
			t.Errorf("%s:%s", f, v)
		}
		if res.Workflow == nil {
			continue
		}
		if other, dup := names[res.Workflow.Name]; dup {
			t.Errorf("%s and %s share the name %q", f, other, res.Workflow.Name)
		}
		names[res.Workflow.Name] = f
		walkSteps(res.Workflow.Steps, func(s *Step) { kinds[s.Kind()] = true })
	}
	for _, k := range Kinds {
		if !kinds[k] {
			t.Errorf("no example uses a %s step", k)
		}
	}
	// Every sub-workflow an example calls is itself an example.
	for _, f := range files {
		data, _ := os.ReadFile(f)
		res := Check(data, Options{})
		if res.Workflow == nil {
			continue
		}
		walkSteps(res.Workflow.Steps, func(s *Step) {
			if s.Workflow != "" && names[s.Workflow] == "" {
				t.Errorf("%s calls workflow %q, which is not in examples/", f, s.Workflow)
			}
		})
	}
}

func walkSteps(steps []*Step, fn func(*Step)) {
	for _, s := range steps {
		if s == nil {
			continue
		}
		fn(s)
		walkSteps(s.Parallel, fn)
		walkSteps(s.Steps, fn)
	}
}

package engine

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"stepwise.dev/stepwise/internal/store/sqlite"
	"stepwise.dev/stepwise/internal/workflow"
)

// TestSeededDefinitionIsTheStoredOne checks what knowDefinition relies on:
// the workflow a caller parsed from its source is the workflow the engine
// would parse from the stored canonical definition, for every example, so
// that a run driven by the seeded one runs as it would after a restart.
// Only the order of the inputs differs (a canonical definition has its
// keys sorted).
func TestSeededDefinitionIsTheStoredOne(t *testing.T) {
	files, _ := filepath.Glob("../../examples/*.yaml")
	jsonFiles, _ := filepath.Glob("../../examples/*.json")
	files = append(files, jsonFiles...)
	if len(files) < 5 {
		t.Fatalf("found %d examples", len(files))
	}
	for _, f := range files {
		res := mustCheckFile(t, f)
		def, err := workflow.Canonical(res.Source.Value)
		if err != nil {
			t.Fatal(err)
		}
		stored, version, err := workflow.Load(def, workflow.Options{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if version != res.Version {
			t.Errorf("%s: stored version %s, parsed %s", f, version, res.Version)
		}
		seeded := res.Workflow
		seeded.InputOrder, stored.InputOrder = nil, nil
		if !reflect.DeepEqual(seeded, stored) {
			t.Errorf("%s: the parsed workflow differs from the one parsed from its stored definition", f)
		}
	}
}

// TestStartKnowsTheStartedDefinition checks that a run of a version the
// engine has not seen does not parse its stored definition: the engine
// drives the workflow it was given.
func TestStartKnowsTheStartedDefinition(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := New(Config{Store: s, Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close(ctx)
	res := workflow.Check([]byte(noopWorkflow(3)), workflow.Options{})
	def, _ := workflow.Canonical(res.Source.Value)
	id, err := e.Start(ctx, StartRequest{Workflow: res.Workflow, Version: res.Version, Definition: def})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := e.Wait(ctx, id); err != nil || st != "succeeded" {
		t.Fatalf("run: %s %v", st, err)
	}
	wf, err := e.definition(ctx, res.Version)
	if err != nil {
		t.Fatal(err)
	}
	if wf != res.Workflow {
		t.Error("the engine parsed the definition again instead of keeping the started workflow")
	}
}

// acceptAll is a resolver that knows every action and workflow.
type acceptAll struct{}

func (acceptAll) HasAction(string) (bool, []string)   { return true, nil }
func (acceptAll) HasWorkflow(string) (bool, []string) { return true, nil }

// mustCheckFile parses and validates a workflow file.
func mustCheckFile(t *testing.T, path string) *workflow.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// With a resolver, as the service checks a workflow before starting it
	// (the engine parses stored definitions without one).
	res := workflow.Check(data, workflow.Options{Resolver: acceptAll{}})
	if !res.Valid() {
		t.Fatalf("%s: %v", path, res.Violations)
	}
	return res
}

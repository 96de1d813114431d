package workflow_test

// Property tests of the workflow language: validation, versions and the
// canonical form, over workflows drawn by genWorkflow (propgen_test.go) and
// spelled in random YAML and JSON (propformat_test.go).

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/workflow"
)

// spelling draws a YAML or a JSON spelling of v.
func spelling(t *rapid.T, v any) []byte {
	if rapid.Bool().Draw(t, "json") {
		return jsonSpelling(t, v)
	}
	return yamlSpelling(t, v)
}

func canonical(t *rapid.T, v any) string {
	c, err := workflow.Canonical(v)
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	return string(c)
}

// report formats a document and its violations for a failure message.
func report(doc []byte, vs []workflow.Violation) string {
	var b strings.Builder
	b.WriteString("document:\n")
	for i, l := range strings.Split(string(doc), "\n") {
		fmt.Fprintf(&b, "%4d| %s\n", i+1, l)
	}
	b.WriteString("violations:\n")
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s  %s\n", v.Path, v)
	}
	return b.String()
}

func TestGeneratedWorkflowsAreValid(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		for _, doc := range [][]byte{yamlSpelling(t, wf), jsonSpelling(t, wf)} {
			res := workflow.Check(doc, workflow.Options{})
			if !res.Valid() {
				t.Fatalf("a generated workflow has violations\n%s", report(doc, res.Violations))
			}
			if res.Workflow == nil || res.Workflow.Name != wf["name"] || len(res.Workflow.Steps) != len(wf["steps"].([]any)) {
				t.Fatalf("decoded workflow does not match the document\n%s", report(doc, nil))
			}
		}
	})
}

func TestParseReadsEverySpellingAsTheSameData(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		want := canonical(t, wf)
		doc := spelling(t, wf)
		src, vs := workflow.Parse(doc)
		if src == nil {
			t.Fatalf("Parse failed\n%s", report(doc, vs))
		}
		if got := canonical(t, src.Value); got != want {
			t.Fatalf("parsed data differs from the data written\n%s\nwant %s\ngot  %s", report(doc, vs), want, got)
		}
	})
}

func TestVersionIgnoresSpelling(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		want, err := workflow.VersionOf(wf)
		if err != nil {
			t.Fatalf("VersionOf: %v", err)
		}
		yamlDoc, jsonDoc := yamlSpelling(t, wf), jsonSpelling(t, wf)
		yamlRes := workflow.Check(yamlDoc, workflow.Options{})
		jsonRes := workflow.Check(jsonDoc, workflow.Options{})
		if yamlRes.Version != want {
			t.Fatalf("YAML version %s, want %s\n%s", yamlRes.Version, want, report(yamlDoc, yamlRes.Violations))
		}
		if jsonRes.Version != want {
			t.Fatalf("JSON version %s, want %s\n%s", jsonRes.Version, want, report(jsonDoc, jsonRes.Violations))
		}
		// Re-serializing what was parsed, in another key order and format,
		// keeps the version.
		again := spelling(t, yamlRes.Source.Value)
		if res := workflow.Check(again, workflow.Options{}); res.Version != want {
			t.Fatalf("re-serialized version %s, want %s\n%s", res.Version, want, report(again, res.Violations))
		}
	})
}

func TestCanonicalIsIdempotent(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		var v any
		if rapid.Bool().Draw(t, "workflow") {
			v = genWorkflow(t)
		} else {
			// Documents are objects: a bare scalar would be read as YAML.
			v = map[string]any{"value": genPlain(t, 0)}
		}
		first := canonical(t, v)
		src, vs := workflow.Parse([]byte(first))
		if src == nil {
			t.Fatalf("the canonical form does not parse\n%s", report([]byte(first), vs))
		}
		if second := canonical(t, src.Value); second != first {
			t.Fatalf("Canonical(parse(Canonical(v))) != Canonical(v)\nfirst  %q\nsecond %q", first, second)
		}
	})
}

// genPlain draws any value of the JSON data model, with numbers from the
// whole float64 and int64 ranges.
func genPlain(t *rapid.T, depth int) any {
	kinds := []string{"string", "int", "float", "integral float", "bool", "null"}
	if depth < 3 {
		kinds = append(kinds, "map", "list")
	}
	switch rapid.SampledFrom(kinds).Draw(t, "plain") {
	case "string":
		return rapid.String().Draw(t, "string")
	case "int":
		return rapid.Int64().Draw(t, "int")
	case "float":
		return rapid.Float64().Draw(t, "float")
	case "integral float":
		return math.Trunc(rapid.Float64Range(-1e22, 1e22).Draw(t, "float"))
	case "bool":
		return rapid.Bool().Draw(t, "bool")
	case "map":
		m := map[string]any{}
		for _, k := range rapid.SliceOfN(rapid.String(), 0, 4).Draw(t, "keys") {
			m[k] = genPlain(t, depth+1)
		}
		return m
	case "list":
		l := make([]any, rapid.IntRange(0, 4).Draw(t, "len"))
		for i := range l {
			l[i] = genPlain(t, depth+1)
		}
		return l
	}
	return nil
}

func TestRemovingARequiredFieldIsReported(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		removed := rapid.SampledFrom(requiredFields(wf)).Draw(t, "removed")
		doc := spelling(t, without(wf, removed))
		res := workflow.Check(doc, workflow.Options{})
		for _, v := range res.Violations {
			if atOrAbove(v.Path, removed) {
				return
			}
		}
		t.Fatalf("removing %s gives no violation at or above it\n%s", removed, report(doc, res.Violations))
	})
}

func TestDuplicateStepIDIsReported(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		src := rapid.SampledFrom(allSteps(wf)).Draw(t, "original")
		var others []stepAt
		for _, s := range append(allSteps(wf), allHooks(wf)...) {
			if s.path != src.path {
				others = append(others, s)
			}
		}
		if len(others) == 0 {
			wf["on_success"] = []any{map[string]any{"uses": "http"}}
			others = allHooks(wf)
		}
		dup := rapid.SampledFrom(others).Draw(t, "duplicate")
		dup.step["id"] = src.step["id"]
		doc := spelling(t, wf)
		res := workflow.Check(doc, workflow.Options{})
		// Either occurrence may be the one reported: the later one in
		// document order.
		for _, v := range res.Violations {
			if v.Rule == workflow.RuleDuplicateID && (v.Path == dup.path+"/id" || v.Path == src.path+"/id") {
				return
			}
		}
		t.Fatalf("id %q of %s given to %s: no duplicate-id violation at either\n%s", src.step["id"], src.path, dup.path, report(doc, res.Violations))
	})
}

func TestUndeclaredInputIsReported(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		name, ptr := insertUndeclaredInput(t, wf)
		doc := spelling(t, wf)
		res := workflow.Check(doc, workflow.Options{})
		for _, v := range res.Violations {
			if v.Rule == workflow.RuleReference && atOrAbove(ptr, v.Path) && strings.Contains(v.Message, strconv.Quote(name)) {
				return
			}
		}
		t.Fatalf("inputs.%s at %s: no reference violation\n%s", name, ptr, report(doc, res.Violations))
	})
}

// TestReferenceViolationPointsAtTheReference: the line and column of a
// reference violation are those of the reference in the file, or (for
// scalars whose layout cannot be mapped back) of the start of the value.
func TestReferenceViolationPointsAtTheReference(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		name, _ := insertUndeclaredInput(t, wf)
		doc := spelling(t, wf)
		res := workflow.Check(doc, workflow.Options{})
		for _, v := range res.Violations {
			if v.Rule != workflow.RuleReference || !strings.Contains(v.Message, strconv.Quote(name)) {
				continue
			}
			if at := unescapeASCII(textAt(doc, v.Pos)); strings.HasPrefix(at, "inputs") {
				continue
			}
			if v.Pos == res.Source.ValuePos(v.Path) {
				continue
			}
			t.Fatalf("violation %s points at %q, neither the reference nor the start of %s\n%s",
				v, textAt(doc, v.Pos), v.Path, report(doc, res.Violations))
		}
	})
}

func TestViolationsDoNotDependOnSpelling(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := mutate(t, genWorkflow(t))
		a, b := spelling(t, wf), spelling(t, wf)
		ra, rb := workflow.Check(a, workflow.Options{}), workflow.Check(b, workflow.Options{})
		va, vb := violationSet(ra.Violations), violationSet(rb.Violations)
		if strings.Join(va, "\n") != strings.Join(vb, "\n") {
			t.Fatalf("two spellings of one workflow, different violations\n%s\n%s", report(a, ra.Violations), report(b, rb.Violations))
		}
		if ra.Version != rb.Version {
			t.Fatalf("two spellings of one workflow, versions %s and %s", ra.Version, rb.Version)
		}
	})
}

package workflow_test

// Minimal cases of the bugs the property tests and fuzzing found, kept as
// regression tests.

import (
	"reflect"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/workflow"
)

// referencePos checks doc and returns the position of its one reference
// violation.
func referencePos(t *testing.T, doc string) workflow.Pos {
	t.Helper()
	res := workflow.Check([]byte(doc), workflow.Options{})
	for _, v := range res.Violations {
		if v.Rule == workflow.RuleReference {
			return v.Pos
		}
	}
	t.Fatalf("no reference violation in\n%s\nviolations: %v", doc, res.Violations)
	return workflow.Pos{}
}

// A literal block with an indentation indicator (which YAML emitters write
// when the text starts with a space) has its content indented by the
// indicator, not by its first line: the column of an expression in it is
// off by the number of leading spaces of the text.
func TestPositionInLiteralBlockWithIndentationIndicator(t *testing.T) {
	t.Parallel()

	// Line 7 is 7 spaces (6 of indentation, 1 of text), then ${{ at column
	// 8 and inputs at column 12.
	doc := "version: 1\nname: x\nsteps:\n  - id: a\n    uses: http\n    if: |2-\n       ${{ inputs.nope }}\n"
	if got, want := referencePos(t, doc), (workflow.Pos{Line: 7, Column: 12}); got != want {
		t.Fatalf("reference at %d:%d, want %d:%d", got.Line, got.Column, want.Line, want.Column)
	}
}

// A plain scalar may continue on the next lines (YAML folds the line break
// into a space). The position of an expression on a continuation line is
// computed as if the whole value were on its first line.
func TestPositionInMultiLinePlainScalar(t *testing.T) {
	t.Parallel()

	doc := "version: 1\nname: x\nsteps:\n  - id: a\n    uses: http\n    with:\n      x: one two three\n        ${{ inputs.nope }}\n"
	got := referencePos(t, doc)
	// Either the reference itself (8:13) or, as documented for scalars whose
	// layout is not mapped, the start of the value (7:10).
	if got != (workflow.Pos{Line: 8, Column: 13}) && got != (workflow.Pos{Line: 7, Column: 10}) {
		t.Fatalf("reference at %d:%d (past the end of line 7), want 8:13 or 7:10", got.Line, got.Column)
	}
}

// JSON writes characters outside the BMP as a surrogate pair of \u escapes
// (Python's json.dumps does by default). The pair is one character of the
// value but twelve bytes of the source.
func TestPositionAfterSurrogatePairEscape(t *testing.T) {
	t.Parallel()

	doc := `{"version": 1, "name": "x", "steps": [{"id": "a", "uses": "http", "with": {"x": "\ud83d\ude00 ${{ inputs.nope }}"}}]}`
	want := workflow.Pos{Line: 1, Column: strings.Index(doc, "inputs") + 1}
	if got := referencePos(t, doc); got != want {
		t.Fatalf("reference at %d:%d, want %d:%d", got.Line, got.Column, want.Line, want.Column)
	}
}

// YAML 1.2 reads U+0085, U+2028 and U+2029 as ordinary characters; the
// YAML parser workflow.Parse uses (go.yaml.in/yaml/v4) treats them as line
// breaks, as YAML 1.1 did. go.yaml.in/yaml/v3, among others, writes them
// raw in plain, single-quoted and literal scalars.
func TestYAMLKeepsUnicodeLineSeparators(t *testing.T) {
	t.Parallel()

	for _, fail := range []string{"a\u2028b", "'a\u2028b'", "|-\n      a\u2028b", "a\u0085b", "'a\u0085b'", "'a\u2029b'"} {
		doc := "version: 1\nname: x\nsteps:\n  - id: a\n    fail: " + fail + "\n"
		src, vs := workflow.Parse([]byte(doc))
		if src == nil {
			t.Errorf("fail: %q: %v", fail, vs)
			continue
		}
		got := src.Value.(map[string]any)["steps"].([]any)[0].(map[string]any)["fail"]
		if want := strings.NewReplacer("'", "", "|-\n      ", "").Replace(fail); got != want {
			t.Errorf("fail: %q reads as %q, want %q", fail, got, want)
		}
	}
	doc := "version: 1\nname: x\nsteps:\n  - id: a\n    uses: http\n    with: {'a\u2028b': 1}\n"
	if src, vs := workflow.Parse([]byte(doc)); src == nil {
		t.Errorf("quoted key with U+2028 in a flow mapping: %v", vs)
	}
}

// An input or output name that is not an identifier breaks the schema's
// propertyNames. The violation lands on a random top-level field (version,
// name, steps, inputs or outputs, a different one from run to run), because
// the JSON Schema library reports a propertyNames failure whose schema is a
// $ref at a wrong instance location; its message is the library's jargon.
func TestInvalidPropertyNameIsReportedAtTheKey(t *testing.T) {
	t.Parallel()

	doc := "version: 1\nname: x\nsteps: [{id: a, fail: x}]\noutputs: {a-b: \"2\"}\n"
	for i := 0; i < 20; i++ {
		res := workflow.Check([]byte(doc), workflow.Options{})
		if len(res.Violations) != 1 {
			t.Fatalf("want one violation, got %v", res.Violations)
		}
		v := res.Violations[0]
		if !strings.HasPrefix(v.Path, "/outputs") || v.Pos != (workflow.Pos{Line: 4, Column: 11}) {
			t.Fatalf("violation %q at %s, want it at /outputs/a-b (4:11)", v.Path, v)
		}
	}
}

// Violations are sorted by line, column and rule only. Violations that tie
// (here: one aliased template used by several fields of a hook, all
// reported at the anchor) keep the order they were found in, and the
// fields of a hook are visited in map order: the order changes from run to
// run.
func TestViolationOrderIsDeterministic(t *testing.T) {
	t.Parallel()

	doc := "version: 1\nname: x\nsteps:\n  - id: a\n    fail: &t '${{ inputs.nope }}'\non_success:\n  - uses: http\n    timeout: *t\n    if: *t\n    with: {a: *t, b: *t}\n"
	first := workflow.Check([]byte(doc), workflow.Options{}).Violations
	for i := 0; i < 50; i++ {
		again := workflow.Check([]byte(doc), workflow.Options{}).Violations
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("two checks of one document list violations in different orders:\n%v\n%v", first, again)
		}
	}
}

package generate

import (
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/workflow"
)

func TestHumanizeAndIDs(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"firstName": "First name", "zip_code": "Zip code", "a-b.c": "A b c"} {
		if got := humanize(in); got != want {
			t.Errorf("humanize(%q) = %q, want %q", in, got, want)
		}
	}
	out, err := FromSchema([]byte(`{"properties":{"9lives":{"type":"string"},"Some Key!":{"type":"boolean"},"some_key":{"type":"boolean"}}}`), Options{Name: "ids"})
	if err != nil {
		t.Fatal(err)
	}
	res := workflow.Check(out, workflow.Options{})
	if !res.Valid() {
		t.Fatalf("%v\n%s", res.Violations, out)
	}
	for _, id := range []string{"id: q_9lives", "id: some_key", "id: some_key_2"} {
		if !strings.Contains(string(out), id) {
			t.Errorf("missing %s:\n%s", id, out)
		}
	}
}

// Whatever the schema, generation does not panic, and what it produces
// parses as a workflow.
func FuzzFromSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^x$"},"b":{"enum":[1,"two",true]}}}`,
		`{"properties":{"o":{"type":"object","properties":{"p":{"type":"array","items":{"enum":["x"]}}}}}}`,
		`properties: {n: {type: integer, exclusiveMinimum: 3, default: 5}}`,
		`{"properties":{"":{"type":"number"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := FromSchema(data, Options{Name: "fuzz"})
		if err != nil {
			return
		}
		if src, vs := workflow.Parse(out); src == nil {
			t.Fatalf("generated text does not parse: %v\n%s", vs, out)
		}
	})
}

// TestLineSeparatorsKept: U+0085, U+2028 and U+2029 in a schema's text come
// out of the generated workflow as they went in (the YAML encoder would
// break a quoted line there and indent the rest, which a YAML 1.2 reader
// keeps as text).
func TestLineSeparatorsKept(t *testing.T) {
	t.Parallel()
	schema := "{\"type\":\"object\",\"title\":\"T\\u2028x\",\"properties\":{\"a\\u2029b\":{\"type\":\"string\",\"description\":\"one\\u2028two\\u2029three\\u0085four\"}}}"
	out, err := FromSchema([]byte(schema), Options{})
	if err != nil {
		t.Fatal(err)
	}
	res := workflow.Check(out, workflow.Options{})
	if !res.Valid() {
		t.Fatalf("%v\n%s", res.Violations, out)
	}
	doc := res.Source.Value.(map[string]any)
	if doc["title"] != "T\u2028x" {
		t.Errorf("title %q\n%s", doc["title"], out)
	}
	ask := doc["steps"].([]any)[0].(map[string]any)["ask"].(map[string]any)
	if help, _ := ask["help"].(string); !strings.HasPrefix(help, "one\u2028two\u2029three\u0085four") {
		t.Errorf("help %q\n%s", help, out)
	}
	with := doc["steps"].([]any)[1].(map[string]any)["with"].(map[string]any)["value"].(map[string]any)
	if _, ok := with["a\u2029b"]; !ok {
		t.Errorf("property name lost: %v\n%s", with, out)
	}
}

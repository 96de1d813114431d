package generate

import (
	"strings"
	"testing"

	"stepwise.dev/stepwise/workflow"
)

func TestHumanizeAndIDs(t *testing.T) {
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

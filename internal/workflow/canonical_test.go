package workflow

import (
	"testing"
)

func versionOf(t *testing.T, doc string) string {
	t.Helper()
	res := Check([]byte(doc), Options{})
	if !res.Valid() {
		t.Fatalf("invalid: %v\n%s", res.Violations, doc)
	}
	return res.Version
}

func TestVersionSameAcrossSpellings(t *testing.T) {
	t.Parallel()
	spellings := []string{
		// block YAML
		"version: 1\nname: v\ninputs:\n  n: {type: integer, default: 2}\nsteps:\n  - id: a\n    uses: log\n    with: {message: hi, level: 1.0}\n",
		// reordered keys, flow style, comments, quoted scalars
		"# comment\nsteps: [{with: {level: 1, message: 'hi'}, uses: \"log\", id: a}]\ninputs: {n: {default: 2, type: integer}}\nname: \"v\"\nversion: 1\n",
		// JSON, pretty
		"{\n  \"version\": 1,\n  \"name\": \"v\",\n  \"inputs\": {\"n\": {\"type\": \"integer\", \"default\": 2}},\n  \"steps\": [\n    {\"id\": \"a\", \"uses\": \"log\", \"with\": {\"message\": \"hi\", \"level\": 1}}\n  ]\n}\n",
		// JSON, compact, tabs, numbers spelled differently
		"{\"steps\":[{\"id\":\"a\",\t\"with\":{\"level\":1e0,\"message\":\"h\\u0069\"},\"uses\":\"log\"}],\"name\":\"v\",\"version\":1.0,\"inputs\":{\"n\":{\"type\":\"integer\",\"default\":2.0}}}",
	}
	want := versionOf(t, spellings[0])
	for i, s := range spellings[1:] {
		if got := versionOf(t, s); got != want {
			t.Errorf("spelling %d has version %s, want %s", i+1, got, want)
		}
	}
}

func TestVersionChangesWithContent(t *testing.T) {
	t.Parallel()
	a := versionOf(t, "version: 1\nname: v\nsteps:\n  - id: a\n    uses: log\n")
	b := versionOf(t, "version: 1\nname: v\nsteps:\n  - id: b\n    uses: log\n")
	if a == b {
		t.Error("different workflows share a version")
	}
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	got, err := Canonical(map[string]any{"b": []any{int64(1), 2.5, 3.0, "<&>", nil, true}, "a": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{},"b":[1,2.5,3,"<&>",null,true]}`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestOffsetPositions(t *testing.T) {
	t.Parallel()
	doc := "version: 1\nname: pos\ninputs:\n  x: {type: string, default: a}\nsteps:\n" +
		"  - id: plain\n    uses: log\n    with:\n      m: ab ${{ inputs.y1 }}\n" +
		"  - id: dq\n    uses: log\n    with: {m: \"\\t\\u00e9 ${{ inputs.y2 }}\"}\n" +
		"  - id: sq\n    uses: log\n    with: {m: 'it''s ${{ inputs.y3 }}'}\n" +
		"  - id: lit\n    uses: log\n    with:\n      m: |\n        line one\n          ${{ inputs.y4 }}\n"
	res := Check([]byte(doc), Options{})
	want := map[string]Pos{
		"/steps/0/with/m": {9, 17},
		"/steps/1/with/m": {12, 29},
		"/steps/2/with/m": {15, 26},
		"/steps/3/with/m": {21, 15},
	}
	if len(res.Violations) != len(want) {
		t.Fatalf("violations: %v", res.Violations)
	}
	for _, v := range res.Violations {
		if w := want[v.Path]; v.Pos != w {
			t.Errorf("%s at %d:%d, want %d:%d", v.Path, v.Line, v.Column, w.Line, w.Column)
		}
	}
}

func TestParseRejectsAliasBombs(t *testing.T) {
	t.Parallel()
	doc := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for i := 0; i < 8; i++ {
		name := string(rune('b' + i))
		doc += name + ": &" + name + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = name
	}
	src, vs := Parse([]byte(doc))
	if src != nil || len(vs) != 1 || vs[0].Rule != RuleSyntax {
		t.Fatalf("want one syntax violation, got %v", vs)
	}
}

func TestParseRejectsSecondDocument(t *testing.T) {
	t.Parallel()
	_, vs := Parse([]byte("version: 1\n---\nversion: 2\n"))
	if len(vs) != 1 || vs[0].Line != 2 {
		t.Fatalf("got %v", vs)
	}
}

func TestParseEmpty(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{"", "   \n", "# only a comment\n"} {
		res := Check([]byte(doc), Options{})
		if res.Valid() {
			t.Errorf("%q validated", doc)
		}
	}
}

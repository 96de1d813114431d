package expr

import (
	"reflect"
	"testing"
)

func TestAnalyzeRefs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src   string
		refs  []Ref
		calls []string
	}{
		{"inputs.region", []Ref{{Root: "inputs", Path: []string{"region"}}}, nil},
		{`steps.create["output"].body.id`, []Ref{{Root: "steps", Path: []string{"create", "output", "body", "id"}}}, nil},
		{"steps[inputs.name].output", []Ref{{Root: "steps"}, {Root: "inputs", Path: []string{"name"}, Offset: 6}}, nil},
		{"inputs?.a?.b", []Ref{{Root: "inputs", Path: []string{"a", "b"}}}, nil},
		{"let x = inputs.n; x + 1", []Ref{{Root: "inputs", Path: []string{"n"}, Offset: 8}}, nil},
		{"filter(inputs.list, .enabled && # != nil)", []Ref{{Root: "inputs", Path: []string{"list"}, Offset: 7}}, nil},
		{"len(item) > index", []Ref{{Root: "item", Offset: 4}, {Root: "index", Offset: 12}}, nil},
		{"myfn(1)", nil, []string{"myfn"}},
		{"upper('a')", nil, nil},
		{"1 + 2", nil, nil},
	}
	for _, tt := range tests {
		a, err := Analyze(tt.src)
		if err != nil {
			t.Errorf("Analyze(%q): %v", tt.src, err)
			continue
		}
		if !reflect.DeepEqual(a.Refs, tt.refs) {
			t.Errorf("Analyze(%q).Refs = %+v, want %+v", tt.src, a.Refs, tt.refs)
		}
		var calls []string
		for _, c := range a.Calls {
			calls = append(calls, c.Name)
		}
		if !reflect.DeepEqual(calls, tt.calls) {
			t.Errorf("Analyze(%q).Calls = %v, want %v", tt.src, calls, tt.calls)
		}
	}
}

func TestAnalyzeSyntaxErrorOffset(t *testing.T) {
	t.Parallel()
	_, err := Analyze("inputs.a +* 2")
	se, ok := err.(*SyntaxError)
	if !ok {
		t.Fatalf("want *SyntaxError, got %T %v", err, err)
	}
	if se.Offset < 9 || se.Offset > 11 {
		t.Errorf("offset %d does not point at the bad operator", se.Offset)
	}
}

func TestAnalyzeUnicodeOffsets(t *testing.T) {
	t.Parallel()
	a, err := Analyze(`"héllo" + inputs.x`)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Refs[0].Offset; got != len(`"héllo" + `) {
		t.Errorf("byte offset = %d, want %d", got, len(`"héllo" + `))
	}
}

func TestDeclassifyIsAFunctionWhoseArgumentsAreDeclassified(t *testing.T) {
	t.Parallel()
	a, err := Analyze(`declassify(upper(inputs.token)) + inputs.user`)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Calls) != 0 {
		t.Fatalf("declassify reported as an unknown call: %+v", a.Calls)
	}
	if len(a.Refs) != 2 || !a.Refs[0].Declassified || a.Refs[0].Path[0] != "token" || a.Refs[1].Declassified {
		t.Fatalf("refs = %+v", a.Refs)
	}
	if _, err := Analyze(`declassify(inputs.a, inputs.b)`); err == nil {
		t.Fatal("declassify with two arguments analyzed without error")
	}
	v, err := Eval(`declassify(upper(inputs.token))`, map[string]any{"inputs": map[string]any{"token": "abc"}})
	if err != nil || v != "ABC" {
		t.Fatalf("Eval = %v, %v", v, err)
	}
}

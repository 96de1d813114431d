package expr

import (
	"reflect"
	"testing"
)

func TestScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []Segment
	}{
		{"plain", []Segment{{Text: "plain"}}},
		{"${{ a }}", []Segment{{Text: " a ", Expr: true, Offset: 3}}},
		{"x ${{a}} y", []Segment{{Text: "x "}, {Text: "a", Expr: true, Offset: 5}, {Text: " y", Offset: 8}}},
		{`${{ "}}" }}`, []Segment{{Text: ` "}}" `, Expr: true, Offset: 3}}},
		{`${{ {"a": 1}.a }}`, []Segment{{Text: ` {"a": 1}.a `, Expr: true, Offset: 3}}},
		{"$${{ literal }}", []Segment{{Text: "${{ literal }}"}}},
		{"a$${{b}}${{c}}", []Segment{{Text: "a${{b}}"}, {Text: "c", Expr: true, Offset: 11}}},
	}
	for _, tt := range tests {
		got, err := Scan(tt.in)
		if err != nil {
			t.Errorf("Scan(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Scan(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func TestScanErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"${{ a", "x ${{ }}", `${{ "open }}`, "${{ a } b"} {
		if _, err := Scan(in); err == nil {
			t.Errorf("Scan(%q) succeeded, want an error", in)
		}
	}
}

func TestSingle(t *testing.T) {
	t.Parallel()
	segs, _ := Scan("  ${{ x }} ")
	if _, ok := Single(segs); !ok {
		t.Error("whitespace around one expression should still be single")
	}
	segs, _ = Scan("a ${{ x }}")
	if _, ok := Single(segs); ok {
		t.Error("text plus expression is not single")
	}
	segs, _ = Scan("${{ x }}${{ y }}")
	if _, ok := Single(segs); ok {
		t.Error("two expressions are not single")
	}
}

func TestHasExpr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{"a": false, "${{a}}": true, "$${{a}}": false, "$${{a}} ${{b}}": true} {
		if got := HasExpr(in); got != want {
			t.Errorf("HasExpr(%q) = %v", in, got)
		}
	}
}

func TestCondition(t *testing.T) {
	t.Parallel()
	src, off, err := Condition("inputs.n > 1")
	if err != nil || src != "inputs.n > 1" || off != 0 {
		t.Errorf("bare condition: %q %d %v", src, off, err)
	}
	src, off, err = Condition("${{ !steps.ok.answer }}")
	if err != nil || src != " !steps.ok.answer " || off != 3 {
		t.Errorf("wrapped condition: %q %d %v", src, off, err)
	}
	if _, _, err := Condition("a ${{ b }}"); err == nil {
		t.Error("text around a condition's expression must be rejected")
	}
}

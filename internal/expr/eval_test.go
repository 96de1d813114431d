package expr

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

var env = map[string]any{
	"inputs": map[string]any{"region": "fsn1", "count": 3, "tags": []any{"a", "b"}},
	"steps":  map[string]any{"create": map[string]any{"output": map[string]any{"body": map[string]any{"id": 42}}}},
}

func TestRenderTyped(t *testing.T) {
	t.Parallel()
	v, err := Render("${{ inputs.count * 2 }}", env)
	if err != nil || v != 6 {
		t.Fatalf("typed render = %#v, %v", v, err)
	}
	v, err = Render("${{ inputs.tags }}", env)
	if err != nil || !reflect.DeepEqual(v, []any{"a", "b"}) {
		t.Fatalf("list render = %#v, %v", v, err)
	}
}

func TestRenderInterpolates(t *testing.T) {
	t.Parallel()
	v, err := Render("server ${{ steps.create.output.body.id }} in ${{ inputs.region }}: ${{ inputs.tags }}", env)
	if err != nil {
		t.Fatal(err)
	}
	if v != `server 42 in fsn1: ["a","b"]` {
		t.Fatalf("got %q", v)
	}
	v, _ = Render("$${{ kept }}", env)
	if v != "${{ kept }}" {
		t.Fatalf("escape rendered as %q, want a literal ${{ kept }}", v)
	}
}

func TestRenderValue(t *testing.T) {
	t.Parallel()
	in := map[string]any{"a": "${{ inputs.count }}", "b": []any{"x-${{ inputs.region }}", 1}}
	out, err := RenderValue(in, env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": 3, "b": []any{"x-fsn1", 1}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %#v", out)
	}
	if in["a"] != "${{ inputs.count }}" {
		t.Fatal("RenderValue modified its input")
	}
}

func TestEvalErrors(t *testing.T) {
	t.Parallel()
	if _, err := Eval("1 +", env); err == nil {
		t.Error("syntax error not reported")
	}
	if _, err := Eval("inputs.count.x.y", env); err == nil {
		t.Error("member of an int should fail")
	}
}

func TestEvalMemoryBounded(t *testing.T) {
	t.Parallel()
	_, err := Eval("map(1..10000000, {# * 2})", nil)
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("a huge allocation must hit the memory budget, got %v", err)
	}
}

func TestTruthy(t *testing.T) {
	t.Parallel()
	for v, want := range map[any]bool{nil: false, false: false, true: true, "": false, "false": false, "x": true, 0: false, 2: true, 0.0: false} {
		if Truthy(v) != want {
			t.Errorf("Truthy(%#v) != %v", v, want)
		}
	}
}

func TestEvalNormalizesMaps(t *testing.T) {
	t.Parallel()
	v, err := Render("${{ fromPairs([['a', 1]]) }}", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, map[string]any{"a": 1}) {
		t.Fatalf("got %#v", v)
	}
	s, err := Render("x ${{ groupBy([1, 2, 3], # % 2) }}", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s != `x {"0":[2],"1":[1,3]}` {
		t.Fatalf("got %q", s)
	}
}

// An expression's error is one line that keeps the position: no
// expr-lang snippet with a caret under it.
func TestEvalErrorIsOneLine(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"1 +", "inputs.count.x.y", "int('abc')", "inputs.count +\n  nope()"} {
		_, err := Eval(src, env)
		if err == nil {
			t.Fatalf("%q: no error", src)
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || strings.Contains(msg, "^") {
			t.Errorf("%q: more than one line: %q", src, msg)
		}
		if !strings.Contains(msg, "column ") {
			t.Errorf("%q: no position: %q", src, msg)
		}
	}
	_, err := Eval("inputs.count +\n  nope()", env)
	if msg := err.Error(); !strings.Contains(msg, "line 2, column ") {
		t.Errorf("second line not named: %q", msg)
	}
}

// The compiled programs kept stay at MaxPrograms however many distinct
// expressions are evaluated, the most recently used kept.
func TestProgramCacheIsBounded(t *testing.T) {
	t.Parallel()
	for i := range MaxPrograms + 10 {
		if _, err := Eval(fmt.Sprintf("inputs.count + %d", i), env); err != nil {
			t.Fatal(err)
		}
	}
	if n := programs.Len(); n != MaxPrograms {
		t.Fatalf("%d programs kept, want the bound %d", n, MaxPrograms)
	}
	if !programs.Contains(fmt.Sprintf("inputs.count + %d", MaxPrograms+9)) || programs.Contains("inputs.count + 0") {
		t.Fatal("not the most recently used kept")
	}
}

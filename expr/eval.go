package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Limits bound the cost of one expression. Expressions are evaluated in the
// engine's hot path and may come from untrusted workflow authors, so both
// the program size and the memory one evaluation may allocate are capped.
const (
	// MaxNodes caps the number of AST nodes of one expression.
	MaxNodes = 2000
	// MemoryBudget caps the allocations of one evaluation (expr-lang units).
	MemoryBudget = 1_000_000
)

// EvalError is an expression that failed to compile or evaluate.
type EvalError struct {
	// Expr is the expression source.
	Expr string
	Err  error
}

// Error is one line: expr-lang's own message carries a snippet of the
// source with a caret under the place, over three lines; here the place is
// kept as its line (when not the first) and column instead.
func (e *EvalError) Error() string {
	var fe *file.Error
	if errors.As(e.Err, &fe) && fe.Column >= 0 && (fe.Line > 0 || fe.Snippet != "") {
		at := fmt.Sprintf("column %d", fe.Column+1)
		if fe.Line > 1 {
			at = fmt.Sprintf("line %d, column %d", fe.Line, fe.Column+1)
		}
		return fmt.Sprintf("expression %q: %s (at %s)", strings.TrimSpace(e.Expr), fe.Message, at)
	}
	return fmt.Sprintf("expression %q: %v", strings.TrimSpace(e.Expr), e.Err)
}

func (e *EvalError) Unwrap() error { return e.Err }

var programs sync.Map // source -> *vm.Program

func compile(src string) (*vm.Program, error) {
	if p, ok := programs.Load(src); ok {
		return p.(*vm.Program), nil
	}
	p, err := expr.Compile(src, expr.MaxNodes(MaxNodes), declassifyOption)
	if err != nil {
		return nil, err
	}
	programs.Store(src, p)
	return p, nil
}

// Eval evaluates one expression against env.
func Eval(src string, env map[string]any) (any, error) {
	p, err := compile(src)
	if err != nil {
		return nil, &EvalError{Expr: src, Err: err}
	}
	m := vm.VM{MemoryBudget: MemoryBudget}
	v, err := m.Run(p, env)
	if err != nil {
		return nil, &EvalError{Expr: src, Err: err}
	}
	return normalize(v), nil
}

// normalize turns the maps some builtins build (fromPairs, groupBy:
// map[any]any, map[K]V) into the JSON data model's map[string]any, so
// results can be stored, rendered and serialized.
func normalize(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int, int64, float64:
		return v
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			out[Text(it.Key().Interface())] = normalize(it.Value().Interface())
		}
		return out
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return v // bytes
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	}
	return v
}

// Render evaluates a template. A template that is exactly one expression
// yields its typed value; otherwise the result is the text with every
// expression replaced by its rendering (see Text).
func Render(tmpl string, env map[string]any) (any, error) {
	return RenderObserved(tmpl, env, nil)
}

// Observer is told the source and value of each expression a render
// evaluates (the engine learns the values of secret ones, to mask them).
type Observer func(src string, v any)

// RenderObserved is Render that tells observe, when not nil, each
// expression's value.
func RenderObserved(tmpl string, env map[string]any, observe Observer) (any, error) {
	if !strings.Contains(tmpl, openDelim) {
		return tmpl, nil
	}
	segs, err := Scan(tmpl)
	if err != nil {
		return nil, &EvalError{Expr: tmpl, Err: err}
	}
	if one, ok := Single(segs); ok {
		v, err := Eval(one.Text, env)
		if err == nil && observe != nil {
			observe(one.Text, v)
		}
		return v, err
	}
	var b strings.Builder
	for _, sg := range segs {
		if !sg.Expr {
			b.WriteString(sg.Text)
			continue
		}
		v, err := Eval(sg.Text, env)
		if err != nil {
			return nil, err
		}
		if observe != nil {
			observe(sg.Text, v)
		}
		b.WriteString(Text(v))
	}
	return b.String(), nil
}

// RenderValue renders every string inside a JSON-like value (maps, slices,
// scalars), returning a new value; v is not modified.
func RenderValue(v any, env map[string]any) (any, error) {
	return RenderValueObserved(v, env, nil)
}

// RenderValueObserved is RenderValue that tells observe, when not nil,
// each expression's value.
func RenderValueObserved(v any, env map[string]any, observe Observer) (any, error) {
	switch x := v.(type) {
	case string:
		return RenderObserved(x, env, observe)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := RenderValueObserved(e, env, observe)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := RenderValueObserved(e, env, observe)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return v, nil
	}
}

// Text renders a value for interpolation into a string: strings as they
// are, nil as the empty string, numbers and booleans in their usual form,
// and anything else as compact JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case fmt.Stringer:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Truthy reports whether a condition value counts as true: false, nil, 0,
// "" and "false" are false; everything else is true.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != "" && x != "false"
	case int:
		return x != 0
	case int64:
		return x != 0
	case float64:
		return x != 0
	}
	return true
}

// Condition returns the expression source of a condition field such as
// `if`. A condition may be written bare (`inputs.n > 1`) or wrapped in
// exactly one ${{ }}; the byte offset of the expression within s is
// returned with it.
func Condition(s string) (src string, offset int, err error) {
	if !strings.Contains(s, openDelim) {
		return s, 0, nil
	}
	segs, err := Scan(s)
	if err != nil {
		return "", 0, err
	}
	one, ok := Single(segs)
	if !ok {
		return "", 0, &ScanError{Message: "a condition must be one expression: write it bare or as a single ${{ … }}"}
	}
	return one.Text, one.Offset, nil
}

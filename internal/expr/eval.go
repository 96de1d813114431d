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
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"stepwise.dev/stepwise/internal/cache"
)

// Limits bound the cost of one expression. Expressions are evaluated in the
// engine's hot path and may come from untrusted workflow authors, so both
// the program size and the memory one evaluation may allocate are capped
// (the memory in bytes: MemoryLimit, budget.go).
const (
	// MaxNodes caps the number of AST nodes of one expression.
	MaxNodes = 2000
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

// program is a compiled expression with what its evaluation needs.
type program struct {
	*vm.Program
	// checked: the program calls checked functions, which read the
	// evaluation's budget from the environment.
	checked bool
	// constructs: the program builds lists or maps, which may share
	// parts; the written size of its result is charged.
	constructs bool
	// readsEnv: the expression names $env, so its result may hold the
	// environment it ran with.
	readsEnv bool
}

// envs recycles the environments checked programs run with (the caller's
// entries and the budget): one is handed back once its evaluation is over,
// unless the expression could have kept it ($env).
var envs = sync.Pool{New: func() any { return map[string]any{} }}

// budgetEnv is env with b under budgetKey, in a map of its own.
func budgetEnv(env map[string]any, b *budget) map[string]any {
	m := envs.Get().(map[string]any)
	for k, v := range env {
		m[k] = v
	}
	m[budgetKey] = b
	return m
}

func releaseEnv(m map[string]any) {
	clear(m)
	envs.Put(m)
}

// MaxPrograms bounds the compiled programs kept for reuse, the most
// recently used ones (about 1 KB each).
const MaxPrograms = 4096

var programs = cache.New[string, *program](MaxPrograms) // source -> program

// compileOptions register the checked functions (funcs.go).
var compileOptions = func() []expr.Option {
	opts := []expr.Option{expr.MaxNodes(MaxNodes), declassifyOption}
	for name, fn := range functions {
		opts = append(opts, expr.Function(name, fn))
	}
	return opts
}()

func compile(src string) (*program, error) {
	if p, ok := programs.Get(src); ok {
		return p, nil
	}
	cfg := conf.CreateNew()
	for _, op := range compileOptions {
		op(cfg)
	}
	cfg.Check()
	tree, err := parser.ParseWithConfig(src, cfg)
	if err != nil {
		return nil, err
	}
	var w rewriter
	w.rewrite(&tree.Node, false)
	if _, err := new(checker.Checker).PatchAndCheck(tree, cfg); err != nil {
		return nil, err
	}
	if err := optimizer.Optimize(&tree.Node, cfg); err != nil {
		return nil, err
	}
	vp, err := compiler.Compile(tree, cfg)
	if err != nil {
		return nil, err
	}
	p := &program{Program: vp, checked: w.checked, constructs: w.constructs, readsEnv: w.readsEnv}
	programs.Add(src, p)
	return p, nil
}

// Eval evaluates one expression against env, within a fresh memory budget
// (MemoryLimit). A *BudgetError (errors.As) reports an evaluation that
// would have gone past it.
func Eval(src string, env map[string]any) (any, error) {
	return eval(src, env, nil)
}

// eval evaluates src within budget b; a nil b is a fresh budget, made
// only when the program allocates anything it charges.
func eval(src string, env map[string]any, b *budget) (any, error) {
	p, err := compile(src)
	if err != nil {
		return nil, &EvalError{Expr: src, Err: err}
	}
	if b == nil && (p.checked || p.constructs) {
		b = newBudget()
	}
	limit := MemoryLimit()
	if b != nil {
		limit = b.limit
	}
	if p.checked {
		env = budgetEnv(env, b)
		if !p.readsEnv {
			defer releaseEnv(env)
		}
	}
	v, err := run(src, p, env, uint(limit))
	if err != nil {
		return nil, err
	}
	if p.constructs {
		// Normalizing and writing the result out must fit too.
		s := sizer{limit: b.remaining(), copies: true}
		s.walk(v, 0)
		if err := b.charge("the result", s.n); s.over() || err != nil {
			return nil, &EvalError{Expr: src, Err: &BudgetError{Limit: b.limit, What: "the result"}}
		}
	}
	return normalize(v), nil
}

// run runs a program. expr-lang's own budget counts list elements; every
// element is charged at least a byte by ours, so it never runs out first.
func run(src string, p *program, env map[string]any, limit uint) (any, error) {
	m := vm.VM{MemoryBudget: limit}
	v, err := m.Run(p.Program, env)
	if err != nil {
		return nil, &EvalError{Expr: src, Err: err}
	}
	return v, nil
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
	return render(tmpl, env, nil, nil)
}

// Observer is told the source and value of each expression a render
// evaluates (the engine learns the values of secret ones, to mask them).
type Observer func(src string, v any)

// RenderObserved is Render that tells observe, when not nil, each
// expression's value.
func RenderObserved(tmpl string, env map[string]any, observe Observer) (any, error) {
	return render(tmpl, env, nil, observe)
}

// render is Render within budget b (nil: a fresh one): its expressions
// share it, and so does the text they are spliced into. observe, when not
// nil, is told each expression's value.
func render(tmpl string, env map[string]any, b *budget, observe Observer) (any, error) {
	if !strings.Contains(tmpl, openDelim) {
		return tmpl, nil
	}
	segs, err := Scan(tmpl)
	if err != nil {
		return nil, &EvalError{Expr: tmpl, Err: err}
	}
	if one, ok := Single(segs); ok {
		v, err := eval(one.Text, env, b)
		if err == nil && observe != nil {
			observe(one.Text, v)
		}
		return v, err
	}
	if b == nil {
		b = newBudget()
	}
	var out strings.Builder
	for _, sg := range segs {
		if !sg.Expr {
			out.WriteString(sg.Text)
			continue
		}
		v, err := eval(sg.Text, env, b)
		if err != nil {
			return nil, err
		}
		if observe != nil {
			observe(sg.Text, v)
		}
		if err := spliceText(&out, v, b); err != nil {
			return nil, &EvalError{Expr: sg.Text, Err: err}
		}
	}
	return out.String(), nil
}

// spliceText writes v's text into out, charging what the text takes.
func spliceText(out *strings.Builder, v any, b *budget) error {
	var n int64
	if s, ok := v.(string); ok {
		n = int64(len(s))
	} else {
		var ok bool
		if n, ok = textSize(v, b.remaining(), false); !ok {
			return &BudgetError{Limit: b.limit, What: "the text"}
		}
	}
	// The text is copied into the template's, which may grow twice its size.
	if err := b.charge("the text", mul(n, 2)); err != nil {
		return err
	}
	out.WriteString(Text(v))
	return nil
}

// RenderValue renders every string inside a JSON-like value (maps, slices,
// scalars), returning a new value; v is not modified.
// Its expressions share one memory budget.
func RenderValue(v any, env map[string]any) (any, error) {
	return renderValue(v, env, newBudget(), nil)
}

// RenderValueObserved is RenderValue that tells observe, when not nil,
// each expression's value.
func RenderValueObserved(v any, env map[string]any, observe Observer) (any, error) {
	return renderValue(v, env, newBudget(), observe)
}

func renderValue(v any, env map[string]any, b *budget, observe Observer) (any, error) {
	switch x := v.(type) {
	case string:
		return render(x, env, b, observe)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderValue(e, env, b, observe)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderValue(e, env, b, observe)
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

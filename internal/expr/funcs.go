package expr

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/vm/runtime"
)

// The checked functions. Every builtin of expr-lang that can build a value
// bigger than its arguments, and every operator or loop that allocates in
// proportion to data, is rewritten (rewrite.go) into a call of one of these
// functions with the evaluation's environment as first argument. The
// environment carries the evaluation's budget (budgetKey): each function
// computes the size of what it is about to build, charges it, and only
// then builds it (most by calling expr-lang's own builtin).

// budgetKey is the environment entry holding the evaluation's *budget.
// Expressions cannot name it (it is not an identifier).
const budgetKey = "$stepwise.budget"

// checkedPrefix starts the names of the checked functions.
const checkedPrefix = "$sw_"

var errNoBudget = errors.New("this function is internal to stepwise")

type checkedFunc func(b *budget, args []any) (any, error)

// checked are the checked functions by the name of what they replace (a
// builtin, or an operator or construct spelled with its own key).
var checked = map[string]checkedFunc{
	// Builtins that build strings.
	"string":     checkedString,
	"upper":      caseChange("upper", unicode.ToUpper),
	"lower":      caseChange("lower", unicode.ToLower),
	"replace":    checkedReplace,
	"repeat":     checkedRepeat,
	"join":       checkedJoin,
	"toJSON":     checkedToJSON,
	"toBase64":   checkedToBase64,
	"fromBase64": checkedFromBase64,
	// Builtins that build lists and maps.
	"split":      splitter("split"),
	"splitAfter": splitter("splitAfter"),
	"fromJSON":   checkedFromJSON,
	"keys":       perElement("keys", 64),
	"values":     perElement("values", 64),
	"toPairs":    perElement("toPairs", 96),
	"fromPairs":  perElement("fromPairs", 128),
	"reverse":    perElement("reverse", 16),
	"uniq":       checkedUniq,
	"sort":       perElement("sort", 16),
	"concat":     checkedConcat,
	"flatten":    perLeaf("flatten", 32),
	"median":     perLeaf("median", 16),
	// Operators and constructs.
	opAdd:     checkedAdd,
	opRange:   checkedRange,
	opMatches: checkedMatches,
	opLoop:    checkedLoop,
	opLiteral: checkedLiteral,
	opResult:  checkedResult,
}

// Keys of checked for what is not a builtin (they are no identifiers, so
// no builtin can have their name).
const (
	opAdd     = "+"       // a + b: string concatenation
	opRange   = ".."      // a..b
	opMatches = "matches" // a matches b with a pattern computed at run time
	opLoop    = "loop"    // the list a predicate builtin (map, filter, all, reduce, …) iterates
	opLiteral = "literal" // an array or map literal inside a loop
	opResult  = "result"  // what a method call returns
)

// functions adapts the checked functions to expr-lang: name → function.
var functions = func() map[string]func(...any) (any, error) {
	m := make(map[string]func(...any) (any, error), len(checked))
	for name, fn := range checked {
		m[checkedPrefix+name] = func(args ...any) (any, error) {
			if len(args) > 0 {
				if env, ok := args[0].(map[string]any); ok {
					if b, ok := env[budgetKey].(*budget); ok {
						return fn(b, args[1:])
					}
				}
			}
			return nil, errNoBudget
		}
	}
	return m
}()

// original calls expr-lang's own builtin.
func original(name string, args []any) (any, error) {
	f := builtin.Builtins[builtin.Index[name]]
	switch {
	case f.Func != nil:
		return f.Func(args...)
	case f.Safe != nil:
		v, _, err := f.Safe(args...)
		return v, err
	case f.Fast != nil:
		if len(args) != 1 {
			return nil, fmt.Errorf("%s: wants 1 argument, got %d", name, len(args))
		}
		return f.Fast(args[0]), nil
	}
	return nil, fmt.Errorf("%s: not callable", name)
}

func wantArgs(name string, args []any, min, max int) error {
	if len(args) < min || len(args) > max {
		if min == max {
			return fmt.Errorf("%s: wants %d arguments, got %d", name, min, len(args))
		}
		return fmt.Errorf("%s: wants %d to %d arguments, got %d", name, min, max, len(args))
	}
	return nil
}

func str(name string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: wants a string, got %T", name, v)
	}
	return s, nil
}

// length is the number of elements of a list, map or string (0 for
// anything else).
func length(v any) int64 {
	switch x := v.(type) {
	case []any:
		return int64(len(x))
	case string:
		return int64(len(x))
	case map[string]any:
		return int64(len(x))
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map, reflect.String:
		return int64(rv.Len())
	}
	return 0
}

func checkedString(b *budget, args []any) (any, error) {
	if err := wantArgs("string", args, 1, 1); err != nil {
		return nil, err
	}
	n, ok := textSize(args[0], b.remaining(), false)
	if !ok {
		return nil, &BudgetError{Limit: b.limit, What: "string()"}
	}
	if err := b.charge("string()", n); err != nil {
		return nil, err
	}
	return original("string", args)
}

func caseChange(name string, to func(rune) rune) checkedFunc {
	return func(b *budget, args []any) (any, error) {
		if err := wantArgs(name, args, 1, 1); err != nil {
			return nil, err
		}
		s, err := str(name, args[0])
		if err != nil {
			return nil, err
		}
		var n int64
		for _, r := range s {
			n += int64(utf8.RuneLen(to(r)))
		}
		if err := b.charge(name+"()", n); err != nil {
			return nil, err
		}
		return original(name, args)
	}
}

// pieces is how many parts strings.Split(s, sep) or SplitN(s, sep, n) makes.
func pieces(s, sep string, n int) int64 {
	var m int64
	if sep == "" {
		m = int64(utf8.RuneCountInString(s))
	} else {
		m = int64(strings.Count(s, sep)) + 1
	}
	if n >= 0 && int64(n) < m {
		m = int64(n)
	}
	return m
}

func splitter(name string) checkedFunc {
	return func(b *budget, args []any) (any, error) {
		if err := wantArgs(name, args, 2, 3); err != nil {
			return nil, err
		}
		s, err := str(name, args[0])
		if err != nil {
			return nil, err
		}
		sep, err := str(name, args[1])
		if err != nil {
			return nil, err
		}
		n := -1
		if len(args) == 3 {
			n = runtime.ToInt(args[2])
		}
		if err := b.charge(name+"()", mul(pieces(s, sep, n), 16)); err != nil {
			return nil, err
		}
		return original(name, args)
	}
}

func checkedReplace(b *budget, args []any) (any, error) {
	if err := wantArgs("replace", args, 3, 4); err != nil {
		return nil, err
	}
	var ss [3]string
	for i := range ss {
		s, err := str("replace", args[i])
		if err != nil {
			return nil, err
		}
		ss[i] = s
	}
	s, old, repl := ss[0], ss[1], ss[2]
	n := -1
	if len(args) == 4 {
		n = runtime.ToInt(args[3])
	}
	var m int64
	if old == "" {
		m = int64(utf8.RuneCountInString(s)) + 1
	} else {
		m = int64(strings.Count(s, old))
	}
	if n >= 0 && int64(n) < m {
		m = int64(n)
	}
	size := add(int64(len(s)), mul(m, int64(max(len(repl)-len(old), 0))))
	if err := b.charge("replace()", size); err != nil {
		return nil, err
	}
	return original("replace", args)
}

func checkedRepeat(b *budget, args []any) (any, error) {
	if err := wantArgs("repeat", args, 2, 2); err != nil {
		return nil, err
	}
	s, err := str("repeat", args[0])
	if err != nil {
		return nil, err
	}
	n := runtime.ToInt(args[1])
	if n < 0 {
		return nil, fmt.Errorf("repeat: the count must not be negative, got %d", n)
	}
	if err := b.charge("repeat()", mul(int64(len(s)), int64(n))); err != nil {
		return nil, err
	}
	return strings.Repeat(s, n), nil
}

func checkedJoin(b *budget, args []any) (any, error) {
	if err := wantArgs("join", args, 1, 2); err != nil {
		return nil, err
	}
	glue := ""
	if len(args) == 2 {
		g, err := str("join", args[1])
		if err != nil {
			return nil, err
		}
		glue = g
	}
	var parts []string
	switch x := args[0].(type) {
	case []string:
		parts = x
	case []any:
		if err := b.charge("join()", mul(int64(len(x)), 16)); err != nil {
			return nil, err
		}
		parts = make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("join: element %d is %T, not a string", i, e)
			}
			parts[i] = s
		}
	default:
		return nil, fmt.Errorf("join: wants a list of strings, got %T", args[0])
	}
	var size int64
	for _, p := range parts {
		size = add(size, int64(len(p)))
	}
	if len(parts) > 1 {
		size = add(size, mul(int64(len(parts)-1), int64(len(glue))))
	}
	if err := b.charge("join()", size); err != nil {
		return nil, err
	}
	return strings.Join(parts, glue), nil
}

func checkedToJSON(b *budget, args []any) (any, error) {
	if err := wantArgs("toJSON", args, 1, 1); err != nil {
		return nil, err
	}
	// json.MarshalIndent writes compact JSON, indents it into a second
	// buffer, and the string copies it once more.
	n, ok := textSize(args[0], b.remaining()/3, true)
	if !ok {
		return nil, &BudgetError{Limit: b.limit, What: "toJSON()"}
	}
	if err := b.charge("toJSON()", mul(n, 3)); err != nil {
		return nil, err
	}
	return original("toJSON", args)
}

func checkedFromJSON(b *budget, args []any) (any, error) {
	if err := wantArgs("fromJSON", args, 1, 1); err != nil {
		return nil, err
	}
	s, err := str("fromJSON", args[0])
	if err != nil {
		return nil, err
	}
	// The bytes are copied once, and every value decoded takes a slot of
	// a list or map with its boxed value: count the structural characters
	// outside strings.
	size := 2 * int64(len(s))
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ',' || c == '[' || c == '{' || c == ':'):
			size += 64
		}
	}
	if err := b.charge("fromJSON()", size); err != nil {
		return nil, err
	}
	return original("fromJSON", args)
}

func checkedToBase64(b *budget, args []any) (any, error) {
	if err := wantArgs("toBase64", args, 1, 1); err != nil {
		return nil, err
	}
	s, err := str("toBase64", args[0])
	if err != nil {
		return nil, err
	}
	n := int64(len(s))
	if err := b.charge("toBase64()", add(n, mul((n+2)/3*4, 2))); err != nil {
		return nil, err
	}
	return original("toBase64", args)
}

func checkedFromBase64(b *budget, args []any) (any, error) {
	if err := wantArgs("fromBase64", args, 1, 1); err != nil {
		return nil, err
	}
	s, err := str("fromBase64", args[0])
	if err != nil {
		return nil, err
	}
	n := int64(len(s))
	if err := b.charge("fromBase64()", add(n, mul(n/4*3+3, 2))); err != nil {
		return nil, err
	}
	return original("fromBase64", args)
}

// perElement charges per bytes for each element of the first argument,
// then calls the builtin.
func perElement(name string, per int64) checkedFunc {
	return func(b *budget, args []any) (any, error) {
		if len(args) == 0 {
			return nil, fmt.Errorf("%s: wants an argument", name)
		}
		if err := b.charge(name+"()", mul(length(args[0]), per)); err != nil {
			return nil, err
		}
		return original(name, args)
	}
}

// perLeaf charges per bytes for each value nested lists hold (lists
// unfolded), then calls the builtin.
func perLeaf(name string, per int64) checkedFunc {
	return func(b *budget, args []any) (any, error) {
		n, ok := leafCount(args, b.remaining()/per)
		if !ok {
			return nil, &BudgetError{Limit: b.limit, What: name + "()"}
		}
		if err := b.charge(name+"()", mul(n, per)); err != nil {
			return nil, err
		}
		return original(name, args)
	}
}

func checkedConcat(b *budget, args []any) (any, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("concat: wants at least 1 argument")
	}
	var total int64
	for _, a := range args {
		k := reflect.ValueOf(a).Kind()
		if k != reflect.Slice && k != reflect.Array {
			return nil, fmt.Errorf("concat: cannot concat %T", a)
		}
		total = add(total, length(a))
	}
	if err := b.charge("concat()", mul(total, 16)); err != nil {
		return nil, err
	}
	out := make([]any, 0, total)
	for _, a := range args {
		rv := reflect.ValueOf(a)
		for i := 0; i < rv.Len(); i++ {
			out = append(out, rv.Index(i).Interface())
		}
	}
	return out, nil
}

// checkedAdd is the + operator: strings are charged their joined size.
func checkedAdd(b *budget, args []any) (any, error) {
	if err := wantArgs("+", args, 2, 2); err != nil {
		return nil, err
	}
	if x, ok := args[0].(string); ok {
		if y, ok := args[1].(string); ok {
			if err := b.charge("+", add(int64(len(x)), int64(len(y)))); err != nil {
				return nil, err
			}
			return x + y, nil
		}
	}
	return runtime.Add(args[0], args[1]), nil
}

// checkedRange is a..b: a list of ints.
func checkedRange(b *budget, args []any) (any, error) {
	if err := wantArgs("..", args, 2, 2); err != nil {
		return nil, err
	}
	lo, hi := runtime.ToInt(args[0]), runtime.ToInt(args[1])
	if hi >= lo {
		n := int64(hi) - int64(lo) + 1
		if n <= 0 { // overflow
			return nil, &BudgetError{Limit: b.limit, What: "the range"}
		}
		if err := b.charge("the range", mul(n, 8)); err != nil {
			return nil, err
		}
	}
	return runtime.MakeRange(lo, hi), nil
}

// checkedMatches is a matches b with a pattern computed at run time: the
// compiled pattern takes memory in proportion to its size.
func checkedMatches(b *budget, args []any) (any, error) {
	if err := wantArgs("matches", args, 2, 2); err != nil {
		return nil, err
	}
	if runtime.IsNil(args[0]) || runtime.IsNil(args[1]) {
		return false, nil
	}
	pattern, err := str("matches", args[1])
	if err != nil {
		return nil, err
	}
	if err := b.charge("matches", mul(int64(len(pattern)), 320)); err != nil {
		return nil, err
	}
	if s, ok := args[0].(string); ok {
		return regexp.MatchString(pattern, s)
	}
	bs, ok := args[0].([]byte)
	if !ok {
		return nil, fmt.Errorf("matches: wants a string, got %T", args[0])
	}
	return regexp.Match(pattern, bs)
}

// checkedLoop charges a loop about to iterate a list, for all its elements:
// the bytes its result takes per element, and the steps its predicate
// takes per element (its size). It returns the list.
func checkedLoop(b *budget, args []any) (any, error) {
	if err := wantArgs("loop", args, 3, 3); err != nil {
		return nil, err
	}
	n := length(args[0])
	if err := b.charge("the loop's result", mul(n, int64(runtime.ToInt(args[1])))); err != nil {
		return nil, err
	}
	if err := b.step(mul(n, int64(runtime.ToInt(args[2])))); err != nil {
		return nil, err
	}
	return args[0], nil
}

// checkedLiteral charges an array or map literal built inside a loop (each
// literal is small, but a loop builds it once per element).
func checkedLiteral(b *budget, args []any) (any, error) {
	if err := wantArgs("literal", args, 1, 1); err != nil {
		return nil, err
	}
	per := int64(16)
	if reflect.ValueOf(args[0]).Kind() == reflect.Map {
		per = 64
	}
	if err := b.charge("a literal", add(mul(length(args[0]), per), 32)); err != nil {
		return nil, err
	}
	return args[0], nil
}

// checkedResult charges what a method call returned (its size is not
// known before; it is bounded by its arguments, which were charged).
func checkedResult(b *budget, args []any) (any, error) {
	if err := wantArgs("result", args, 1, 1); err != nil {
		return nil, err
	}
	n, ok := textSize(args[0], b.remaining(), false)
	if !ok {
		return nil, &BudgetError{Limit: b.limit, What: "a method's result"}
	}
	// It was built in a buffer of its own, then copied.
	if err := b.charge("a method's result", mul(n, 2)); err != nil {
		return nil, err
	}
	return args[0], nil
}

// checkedUniq is uniq in linear time for scalars (expr-lang's compares
// every element with every one kept: quadratic): numbers, strings, bools
// and nil are found in a set by a key that is equal when expr-lang's ==
// holds (1 and 1.0 are equal; an integer a float64 cannot hold exactly
// equals only itself); other values (lists, maps) are compared with ==
// against the other non-scalars kept.
func checkedUniq(b *budget, args []any) (any, error) {
	if err := wantArgs("uniq", args, 1, 1); err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(args[0])
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, fmt.Errorf("uniq: cannot uniq %T", args[0])
	}
	n := rv.Len()
	if err := b.charge("uniq()", mul(int64(n), 64)); err != nil {
		return nil, err
	}
	type key struct {
		kind byte // 'n' number, 'i' int not exact as a float, 's' string, 'b' bool, '0' nil
		f    float64
		i    int64
		s    string
	}
	seen := make(map[key]bool, n)
	var others []any
	out := []any{}
	for i := 0; i < n; i++ {
		v := rv.Index(i).Interface()
		var k key
		switch x := v.(type) {
		case nil:
			k = key{kind: '0'}
		case bool:
			k = key{kind: 'b'}
			if x {
				k.i = 1
			}
		case string:
			k = key{kind: 's', s: x}
		case float64:
			k = key{kind: 'n', f: x}
		case float32:
			k = key{kind: 'n', f: float64(x)}
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			k.kind, k.f, k.i = intKey(reflect.ValueOf(x))
		default:
			if slices.ContainsFunc(others, func(o any) bool { return runtime.Equal(o, v) }) {
				continue
			}
			others = append(others, v)
			out = append(out, v)
			continue
		}
		if k.kind == 'n' && k.f != k.f { // NaN equals nothing, itself included
			out = append(out, v)
			continue
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, v)
	}
	return out, nil
}

// intKey is the uniq key of an integer: its float64 when that holds it
// exactly (so that it equals the same float), else the integer itself.
func intKey(rv reflect.Value) (kind byte, f float64, i int64) {
	if rv.CanUint() {
		u := rv.Uint()
		if u > math.MaxInt64 {
			return 'u', float64(u), int64(u - math.MaxInt64 - 1)
		}
		i = int64(u)
	} else {
		i = rv.Int()
	}
	f = float64(i)
	if f >= -(1<<63) && f < 1<<63 && int64(f) == i {
		return 'n', f, 0
	}
	return 'i', 0, i
}

package workflow

import (
	"fmt"
	"math"
	"regexp"
	"sync"
	"unicode/utf8"
)

// patterns caches compiled patterns: the same few patterns are checked
// again and again (every answer, every validation of a workflow). The cache
// is bounded because patterns may come from untrusted workflows.
var patterns = struct {
	sync.Mutex
	m map[string]patternResult
}{m: map[string]patternResult{}}

type patternResult struct {
	re  *regexp.Regexp
	err error
}

const maxCachedPatterns = 1024

// compilePattern compiles an RE2 pattern, once per distinct pattern.
func compilePattern(p string) (*regexp.Regexp, error) {
	patterns.Lock()
	r, ok := patterns.m[p]
	patterns.Unlock()
	if ok {
		return r.re, r.err
	}
	re, err := regexp.Compile(p)
	patterns.Lock()
	if len(patterns.m) >= maxCachedPatterns {
		clear(patterns.m)
	}
	patterns.m[p] = patternResult{re, err}
	patterns.Unlock()
	return re, err
}

// CheckInput reports the ways a value breaks an input's declaration (type,
// enum, pattern, bounds, lengths), or nil when it satisfies it.
func CheckInput(in *Input, v any) []string {
	var probs []string
	if !hasType(v, in.Type) {
		return []string{fmt.Sprintf("must be %s, not %s", article([]string{in.Type}), typeName(v))}
	}
	if len(in.Enum) > 0 && !containsValue(in.Enum, v) {
		probs = append(probs, fmt.Sprintf("must be one of %s", listValues(in.Enum)))
	}
	if s, ok := v.(string); ok {
		if in.Pattern != "" {
			if re, err := compilePattern(in.Pattern); err == nil && !re.MatchString(s) {
				probs = append(probs, fmt.Sprintf("must match the pattern %s", in.Pattern))
			}
		}
		probs = append(probs, lengthProblems(utf8.RuneCountInString(s), in.MinLength, in.MaxLength, "characters")...)
	}
	if l, ok := v.([]any); ok {
		probs = append(probs, lengthProblems(len(l), in.MinLength, in.MaxLength, "items")...)
	}
	if f, ok := number(v); ok {
		if in.Minimum != nil && f < *in.Minimum {
			probs = append(probs, fmt.Sprintf("must be at least %v", *in.Minimum))
		}
		if in.Maximum != nil && f > *in.Maximum {
			probs = append(probs, fmt.Sprintf("must be at most %v", *in.Maximum))
		}
	}
	return probs
}

// CheckAnswer reports the ways a value fails to answer a question (type,
// choices, pattern, min/max), or nil when it is a valid answer. Computed
// choices (choices: ${{ … }}) must be resolved by the caller into list.
func CheckAnswer(q *Ask, list []Choice, v any) []string {
	typ := q.QuestionType()
	switch typ {
	case "choice":
		if !choiceAllowed(list, v) {
			return []string{fmt.Sprintf("must be one of %s", listChoices(list))}
		}
		return nil
	case "multi-choice":
		picks, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("must be a list of choices, not %s", typeName(v))}
		}
		var probs []string
		for _, p := range picks {
			if !choiceAllowed(list, p) {
				probs = append(probs, fmt.Sprintf("%v is not one of %s", p, listChoices(list)))
			}
		}
		if q.Min != nil && float64(len(picks)) < *q.Min {
			probs = append(probs, fmt.Sprintf("pick at least %v", *q.Min))
		}
		if q.Max != nil && float64(len(picks)) > *q.Max {
			probs = append(probs, fmt.Sprintf("pick at most %v", *q.Max))
		}
		return probs
	}
	if !hasType(v, typ) {
		return []string{fmt.Sprintf("must be %s, not %s", article([]string{typ}), typeName(v))}
	}
	var probs []string
	switch x := v.(type) {
	case string:
		if q.Pattern != "" {
			if re, err := compilePattern(q.Pattern); err == nil && !re.MatchString(x) {
				probs = append(probs, fmt.Sprintf("must match the pattern %s", q.Pattern))
			}
		}
		n := float64(utf8.RuneCountInString(x))
		if q.Min != nil && n < *q.Min {
			probs = append(probs, fmt.Sprintf("must be at least %v characters long", *q.Min))
		}
		if q.Max != nil && n > *q.Max {
			probs = append(probs, fmt.Sprintf("must be at most %v characters long", *q.Max))
		}
	default:
		if f, ok := number(v); ok {
			if q.Min != nil && f < *q.Min {
				probs = append(probs, fmt.Sprintf("must be at least %v", *q.Min))
			}
			if q.Max != nil && f > *q.Max {
				probs = append(probs, fmt.Sprintf("must be at most %v", *q.Max))
			}
		}
	}
	return probs
}

func lengthProblems(n int, minLen, maxLen *int, unit string) []string {
	var probs []string
	if minLen != nil && n < *minLen {
		probs = append(probs, fmt.Sprintf("must have at least %d %s", *minLen, unit))
	}
	if maxLen != nil && n > *maxLen {
		probs = append(probs, fmt.Sprintf("must have at most %d %s", *maxLen, unit))
	}
	return probs
}

// hasType reports whether v is of a language type (string, integer,
// number, boolean, object, array).
func hasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "integer":
		switch x := v.(type) {
		case int, int64:
			return true
		case float64:
			return x == math.Trunc(x) && !math.IsInf(x, 0)
		}
		return false
	case "number":
		_, ok := number(v)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64:
		return "an integer"
	case float64:
		if x == math.Trunc(x) {
			return "an integer"
		}
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// sameValue compares plain values, treating equal numbers of different Go
// types as equal.
func sameValue(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	switch x := a.(type) {
	case string, bool, nil:
		return a == b
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			if !sameValue(e, y[k]) {
				return false
			}
		}
		return true
	}
	return false
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if sameValue(e, v) {
			return true
		}
	}
	return false
}

func choiceAllowed(list []Choice, v any) bool {
	for _, c := range list {
		if sameValue(c.Value, v) {
			return true
		}
	}
	return false
}

func listValues(list []any) string {
	s := ""
	for i, e := range list {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(e)
	}
	return s
}

func listChoices(list []Choice) string {
	vals := make([]any, len(list))
	for i, c := range list {
		vals[i] = c.Value
	}
	return listValues(vals)
}

package action

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"stepwise.dev/stepwise/internal/workflow"
)

// Readers of a rendered `with`. The registry has validated the input
// against the action's schema before Run, so these only convert; they
// still refuse wrong types, for callers that skip the registry.

// stringIn returns input[key] as a string, or def when it is absent.
func stringIn(action string, in map[string]any, key, def string) (string, error) {
	v, ok := in[key]
	if !ok || v == nil {
		return def, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", inputError(action, "%s must be a string, not %T", key, v)
	}
	return s, nil
}

// boolIn returns input[key] as a boolean, or false when it is absent.
func boolIn(action string, in map[string]any, key string) (bool, error) {
	v, ok := in[key]
	if !ok || v == nil {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, inputError(action, "%s must be true or false, not %T", key, v)
	}
	return b, nil
}

// intIn returns input[key] as a whole number of at least min, or def when
// it is absent. Expressions yield int, int64 or float64.
func intIn(action string, in map[string]any, key string, def, min int64) (int64, error) {
	v, ok := in[key]
	if !ok || v == nil {
		return def, nil
	}
	n, ok := wholeNumber(v)
	if !ok {
		return 0, inputError(action, "%s must be a whole number, not %v", key, v)
	}
	if n < min {
		return 0, inputError(action, "%s must be at least %d, not %d", key, min, n)
	}
	return n, nil
}

func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// durationIn returns input[key] parsed as a duration (the language's
// syntax), or def when it is absent.
func durationIn(action string, in map[string]any, key string, def time.Duration) (time.Duration, error) {
	s, err := stringIn(action, in, key, "")
	if err != nil || s == "" {
		return def, err
	}
	d, err := workflow.ParseDuration(s)
	if err != nil {
		return 0, inputError(action, "%s: %v", key, err)
	}
	if d <= 0 {
		return 0, inputError(action, "%s must be positive", key)
	}
	return d, nil
}

// scalarText spells a string, number or boolean as text: an argument or
// environment value that a template rendered as a number stays usable.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		return strconv.FormatBool(x), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	}
	return "", false
}

// textList returns input[key] as a list of texts (scalars spelled out).
func textList(action string, in map[string]any, key string) ([]string, error) {
	v, ok := in[key]
	if !ok || v == nil {
		return nil, nil
	}
	var items []any
	switch x := v.(type) {
	case []any:
		items = x
	case []string:
		return x, nil
	default:
		return nil, inputError(action, "%s must be a list, not %T", key, v)
	}
	out := make([]string, len(items))
	for i, item := range items {
		s, ok := scalarText(item)
		if !ok {
			return nil, inputError(action, "%s[%d] must be a string, number or boolean, not %s", key, i, describeValue(item))
		}
		out[i] = s
	}
	return out, nil
}

func describeValue(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T", v)
}

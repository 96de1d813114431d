package workflow

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// ParseText reads a value of an input or question type from text (an
// environment variable, a --input flag, a terminal answer): integers,
// numbers and booleans are parsed, multi-choice answers are a JSON list or
// comma-separated, objects and arrays are JSON, anything else stays text.
func ParseText(s, typ string) (any, error) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return f, nil
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "y", "1", "on":
			return true, nil
		case "false", "no", "n", "0", "off":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a boolean (use true or false)", s)
	case "multi-choice":
		var list []any
		if json.Unmarshal([]byte(s), &list) == nil {
			return list, nil
		}
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
		return list, nil
	case "object", "array":
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("%q is not JSON", s)
		}
		return plainNumbers(v), nil
	}
	return s, nil
}

// PlainData converts a decoded value (from YAML, or Go values) into the
// JSON data model: maps with string keys, []any, strings, booleans, nil,
// and numbers as int64 (integers) or float64.
func PlainData(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var out any
	if d.Decode(&out) != nil {
		return v
	}
	return plainNumbers(out)
}

// plainNumbers turns json.Number into int64 or float64.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	}
	return v
}

package workflow

import (
	"encoding/json"
	"fmt"
	"math"
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
		return Normalize(v), nil
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
	return Normalize(out)
}

// Normalize brings a value decoded from JSON (with or without UseNumber)
// or built in Go into the data model at every depth: json.Number and Go
// integer and float types become int64 (an integer that fits) or float64,
// []T becomes []any and map[string]T map[string]any. Maps and lists that
// hold nothing to change are returned as they are; the others are copied,
// so a caller's value is never modified. Values of other Go types go
// through JSON.
func Normalize(v any) any {
	out, _ := normalize(v)
	return out
}

// normalize is Normalize that also reports whether v changed.
func normalize(v any) (any, bool) {
	switch x := v.(type) {
	case nil, string, bool, int64, float64:
		return v, false
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, true
		}
		if f, err := x.Float64(); err == nil {
			return f, true
		}
		return x.String(), true
	case int:
		return int64(x), true
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint:
		return unsigned(uint64(x)), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint64:
		return unsigned(x), true
	case float32:
		return float64(x), true
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			n, changed := normalize(e)
			if !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			out[k] = n
		}
		if out == nil {
			return x, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			n, changed := normalize(e)
			if !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), x...)
			}
			out[i] = n
		}
		if out == nil {
			return x, false
		}
		return out, true
	}
	// Other Go values (structs, typed maps and slices): through JSON.
	b, err := json.Marshal(v)
	if err != nil {
		return v, false
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var out any
	if d.Decode(&out) != nil {
		return v, false
	}
	n, _ := normalize(out)
	return n, true
}

// unsigned is a uint64 in the data model: int64 when it fits.
func unsigned(u uint64) any {
	if u <= math.MaxInt64 {
		return int64(u)
	}
	return float64(u)
}

package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
)

// The validator reads the JSON data model: nil, bool, string, numbers,
// []any and map[string]any. Numbers may be any Go integer or float type or
// json.Number, as decoders and expressions produce them.

// jsonType is the JSON Schema type name of v ("integer" for a number
// without a fractional part), or "" when v is not JSON data.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case float32:
		return jsonType(widen(x))
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return ""
		}
		if r.IsInt() {
			return "integer"
		}
		return "number"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	}
	return ""
}

// typeName is how a message names v's type: "number" for any number.
func typeName(v any) string {
	t := jsonType(v)
	switch t {
	case "integer":
		return "number"
	case "":
		return fmt.Sprintf("%T", v)
	}
	return t
}

// hasType reports whether v is of the JSON Schema type t.
func hasType(v any, t string) bool {
	got := jsonType(v)
	return got == t || (t == "number" && got == "integer")
}

// rat is a number as an exact rational, or nil when v is not a number.
func rat(v any) *big.Rat {
	switch x := v.(type) {
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil
		}
		// Through the shortest decimal that reads back as x, so that 0.3
		// is 3/10 (a multiple of 0.1), as the number was written.
		r, _ := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
		return r
	case float32:
		return rat(widen(x))
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return nil
		}
		return r
	case int:
		return new(big.Rat).SetInt64(int64(x))
	case int8:
		return new(big.Rat).SetInt64(int64(x))
	case int16:
		return new(big.Rat).SetInt64(int64(x))
	case int32:
		return new(big.Rat).SetInt64(int64(x))
	case int64:
		return new(big.Rat).SetInt64(x)
	case uint:
		return new(big.Rat).SetUint64(uint64(x))
	case uint8:
		return new(big.Rat).SetUint64(uint64(x))
	case uint16:
		return new(big.Rat).SetUint64(uint64(x))
	case uint32:
		return new(big.Rat).SetUint64(uint64(x))
	case uint64:
		return new(big.Rat).SetUint64(x)
	}
	return nil
}

// widen is a float32 as the float64 of its shortest decimal: float32(0.1)
// is 0.1 as written, not 0.100000001490116…, which float64(x) gives and
// which is neither a multiple of 0.1 nor at most 0.1.
func widen(x float32) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return f
}

// float is a number as a float64 and whether v is a number that a float64
// holds exactly enough for comparisons (every number but huge json.Number
// integers, which go through rat).
func float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		if x > -(1<<53) && x < 1<<53 {
			return float64(x), true
		}
	case json.Number:
		if f, err := strconv.ParseFloat(string(x), 64); err == nil && math.Abs(f) < 1<<53 && f == math.Trunc(f) {
			return f, true
		}
	case float32:
		return widen(x), true
	case int32:
		return float64(x), true
	}
	return 0, false
}

// compare returns -1, 0 or +1 as number a is less than, equal to or greater
// than the limit b (a float64 from the schema, or the rational beside it).
func compare(a any, b limit) int {
	if f, ok := float(a); ok && b.exact {
		switch {
		case f < b.f:
			return -1
		case f > b.f:
			return 1
		}
		return 0
	}
	r := rat(a)
	if r == nil {
		return 0
	}
	return r.Cmp(b.r)
}

// limit is a numeric bound of a schema.
type limit struct {
	f     float64
	r     *big.Rat
	exact bool // f is exactly r
	text  string
}

// newLimit reads a schema's number; ok is false when v is not a number.
func newLimit(v any) (limit, bool) {
	r := rat(v)
	if r == nil {
		return limit{}, false
	}
	f, exact := r.Float64()
	return limit{f: f, r: r, exact: exact, text: numberText(v)}, true
}

// numberText renders a number as JSON does.
func numberText(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(v)
}

// equal is JSON equality: numbers by value, objects by their members,
// arrays item by item.
func equal(a, b any) bool {
	ta, tb := jsonType(a), jsonType(b)
	if ta == "integer" {
		ta = "number"
	}
	if tb == "integer" {
		tb = "number"
	}
	if ta != tb {
		return false
	}
	switch ta {
	case "null":
		return true
	case "boolean":
		return a.(bool) == b.(bool)
	case "string":
		return a.(string) == b.(string)
	case "number":
		fa, oka := float(a)
		fb, okb := float(b)
		if oka && okb {
			return fa == fb
		}
		ra, rb := rat(a), rat(b)
		return ra != nil && rb != nil && ra.Cmp(rb) == 0
	case "array":
		xa, xb := a.([]any), b.([]any)
		return slices.EqualFunc(xa, xb, equal)
	case "object":
		ma, mb := a.(map[string]any), b.(map[string]any)
		if len(ma) != len(mb) {
			return false
		}
		for k, va := range ma {
			vb, ok := mb[k]
			if !ok || !equal(va, vb) {
				return false
			}
		}
		return true
	}
	return false
}

// render is a value in a message: JSON, shortened.
func render(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(data)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

package expr

import (
	"encoding/json"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"
)

// sizer estimates, without allocating, how many bytes a value takes once
// written out (as JSON, compact or indented, or with fmt's %v: the
// estimate is at least each of them) or copied into the JSON data model.
// Values built by an expression may share parts ([a, a, a]), so a value's
// written size can be exponential in the memory it holds: the walk stops as
// soon as the estimate passes limit, which also bounds its time.
type sizer struct {
	limit  int64
	n      int64
	indent bool // count toJSON's indentation
	copies bool // count the copies normalize makes of maps and lists that are not the JSON data model's
}

// over reports whether the estimate passed the limit.
func (s *sizer) over() bool { return s.n > s.limit }

func (s *sizer) addN(n int64) { s.n = add(s.n, n) }

// textSize is the estimated written size of v, and whether it stays
// within limit.
func textSize(v any, limit int64, indent bool) (int64, bool) {
	s := sizer{limit: limit, indent: indent}
	s.walk(v, 0)
	return s.n, !s.over()
}

// newline is the cost of starting an element at depth when indenting.
func (s *sizer) newline(depth int) {
	if s.indent {
		s.addN(1 + 2*int64(depth+1))
	}
}

func (s *sizer) walk(v any, depth int) {
	if s.over() {
		return
	}
	switch x := v.(type) {
	case nil:
		s.addN(5) // <nil>
	case bool:
		s.addN(5)
	case string:
		s.addN(quotedSize(x))
	case int:
		s.addN(int64(len(strconv.Itoa(x))))
	case int64:
		s.addN(20)
	case float64:
		s.addN(24)
	case json.Number:
		s.addN(int64(len(x)))
	case time.Time:
		s.addN(64)
	case time.Duration:
		s.addN(32)
	case *time.Location:
		s.addN(int64(len(x.String())) + 2)
	case []byte:
		s.addN(int64(len(x))*4/3 + 4)
	case []any:
		s.addN(2) // normalize rewrites []any in place: no copy
		for _, e := range x {
			s.newline(depth)
			s.addN(1)
			s.walk(e, depth+1)
			if s.over() {
				return
			}
		}
	case map[string]any:
		s.addN(5)
		for k, e := range x {
			s.newline(depth)
			s.addN(quotedSize(k) + 2)
			s.walk(e, depth+1)
			if s.over() {
				return
			}
		}
	default:
		s.reflectWalk(reflect.ValueOf(v), depth)
	}
}

func (s *sizer) reflectWalk(rv reflect.Value, depth int) {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			s.addN(5)
			return
		}
		s.walk(rv.Elem().Interface(), depth)
	case reflect.Slice, reflect.Array:
		n := rv.Len()
		s.addN(2)
		if s.copies {
			s.addN(mul(int64(n), 16))
		}
		for i := 0; i < n && !s.over(); i++ {
			s.newline(depth)
			s.addN(1)
			s.walk(rv.Index(i).Interface(), depth+1)
		}
	case reflect.Map:
		s.addN(5)
		if s.copies {
			s.addN(mul(int64(rv.Len()), 64))
		}
		it := rv.MapRange()
		for it.Next() && !s.over() {
			s.newline(depth)
			s.addN(2)
			s.walk(it.Key().Interface(), depth+1)
			s.walk(it.Value().Interface(), depth+1)
		}
	case reflect.String:
		s.addN(quotedSize(rv.String()))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Bool, reflect.Complex64, reflect.Complex128:
		s.addN(48)
	case reflect.Struct:
		s.addN(64)
		for i := 0; i < rv.NumField() && !s.over(); i++ {
			s.newline(depth)
			s.addN(int64(len(rv.Type().Field(i).Name)) + 4)
			if rv.Type().Field(i).IsExported() {
				s.walk(rv.Field(i).Interface(), depth+1)
			} else {
				s.addN(48)
			}
		}
	default:
		s.addN(64)
	}
}

// quotedSize is the size of s as a JSON string, at least its size with
// %v: quotes, escapes (json.Marshal writes <, > and & as \u003c…, and
// invalid UTF-8 as \ufffd).
func quotedSize(s string) int64 {
	n := int64(2)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && w == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += int64(w)
		}
		i += w
	}
	return n
}

// leafCount counts the values flatten and median reach in v (nested lists
// unfolded), stopping once it passes limit.
func leafCount(v any, limit int64) (int64, bool) {
	var n int64
	var walk func(rv reflect.Value)
	walk = func(rv reflect.Value) {
		for rv.Kind() == reflect.Interface || rv.Kind() == reflect.Pointer {
			if rv.IsNil() {
				break
			}
			rv = rv.Elem()
		}
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			n++
			return
		}
		for i := 0; i < rv.Len() && n <= limit; i++ {
			walk(rv.Index(i))
		}
	}
	walk(reflect.ValueOf(v))
	return n, n <= limit
}

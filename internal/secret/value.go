package secret

import (
	"maps"
	"slices"
	"strconv"
)

// MaskValue returns a deep copy of the JSON-like value v with every string
// masked: strings, the elements of []any and []string, and both the keys and
// the values of map[string]any and map[string]string. Other values (numbers,
// booleans, nil, and any other type) are returned unchanged, so callers must
// normalise richer values to JSON-like ones first. v itself is never modified.
//
// When masking makes two keys of one map equal, the later one in sorted order
// of the original keys gets a "#2", "#3", ... suffix, so no entry is lost and
// the result does not depend on map iteration order.
func (m *Masker) MaskValue(v any) any {
	switch v := v.(type) {
	case string:
		return m.Mask(v)
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = m.MaskValue(e)
		}
		return out
	case []string:
		if v == nil {
			return v
		}
		out := make([]string, len(v))
		for i, e := range v {
			out[i] = m.Mask(e)
		}
		return out
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out[uniqueKey(out, m.Mask(k))] = m.MaskValue(v[k])
		}
		return out
	case map[string]string:
		if v == nil {
			return v
		}
		out := make(map[string]string, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out[uniqueKey(out, m.Mask(k))] = m.Mask(v[k])
		}
		return out
	default:
		return v
	}
}

// uniqueKey returns k, or k with the first "#n" suffix (n >= 2) not in out.
func uniqueKey[V any](out map[string]V, k string) string {
	if _, taken := out[k]; !taken {
		return k
	}
	for n := 2; ; n++ {
		c := k + "#" + strconv.Itoa(n)
		if _, taken := out[c]; !taken {
			return c
		}
	}
}

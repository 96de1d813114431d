package search

import "slices"

// within1 reports whether a and b are at most one edit apart: one rune
// inserted, deleted or substituted, or two adjacent runes swapped (the
// commonest typing slip, which plain Levenshtein counts as two).
func within1(a, b []rune) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b)-len(a) > 1 {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return true // equal, or b has one more rune at the end
	}
	if len(a) < len(b) {
		return slices.Equal(a[i:], b[i+1:]) // one rune inserted in b
	}
	if slices.Equal(a[i+1:], b[i+1:]) {
		return true // one rune substituted
	}
	return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && slices.Equal(a[i+2:], b[i+2:])
}

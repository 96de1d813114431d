package search

import "testing"

func TestWithin1(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"deploy", "deploy", true},
		{"deploy", "deplo", true},   // deletion
		{"deploy", "deploys", true}, // insertion at the end
		{"deploy", "dxploy", true},  // substitution
		{"deploy", "depoly", true},  // transposition
		{"deploy", "edploy", true},  // transposition at the start
		{"deploy", "dploy", true},   // deletion inside
		{"deploy", "delpoy", true},
		{"deploy", "dpelyo", false}, // two edits
		{"deploy", "deplyo", true},
		{"deploy", "deplyox", false},
		{"deploy", "dep", false},
		{"café", "cafe", true},
		{"", "a", true},
		{"", "ab", false},
	} {
		if got := within1([]rune(c.a), []rune(c.b)); got != c.want {
			t.Errorf("within1(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := within1([]rune(c.b), []rune(c.a)); got != c.want {
			t.Errorf("within1(%q, %q) = %v, want %v (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

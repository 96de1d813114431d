package ident

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestRulesMatchTheirPatterns: each rule accepts exactly what its
// pattern matches.
func TestRulesMatchTheirPatterns(t *testing.T) {
	t.Parallel()
	alphabet := []rune("azAZ09_-. /\\é\x00")
	edges := []string{"a", "deploy-prod_2", "9", "-a", "_a", "a.b", "", "A",
		strings.Repeat("a", 64), strings.Repeat("a", 65), "a" + strings.Repeat("9", 63)}
	for name, r := range map[string]Rule{"Library": Library, "Server": Server, "Field": Field} {
		re := regexp.MustCompile(r.Pattern)
		check := func(t interface{ Fatalf(string, ...any) }, s string) {
			if got, want := r.Valid(s), re.MatchString(s); got != want {
				t.Fatalf("%s.Valid(%q) = %v, its pattern says %v", name, s, got, want)
			}
		}
		t.Run(name, func(t *testing.T) {
			for _, s := range edges {
				check(t, s)
			}
			rapid.Check(t, func(t *rapid.T) {
				check(t, string(rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 70).Draw(t, "name")))
			})
		})
	}
}

package workflow

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestIsIdentifierMatchesRule: isIdentifier accepts exactly what its documented
// pattern identifierRule matches.
func TestIsIdentifierMatchesRule(t *testing.T) {
	re := regexp.MustCompile(identifierRule)
	alphabet := []rune("azAZ09_-. /\\é\x00")
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 70).Draw(t, "name"))
		if got, want := isIdentifier(s), re.MatchString(s); got != want {
			t.Fatalf("isIdentifier(%q) = %v, the pattern says %v", s, got, want)
		}
	})
	for _, s := range []string{"a", "deploy-prod_2", "9", "-a", "_a", "a.b", "", strings.Repeat("a", 64), strings.Repeat("a", 65), "a" + strings.Repeat("9", 63)} {
		if got, want := isIdentifier(s), re.MatchString(s); got != want {
			t.Fatalf("isIdentifier(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

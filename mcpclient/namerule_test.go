package mcpclient

import (
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestValidServerNameMatchesRule: validServerName accepts exactly what its documented
// pattern serverNameRule matches.
func TestValidServerNameMatchesRule(t *testing.T) {
	re := regexp.MustCompile(serverNameRule)
	alphabet := []rune("azAZ09_-. /\\é\x00")
	rapid.Check(t, func(t *rapid.T) {
		s := string(rapid.SliceOfN(rapid.SampledFrom(alphabet), 0, 70).Draw(t, "name"))
		if got, want := validServerName(s), re.MatchString(s); got != want {
			t.Fatalf("validServerName(%q) = %v, the pattern says %v", s, got, want)
		}
	})
	for _, s := range []string{"a", "deploy-prod_2", "9", "-a", "_a", "a.b", "", strings.Repeat("a", 64), strings.Repeat("a", 65), "a" + strings.Repeat("9", 63)} {
		if got, want := validServerName(s), re.MatchString(s); got != want {
			t.Fatalf("validServerName(%q) = %v, the pattern says %v", s, got, want)
		}
	}
}

package search

import (
	"slices"
	"testing"
)

func TestTokenize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"backup-db_v2.yaml", []string{"backup", "db", "v2", "yaml"}},
		{"Deploy the API to PROD!", []string{"deploy", "the", "api", "to", "prod"}},
		{"workflows policies tags", []string{"workflow", "policy", "tag"}},
		{"status class analysis dns", []string{"status", "class", "analysis", "dns"}},
		{"Überprüfung café", []string{"überprüfung", "café"}},
		{"  --__..  ", nil},
		{"", nil},
	} {
		if got := Tokenize(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestParseDropsStopWordsUnlessAlone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"how do I back up the database", []string{"back", "up", "database"}},
		{"deploy deploy Deploys", []string{"deploy"}},
		{"do it", []string{"do", "it"}},
		{"  ", nil},
	} {
		q := Parse(c.in)
		if got := q.Terms(); !slices.Equal(got, c.want) {
			t.Errorf("Parse(%q) terms = %q, want %q", c.in, got, c.want)
		}
		if q.Empty() != (len(c.want) == 0) {
			t.Errorf("Parse(%q).Empty() = %v", c.in, q.Empty())
		}
	}
}

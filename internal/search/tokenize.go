package search

import (
	"strings"
	"unicode"
)

// Tokenize splits text into search tokens: lowercase runs of letters and
// digits (so "backup-db_v2.yaml" is backup, db, v2, yaml), each reduced
// to a crude singular. Documents and queries go through the same
// function, so a query matches whatever form the author wrote.
func Tokenize(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for i, f := range fields {
		fields[i] = stem(f)
	}
	return fields
}

// stem folds the commonest English plurals onto their singular
// ("workflows" → "workflow", "policies" → "policy"). It is deliberately
// naive: being wrong the same way on both sides is harmless, and words
// ending in -ss, -us and -is ("class", "status", "analysis") are left
// alone because stripping their s would merge unrelated words.
func stem(t string) string {
	n := len(t)
	switch {
	case n > 4 && strings.HasSuffix(t, "ies"):
		return t[:n-3] + "y"
	case n > 3 && t[n-1] == 's':
		switch t[n-2] {
		case 's', 'u', 'i':
			return t
		}
		return t[:n-1]
	}
	return t
}

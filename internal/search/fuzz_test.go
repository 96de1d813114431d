package search

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// FuzzQuery checks that any text tokenizes, parses and searches without
// panicking, the same way twice, into tokens that are lowercase letters
// and digits.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{"", "deploy", "backup-db_v2.yaml", "how do I back up the database", "ÉTÉ ß ǅ", "\xff\xfe", "a--b..c__d", "ies sss", "deplyo databse"} {
		f.Add(s)
	}
	ix := New(sampleDocs())
	f.Fuzz(func(t *testing.T, text string) {
		tokens := Tokenize(text)
		if again := Tokenize(text); !reflect.DeepEqual(tokens, again) {
			t.Fatalf("Tokenize(%q) differs between calls: %q, %q", text, tokens, again)
		}
		for _, tok := range tokens {
			if tok == "" {
				t.Fatalf("Tokenize(%q) made an empty token", text)
			}
			for _, r := range tok {
				if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					t.Fatalf("Tokenize(%q) token %q has %q", text, tok, r)
				}
			}
			if again := Tokenize(tok); len(again) != 1 {
				t.Fatalf("token %q of %q re-tokenizes into %q", tok, text, again)
			}
		}
		q := Parse(text)
		if !reflect.DeepEqual(q, Parse(text)) {
			t.Fatalf("Parse(%q) differs between calls", text)
		}
		if q.Empty() != (len(tokens) == 0) {
			t.Fatalf("Parse(%q).Empty() = %v with tokens %q", text, q.Empty(), tokens)
		}
		for _, term := range q.Terms() {
			if strings.ContainsAny(term, " -_.") {
				t.Fatalf("term %q of %q", term, text)
			}
		}
		hits := ix.Search(q, 0)
		if again := ix.Search(q, 0); !reflect.DeepEqual(hits, again) {
			t.Fatalf("Search(%q) differs between calls:\n%v\n%v", text, hits, again)
		}
		for i := 1; i < len(hits); i++ {
			if Less(hits[i], hits[i-1]) {
				t.Fatalf("Search(%q) out of order at %d: %v", text, i, hits)
			}
		}
	})
}

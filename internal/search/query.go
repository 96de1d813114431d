package search

import "strings"

// Query is a parsed query, reusable against several indexes.
type Query struct {
	// terms are the distinct tokens that score, in query order.
	terms []string
	// phrase is every token joined by spaces, stop words included: what
	// a name must read as (name tokens joined the same way) to count as
	// the query's exact name or to start with it.
	phrase string
}

// stopWords are dropped from a query that has other words: "how do I
// back up the database" is about back, up and database. They are
// function words only, never plausible names, written as Tokenize
// leaves them ("does" → "doe", "this" → "thi").
var stopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true,
	"can": true, "do": true, "doe": true, "for": true, "from": true, "how": true, "i": true, "in": true,
	"into": true, "is": true, "it": true, "me": true, "my": true, "of": true, "on": true, "or": true,
	"that": true, "the": true, "thi": true, "to": true, "what": true, "which": true, "with": true,
}

// Parse parses a free-text query. A query without letters or digits is
// empty (Empty): an index then lists everything by name.
func Parse(text string) Query {
	tokens := Tokenize(text)
	q := Query{phrase: strings.Join(tokens, " ")}
	seen := map[string]bool{}
	for _, t := range tokens {
		if !stopWords[t] && !seen[t] {
			seen[t] = true
			q.terms = append(q.terms, t)
		}
	}
	if len(q.terms) == 0 {
		// Only stop words: they are the query then ("do" may be a name).
		for _, t := range tokens {
			if !seen[t] {
				seen[t] = true
				q.terms = append(q.terms, t)
			}
		}
	}
	return q
}

// Empty reports whether the query has no words.
func (q Query) Empty() bool { return len(q.terms) == 0 }

// Terms returns the query's scoring terms.
func (q Query) Terms() []string { return append([]string(nil), q.terms...) }

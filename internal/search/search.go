// Package search ranks documents — actions, library workflows, later
// catalog operations — against a free-text query, for agents that know
// what they want done but not what it is called.
//
// An Index is built once from a list of Documents and is then read-only:
// any number of goroutines may Search it. Scoring uses no corpus
// statistics (no IDF), so the scores of two indexes are comparable and
// their hits can be merged (Merge): the caller keeps one index per source
// and rebuilds only the one whose source changed.
//
// A query term scores in each field it matches, by the field's weight
// (name > title > tags > description) times the quality of the match:
// the same token, a token the term is a prefix of ("deplo"), a token that
// is a prefix of the term ("greeting" finds greet), or — for terms of
// five characters or more — a token one edit away. Terms add up; a document
// that matches every term of a multi-term query gets a bonus, and one
// whose name is the query (or starts with it) a boost. Ties go to the
// name, then the kind, so results are deterministic.
package search

// Document is one thing to find.
type Document struct {
	// Kind says what it is ("action", "workflow"); search does not
	// interpret it beyond breaking ties.
	Kind        string
	Name        string
	Title       string
	Description string
	Tags        []string
}

// Hit is a document that matched a query.
type Hit struct {
	// Doc is the document's position in the list the index was built
	// from.
	Doc   int
	Kind  string
	Name  string
	Score float64
}

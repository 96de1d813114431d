package search

import (
	"math"
	"strings"
	"unicode/utf8"
)

// fieldWeight ranks where a term matched: a word of the name says what
// the thing is, one of the description may be said in passing.
var fieldWeight = [numFields]float64{fieldName: 10, fieldTitle: 6, fieldTags: 4, fieldDescription: 2}

// Match qualities: how much of a field's weight a term earns.
const (
	exact  = 1.0
	prefix = 0.6 // the term starts a token: a word being typed, "deplo"
	// stemOf: a token starts the term — another form of the word that
	// stem does not fold ("greeting" → greet, "deployment" → deploy).
	stemOf = 0.5
	typo   = 0.4 // one edit away: a slip
)

const (
	// exactNameBoost goes to a document whose name is the query: asking
	// for "log" must find the action log first.
	exactNameBoost = 20.0
	// namePrefixBoost goes to a document whose name starts with the
	// query ("backup" → backup-database).
	namePrefixBoost = 6.0
	// allTermsBonus, per term, goes to a document that matches every
	// term of a multi-term query, so that two weak matches ("deploy" and
	// "database" in a description) beat one strong one.
	allTermsBonus = 4.0
	// minTypoRunes: shorter terms have too many neighbours one edit
	// away ("log" ~ "dog", "lot", "leg") for a slip to be guessed.
	minTypoRunes = 5
	// minPrefix: a single letter starts too many words to mean one.
	minPrefix = 2
	// minStem: a token shorter than this starting a term is more often
	// another word ("log" in "login") than a form of it.
	minStem = 4
)

// scratch is one search's working memory, sized for the index and reused
// across searches (sync.Pool) so that a query allocates little.
type scratch struct {
	// best is the best quality of the current term per document and
	// field (doc*numFields + field).
	best []float64
	// inTerm marks the documents the current term reached; termDocs
	// lists them.
	inTerm   []bool
	termDocs []int32
	// score and matched (terms matched) accumulate per document; docs
	// lists every document any term reached.
	score   []float64
	matched []int32
	docs    []int32
}

// Search ranks the documents matching q and returns the best limit of
// them (all when limit <= 0). An empty query matches every document with
// score 0, in name order.
func (ix *Index) Search(q Query, limit int) []Hit {
	if q.Empty() {
		n := len(ix.byName)
		if limit > 0 && limit < n {
			n = limit
		}
		hits := make([]Hit, n)
		for i, d := range ix.byName[:n] {
			hits[i] = Hit{Doc: int(d), Kind: ix.docs[d].kind, Name: ix.docs[d].name}
		}
		return hits
	}
	s := ix.getScratch()
	defer ix.putScratch(s)
	for _, t := range q.terms {
		ix.scoreTerm(s, t)
	}
	best := topK{limit: limit}
	for _, d := range s.docs {
		sc := s.score[d]
		if n := len(q.terms); n > 1 && int(s.matched[d]) == n {
			sc += allTermsBonus * float64(n)
		}
		switch p := ix.docs[d].phrase; {
		case p == q.phrase:
			sc += exactNameBoost
		case len(q.phrase) >= minPrefix && strings.HasPrefix(p, q.phrase):
			sc += namePrefixBoost
		}
		// Rounded so that sums reached in a different order (or with
		// float noise) still tie, and ties go to the name.
		sc = math.Round(sc*1000) / 1000
		best.offer(Hit{Doc: int(d), Kind: ix.docs[d].kind, Name: ix.docs[d].name, Score: sc})
	}
	return best.hits
}

// scoreTerm adds one term's score to every document it matches: per
// field, the weight times the best match quality of the term in it.
func (ix *Index) scoreTerm(s *scratch, t string) {
	reach := func(id int32, q float64) {
		for _, p := range ix.postings[id] {
			k := int(p.doc)*int(numFields) + int(p.field)
			if q > s.best[k] {
				s.best[k] = q
			}
			if !s.inTerm[p.doc] {
				s.inTerm[p.doc] = true
				s.termDocs = append(s.termDocs, p.doc)
			}
		}
	}
	if id, ok := ix.ids[t]; ok {
		reach(id, exact)
	}
	if len(t) >= minPrefix {
		for _, id := range ix.prefixed(t) {
			reach(id, prefix)
		}
	}
	for n := minStem; n < len(t); n++ {
		if id, ok := ix.ids[t[:n]]; ok {
			reach(id, stemOf)
		}
	}
	if utf8.RuneCountInString(t) >= minTypoRunes {
		for _, id := range ix.nearby(t) {
			reach(id, typo)
		}
	}
	for _, d := range s.termDocs {
		base := int(d) * int(numFields)
		sum := 0.0
		for f := range numFields {
			sum += fieldWeight[f] * s.best[base+int(f)]
			s.best[base+int(f)] = 0
		}
		s.inTerm[d] = false
		if s.matched[d] == 0 {
			s.docs = append(s.docs, d)
		}
		s.matched[d]++
		s.score[d] += sum
	}
	s.termDocs = s.termDocs[:0]
}

func (ix *Index) getScratch() *scratch {
	if s, ok := ix.scratch.Get().(*scratch); ok {
		return s
	}
	n := len(ix.docs)
	return &scratch{best: make([]float64, n*int(numFields)), inTerm: make([]bool, n), score: make([]float64, n), matched: make([]int32, n)}
}

// putScratch clears what the search touched (not the whole arrays) and
// returns the scratch to the pool.
func (ix *Index) putScratch(s *scratch) {
	for _, d := range s.docs {
		s.score[d], s.matched[d] = 0, 0
	}
	s.docs = s.docs[:0]
	ix.scratch.Put(s)
}

package search

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// field is where in a document a token occurs.
type field uint8

const (
	fieldName field = iota
	fieldTitle
	fieldTags
	fieldDescription
	numFields
)

// posting says that a token occurs in a field of a document (once,
// however many times it is written: repeating a word earns nothing).
type posting struct {
	doc   int32
	field field
}

// docInfo is what scoring needs of a document besides its postings.
type docInfo struct {
	kind, name string
	// phrase is the name's tokens joined by spaces, compared with the
	// query's phrase.
	phrase string
}

// Index is an inverted index over documents. It is immutable once built
// and safe for concurrent searches.
type Index struct {
	docs []docInfo
	// vocab holds every distinct token, sorted, so that the tokens a
	// prefix starts are one contiguous range.
	vocab    []string
	postings [][]posting // by vocab id
	ids      map[string]int32
	// byLength lists vocab ids by rune count: a term's typo candidates
	// are the tokens one rune shorter, as long, or one longer.
	byLength map[int][]int32
	runes    [][]rune // by vocab id, for edit distances
	// byName is every document in ranking order for an empty query.
	byName []int32

	scratch sync.Pool
}

// New builds an index of docs. Hits refer to documents by their position
// in docs.
func New(docs []Document) *Index {
	ix := &Index{docs: make([]docInfo, len(docs)), ids: map[string]int32{}, byLength: map[int][]int32{}}
	// Tokens get ids in order of appearance first, sorted ids at the end.
	var vocab []string
	var postings [][]posting
	type occurrence struct {
		id    int32
		field field
	}
	seen := map[occurrence]bool{} // of the current document
	for i, d := range docs {
		clear(seen)
		add := func(f field, text string) {
			for _, t := range Tokenize(text) {
				id, ok := ix.ids[t]
				if !ok {
					// A copy: t shares memory with the whole lowercased text.
					t = strings.Clone(t)
					id = int32(len(vocab))
					ix.ids[t] = id
					vocab = append(vocab, t)
					postings = append(postings, nil)
				}
				if o := (occurrence{id, f}); !seen[o] {
					seen[o] = true
					postings[id] = append(postings[id], posting{int32(i), f})
				}
			}
		}
		ix.docs[i] = docInfo{kind: d.Kind, name: d.Name, phrase: strings.Join(Tokenize(d.Name), " ")}
		add(fieldName, d.Name)
		add(fieldTitle, d.Title)
		for _, tag := range d.Tags {
			add(fieldTags, tag)
		}
		add(fieldDescription, d.Description)
	}
	order := make([]int32, len(vocab))
	for i := range order {
		order[i] = int32(i)
	}
	sort.Slice(order, func(a, b int) bool { return vocab[order[a]] < vocab[order[b]] })
	ix.vocab = make([]string, len(vocab))
	ix.postings = make([][]posting, len(vocab))
	ix.runes = make([][]rune, len(vocab))
	for id, old := range order {
		t := vocab[old]
		ix.vocab[id], ix.postings[id], ix.runes[id] = t, postings[old], []rune(t)
		ix.ids[t] = int32(id)
		n := utf8.RuneCountInString(t)
		ix.byLength[n] = append(ix.byLength[n], int32(id))
	}
	ix.byName = make([]int32, len(docs))
	for i := range ix.byName {
		ix.byName[i] = int32(i)
	}
	sort.SliceStable(ix.byName, func(a, b int) bool {
		da, db := ix.docs[ix.byName[a]], ix.docs[ix.byName[b]]
		return less(da.name, da.kind, db.name, db.kind)
	})
	return ix
}

// Len returns the number of documents.
func (ix *Index) Len() int { return len(ix.docs) }

// prefixed returns the vocab ids of the tokens that start with p and are
// longer than it.
func (ix *Index) prefixed(p string) []int32 {
	i := sort.SearchStrings(ix.vocab, p)
	var ids []int32
	for ; i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], p); i++ {
		if len(ix.vocab[i]) > len(p) {
			ids = append(ids, int32(i))
		}
	}
	return ids
}

// nearby returns the vocab ids of the tokens one edit away from t.
func (ix *Index) nearby(t string) []int32 {
	r := []rune(t)
	var ids []int32
	for n := len(r) - 1; n <= len(r)+1; n++ {
		for _, id := range ix.byLength[n] {
			if within1(r, ix.runes[id]) && ix.vocab[id] != t {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

package search

import (
	"slices"
	"sort"
)

// Less orders hits best first: by score, then name, then kind, so that
// equal scores always come out in the same order.
func Less(a, b Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return less(a.Name, a.Kind, b.Name, b.Kind)
}

func less(nameA, kindA, nameB, kindB string) bool {
	if nameA != nameB {
		return nameA < nameB
	}
	return kindA < kindB
}

// Merge ranks the hits of several indexes together (their scores are
// comparable) and keeps the best limit (all when limit <= 0).
func Merge(limit int, lists ...[]Hit) []Hit {
	var all []Hit
	for _, l := range lists {
		all = append(all, l...)
	}
	return top(all, limit)
}

// top sorts hits best first and keeps limit of them.
func top(hits []Hit, limit int) []Hit {
	sort.Slice(hits, func(i, j int) bool { return Less(hits[i], hits[j]) })
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// topK keeps the best limit hits offered, in order (all when limit <= 0):
// a query matching most of a large library sorts ten hits, not thousands.
type topK struct {
	limit int
	hits  []Hit
}

func (t *topK) offer(h Hit) {
	if t.limit > 0 && len(t.hits) == t.limit && !Less(h, t.hits[len(t.hits)-1]) {
		return
	}
	i, _ := slices.BinarySearchFunc(t.hits, h, func(a, b Hit) int {
		if Less(a, b) {
			return -1
		}
		return 1
	})
	t.hits = slices.Insert(t.hits, i, h)
	if t.limit > 0 && len(t.hits) > t.limit {
		t.hits = t.hits[:t.limit]
	}
}

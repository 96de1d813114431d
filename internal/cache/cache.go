// Package cache is the one bounded cache stepwise keeps in memory: every
// process-wide cache (compiled expressions, parsed definitions, compiled
// schemas, run states, library summaries, …) is an LRU of
// github.com/hashicorp/golang-lru/v2 made by New, so that a long-running
// server holds at most a fixed number of entries in each, the most
// recently used. The bounds are documented where each cache is declared.
package cache

import lru "github.com/hashicorp/golang-lru/v2"

// LRU is a cache bounded to its size most recently used entries, safe for
// concurrent use.
type LRU[K comparable, V any] = lru.Cache[K, V]

// New returns an LRU of size entries (size > 0).
func New[K comparable, V any](size int) *LRU[K, V] {
	c, err := lru.New[K, V](size)
	if err != nil {
		panic(err) // only for size <= 0: a programming error
	}
	return c
}

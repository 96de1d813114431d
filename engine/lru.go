package engine

import "container/list"

// The engine keeps what it parsed or compiled per workflow version — the
// definitions and the agent steps' output schemas — so that a run does not
// pay for it again. A long-lived server sees versions come and go (every
// saved edit is a new version), so those caches keep only the most
// recently used entries: a version that falls out is parsed again from the
// store the next time one of its runs is loaded.

// maxDefinitions bounds the parsed definitions kept; maxSchemas the
// compiled output schemas (one per agent step of a version).
var (
	maxDefinitions = 256 // variables for tests that watch versions fall out
	maxSchemas     = 1024
)

// lru is a map bounded to its limit most recently used entries. It is not
// safe for concurrent use: the engine's defsMu guards its caches.
type lru[V any] struct {
	limit int
	m     map[string]*list.Element
	order list.List // of *lruEntry[V], the most recently used first
}

type lruEntry[V any] struct {
	key string
	val V
}

func newLRU[V any](limit int) *lru[V] {
	return &lru[V]{limit: limit, m: map[string]*list.Element{}}
}

// get returns the value of key and marks it used.
func (c *lru[V]) get(key string) (V, bool) {
	el, ok := c.m[key]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[V]).val, true
}

// add sets key to v, marks it used, and drops the least recently used
// entry when there are more than limit.
func (c *lru[V]) add(key string, v V) {
	if el, ok := c.m[key]; ok {
		el.Value.(*lruEntry[V]).val = v
		c.order.MoveToFront(el)
		return
	}
	c.m[key] = c.order.PushFront(&lruEntry[V]{key: key, val: v})
	if c.order.Len() > c.limit {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.m, last.Value.(*lruEntry[V]).key)
	}
}

// len is the number of entries kept.
func (c *lru[V]) len() int { return c.order.Len() }

package engine

import "stepwise.dev/stepwise/internal/cache"

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

// lru is the process's bounded cache (package cache) keyed by string.
type lru[V any] = cache.LRU[string, V]

func newLRU[V any](limit int) *lru[V] { return cache.New[string, V](limit) }

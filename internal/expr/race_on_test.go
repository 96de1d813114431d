//go:build race

package expr

// raceEnabled: the race detector's instrumentation changes what the
// runtime counts as allocated (sync.Pool drops items at random), so
// allocation ceilings are checked only without it.
const raceEnabled = true

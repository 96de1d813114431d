package cli

import (
	"os"
	"runtime/debug"
)

// serveGCPercent is the garbage collector's target for a serving process
// once it has started (GOGC=400: a collection when the heap has grown by
// four times what survived the last one, instead of once).
//
// Why: the go-sdk decodes every incoming request's parameters and its
// `_meta` through a JSON decoder that allocates a fresh 32 KB buffer per
// call (five or so per tools/call on the server, out of our reach), so a
// cheap tool call leaves about 150 KB of garbage; with the default GOGC
// and a live heap of a few megabytes, that is a collection every dozen
// calls, and collecting was about half of the CPU of a run_get in
// BenchmarkToolCallRunGet (docs/PERFORMANCE.md, "MCP call overhead (second
// pass)"). The cost is memory under load: the heap may reach five times
// the live heap between collections (a few megabytes live → some tens
// peak). serveGCLimit bounds that softly.
const serveGCPercent = 400

// serveGCLimit is the soft memory limit a serving process sets with the GC
// target above: near it, the runtime collects as often as it must again.
const serveGCLimit = 256 << 20

// tuneServeGC sets the collector for serving, after start-up (so the
// memory of an idle server is what it was), unless the person running it
// chose through GOGC or GOMEMLIMIT.
func tuneServeGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serveGCLimit)
	}
}

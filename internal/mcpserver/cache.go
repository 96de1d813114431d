package mcpserver

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// staticTTLMs is how long a client may keep what does not change while the
// server runs: its capabilities, prompts, templates, the resource list, the
// tools when no library workflow is exposed as one, the language's docs,
// the run view's page.
const staticTTLMs = 3_600_000

// cacheHint sets the cache hints (ttlMs, cacheScope) of server/discover,
// the list results and resources/read (protocol 2026-07-28): what cannot
// change while the server runs may be kept an hour by anyone; what can
// (exposed workflow tools, the library, runs, actions, catalogs) is stale
// at once, and private when it is someone's data.
func (s *Server) cacheHint(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch r := req.(type) {
	case *mcp.ReadResourceRequest:
		if uri := r.Params.URI; uri == uriDocs || uri == uriSchema || uri == uriRunApp || strings.HasPrefix(uri, "stepwise://docs/") {
			c.TTLMs, c.CacheScope = staticTTLMs, "public"
			return
		}
		c.TTLMs, c.CacheScope = 0, "private"
	case *mcp.ListToolsRequest:
		if s.opts.ExposeWorkflows {
			c.TTLMs = 0 // wf_<name> tools follow the library
			return
		}
		c.TTLMs = staticTTLMs
	default: // server/discover, prompts, resources and templates lists
		c.TTLMs = staticTTLMs
	}
}

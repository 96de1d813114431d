package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// TestCacheHints: on protocol 2026-07-28 what cannot change while the
// server runs (the run view's page too) carries an hour's ttl; the library, runs and exposed
// workflow tools are stale at once, runs private.
func TestCacheHints(t *testing.T) {
	ctx := context.Background()
	for _, expose := range []bool{false, true} {
		e := newEnv(t, Options{ExposeWorkflows: expose}, service.Options{})
		cs := connectVersion(t, e, nil, "2026-07-28")
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := staticTTLMs
		if expose {
			want = 0
		}
		if tools.TTLMs != want {
			t.Errorf("expose=%v: tools/list ttl %d, want %d", expose, tools.TTLMs, want)
		}
		prompts, err := cs.ListPrompts(ctx, nil)
		if err != nil || prompts.TTLMs != staticTTLMs {
			t.Errorf("prompts/list ttl %+v %v", prompts, err)
		}
		docs, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uriDocs})
		if err != nil || docs.TTLMs != staticTTLMs || docs.CacheScope != "public" {
			t.Errorf("docs: ttl %d scope %q %v", docs.TTLMs, docs.CacheScope, err)
		}
		app, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uriRunApp})
		if err != nil || app.TTLMs != staticTTLMs || app.CacheScope != "public" {
			t.Errorf("the run view: ttl %d scope %q %v", app.TTLMs, app.CacheScope, err)
		}
		lib, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uriWorkflows})
		if err != nil || lib.TTLMs != 0 || lib.CacheScope != "private" {
			t.Errorf("library: ttl %d scope %q %v", lib.TTLMs, lib.CacheScope, err)
		}
	}
}

package mcpserver

import (
	"context"
	_ "embed" // the run view's page

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The run view as an MCP App (the io.modelcontextprotocol/ui extension,
// SEP-1865): hosts that render MCP Apps show run_start's, run_get's and
// run_continue's results in it, a live run the person can answer.
const (
	uriRunApp = "ui://stepwise/run"
	// mimeMCPApp is the MIME type of an MCP App's HTML.
	mimeMCPApp = "text/html;profile=mcp-app"
)

// runAppHTML is the run view: one self-contained page (its script and
// style inline, no network access) that speaks the view side of the
// protocol to the host over postMessage.
//
//go:embed runapp.html
var runAppHTML string

// appMeta is the resource's _meta.ui: a border around it; no csp, so the
// host applies its most restrictive policy (no connections, no outside
// resources), which is all the page needs.
func appMeta() mcp.Meta {
	return mcp.Meta{"ui": map[string]any{"prefersBorder": true}}
}

// runAppToolMeta is the _meta of the tools whose results the run view
// shows. Visibility is left out: its default, model and app, is what they
// need (the view calls run_get and run_continue through the host).
func runAppToolMeta() mcp.Meta {
	return mcp.Meta{"ui": map[string]any{"resourceUri": uriRunApp}}
}

// addApp registers the run view's resource.
func (s *Server) addApp() {
	s.addResource(&mcp.Resource{URI: uriRunApp, Name: "run-view", Title: "A run, live",
		Description: "The run view of hosts that render MCP Apps: a run's status, steps and outputs, followed live, and its open question as a form.",
		MIMEType:    mimeMCPApp, Meta: appMeta()},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uriRunApp, MIMEType: mimeMCPApp, Text: runAppHTML, Meta: appMeta()}}}, nil
		})
}

package mcpserver

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/html"

	"stepwise.dev/stepwise/internal/service"
)

// The run view is listed with its MIME type and _meta.ui, and reads as
// one self-contained HTML page that speaks the view side of MCP Apps.
func TestRunAppResource(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	ctx := context.Background()

	var listed *mcp.Resource
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if r.URI == uriRunApp {
			listed = r
		}
	}
	if listed == nil {
		t.Fatalf("resources/list has no %s", uriRunApp)
	}
	if listed.MIMEType != "text/html;profile=mcp-app" || listed.Name == "" {
		t.Errorf("listed as %+v", listed)
	}
	if ui, _ := listed.Meta["ui"].(map[string]any); ui["prefersBorder"] != true {
		t.Errorf("listed _meta: %v, want ui.prefersBorder true", listed.Meta)
	}

	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uriRunApp})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %d contents, want 1", len(res.Contents))
	}
	c := res.Contents[0]
	if c.URI != uriRunApp || c.MIMEType != "text/html;profile=mcp-app" {
		t.Errorf("read as %s %s", c.URI, c.MIMEType)
	}
	if ui, _ := c.Meta["ui"].(map[string]any); ui["prefersBorder"] != true || ui["csp"] != nil {
		t.Errorf("read _meta: %v, want ui.prefersBorder and no csp (the host's strictest policy)", c.Meta)
	}
	if !strings.HasPrefix(c.Text, "<!DOCTYPE html>") {
		t.Errorf("the page does not start as an HTML5 document: %.40q", c.Text)
	}
	// The protocol's messages the view sends and handles, and the tools it
	// calls through the host.
	for _, want := range []string{`"ui/initialize"`, `"ui/notifications/initialized"`, `"ui/notifications/tool-result"`,
		`"ui/notifications/host-context-changed"`, `"ui/notifications/size-changed"`, `"ui/resource-teardown"`, `"2026-01-26"`,
		`"run_get"`, `"run_continue"`} {
		if !strings.Contains(c.Text, want) {
			t.Errorf("the page never mentions %s", want)
		}
	}
	checkSelfContained(t, c.Text)
}

// checkSelfContained fails when the page loads anything: the host's
// default policy allows no outside resource and no connection.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(page))
	scripts := 0
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				t.Fatal(z.Err())
			}
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		if tok.Data == "script" {
			scripts++
		}
		switch tok.Data {
		case "link", "iframe", "img", "object", "embed", "base":
			t.Errorf("the page has a <%s>", tok.Data)
		}
		for _, a := range tok.Attr {
			if a.Key == "src" || a.Key == "href" || a.Key == "action" || strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s %s=%q>: the page loads or runs something outside its own script", tok.Data, a.Key, a.Val)
			}
		}
	}
	if scripts != 1 {
		t.Errorf("the page has %d scripts, want its one inline script", scripts)
	}
	for _, call := range []string{"fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "import(", "eval(", "innerHTML"} {
		if strings.Contains(page, call) {
			t.Errorf("the page uses %s", call)
		}
	}
}

// The tools whose results are a run (the wf_ tools too) declare the view
// in _meta.ui; the others do not.
func TestRunAppToolMeta(t *testing.T) {
	e := newEnv(t, Options{ExposeWorkflows: true}, service.Options{})
	cs := e.connect(nil)
	want := map[string]bool{"run_start": true, "run_get": true, "run_continue": true, "wf_greet": true}
	seen := map[string]bool{}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		ui, _ := tl.Meta["ui"].(map[string]any)
		uri, _ := ui["resourceUri"].(string)
		switch {
		case want[tl.Name] || strings.HasPrefix(tl.Name, exposedPrefix):
			seen[tl.Name] = true
			if uri != uriRunApp || len(ui) != 1 {
				t.Errorf("%s: _meta %v, want ui.resourceUri %s alone", tl.Name, tl.Meta, uriRunApp)
			}
		case tl.Meta["ui"] != nil:
			t.Errorf("%s declares a view: %v", tl.Name, tl.Meta)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("tools/list has no %s", name)
		}
	}
}

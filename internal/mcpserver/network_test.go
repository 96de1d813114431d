package mcpserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/mcpclient/mcpclienttest"
	"stepwise.dev/stepwise/internal/service"
)

// restricted is serve's default network policy; allowing is it with the
// operator's --allow-network 127.0.0.0/8.
var (
	restricted = action.NetworkPolicy{Restricted: true}
	allowing   = func(t *testing.T) action.NetworkPolicy {
		p, err := action.ParseNetworkAllow([]string{"127.0.0.0/8"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
)

// startRun runs an inline workflow and returns its result.
func startRun(t *testing.T, e *env, definition string) RunResult {
	t.Helper()
	var r RunResult
	if call(t, e.connect(nil), "run_start", map[string]any{"definition": definition}, &r) {
		t.Fatalf("run_start: %+v", r)
	}
	return r
}

// wantNetworkRefused asserts a run that failed at step id with
// NETWORK_NOT_ALLOWED, its message naming the flag.
func wantNetworkRefused(t *testing.T, what string, r RunResult, id string) {
	t.Helper()
	if r.Status != "failed" || r.Error == nil || r.Error.Code != action.CodeNetworkNotAllowed || r.Error.StepID != id ||
		!strings.Contains(r.Error.Message, "--allow-network") || len(r.Outputs) != 0 {
		t.Fatalf("%s: %+v (error %+v)", what, r, r.Error)
	}
}

// An agent's inline workflow cannot make a restricted server fetch from
// loopback, by address or by a name resolving to it; a server that
// allows the range fetches.
func TestNetworkPolicyHTTPStep(t *testing.T) {
	var hits atomic.Int32
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("the admin secret"))
	}))
	defer admin.Close()
	port := admin.URL[strings.LastIndex(admin.URL, ":")+1:]
	wf := func(url string) string {
		return fmt.Sprintf("version: 1\nname: fetch\nsteps:\n  - id: get\n    uses: http\n    with: {url: %q, parse: text}\noutputs:\n  body: ${{ steps.get.output.body }}\n", url)
	}
	fenced := newEnv(t, Options{}, service.Options{NetworkPolicy: restricted})
	for _, url := range []string{admin.URL + "/admin", "http://localhost:" + port + "/admin", "http://[::ffff:127.0.0.1]:" + port + "/admin"} {
		wantNetworkRefused(t, url, startRun(t, fenced, wf(url)), "get")
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("refused steps reached the server %d times", n)
	}
	open := newEnv(t, Options{}, service.Options{NetworkPolicy: allowing(t)})
	if r := startRun(t, open, wf(admin.URL+"/admin")); r.Status != "succeeded" || r.Outputs["body"] != "the admin secret" {
		t.Fatalf("allowed: %+v", r)
	}
}

// A catalog's operations connect through the policy too: an API on
// loopback is refused (the catalog itself, inline, imports).
func TestNetworkPolicyCatalogOperation(t *testing.T) {
	var hits atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name": "Rex"}`))
	}))
	defer api.Close()
	doc := `{"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"}, "servers": [{"url": "` + api.URL + `"}],
"paths": {"/pets/{id}": {"get": {"operationId": "getPet", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
"responses": {"200": {"description": "a pet"}}}}}}`
	wf := "version: 1\nname: pet\nsteps:\n  - id: get\n    uses: pets.getPet\n    with: {id: '7'}\noutputs:\n  name: ${{ steps.get.output.name }}\n"
	for _, c := range []struct {
		policy  action.NetworkPolicy
		refused bool
	}{{restricted, true}, {allowing(t), false}} {
		e := newEnv(t, Options{}, service.Options{NetworkPolicy: c.policy})
		var o catalogOut
		if call(t, e.connect(nil), "catalog_import", map[string]any{"source": doc, "title": "Pets"}, &o) {
			t.Fatalf("import: %+v", o)
		}
		r := startRun(t, e, wf)
		if c.refused {
			wantNetworkRefused(t, "catalog operation", r, "get")
			if n := hits.Load(); n != 0 {
				t.Fatalf("the refused operation reached the API %d times", n)
			}
		} else if r.Status != "succeeded" || r.Outputs["name"] != "Rex" {
			t.Fatalf("allowed: %+v", r)
		}
	}
}

// An mcp step naming a server by url connects through the policy.
func TestNetworkPolicyInlineMCPURL(t *testing.T) {
	stats := &mcpclienttest.Stats{}
	srv := mcpclienttest.NewServer(stats, false)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	wf := fmt.Sprintf("version: 1\nname: remote\nsteps:\n  - id: add\n    uses: mcp\n    with: {url: %q, tool: add, arguments: {a: 1, b: 2}}\noutputs:\n  sum: ${{ steps.add.output.sum }}\n", ts.URL)
	wantNetworkRefused(t, "inline mcp url", startRun(t, newEnv(t, Options{}, service.Options{NetworkPolicy: restricted}), wf), "add")
	if r := startRun(t, newEnv(t, Options{}, service.Options{NetworkPolicy: allowing(t)}), wf); r.Status != "succeeded" || r.Outputs["sum"] != float64(3) {
		t.Fatalf("allowed: %+v %+v", r, r.Error)
	}
}

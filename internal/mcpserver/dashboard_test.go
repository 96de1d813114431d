package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestDashboardMountedAtRoot: the dashboard gets every path no other route
// serves; /mcp, /healthz and /secrets/ stay the server's.
func TestDashboardMountedAtRoot(t *testing.T) {
	srv := NewUnattached(Options{})
	dash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := srv.HTTPHandler(HTTPOptions{Dashboard: dash, AuthTokens: []string{"a-token-of-sixteen-chars"}})
	for path, dashboard := range map[string]bool{"/": true, "/runs": true, "/runs/x/events": true, "/healthz": false, "/mcp": false, "/secrets/nope": false} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if (rec.Code == http.StatusTeapot) != dashboard {
			t.Errorf("GET %s: %d (dashboard: %v)", path, rec.Code, dashboard)
		}
	}
	rec := httptest.NewRecorder()
	srv.HTTPHandler(HTTPOptions{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without a dashboard, GET /: %d", rec.Code)
	}
}

package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// /healthz is what a load balancer asks: 503 while the server starts,
// 200 once it serves, 503 again when its database stops answering.
func TestHealthzFollowsTheDatabase(t *testing.T) {
	svc, err := service.Open(context.Background(), service.Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewUnattached(Options{})
	h := srv.HTTPHandler(HTTPOptions{})
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	if code, body := get(); code != http.StatusServiceUnavailable || body != "starting" {
		t.Fatalf("before start: %d %q", code, body)
	}
	srv.Attach(svc)
	srv.Start(context.Background())
	if code, body := get(); code != http.StatusOK || body != "ok" {
		t.Fatalf("serving: %d %q", code, body)
	}
	srv.Close()
	_ = svc.Close(context.Background()) // the database is gone
	if code, body := get(); code != http.StatusServiceUnavailable || body != "database unavailable" {
		t.Fatalf("database closed: %d %q", code, body)
	}
}

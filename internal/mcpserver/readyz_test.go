package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// /readyz names each check: starting (service not started, store not
// checked), ready (all ok), then the store unavailable once the database
// is gone; a server whose service failed to open is never ready.
func TestReadyzStates(t *testing.T) {
	svc, err := service.Open(context.Background(), service.Options{Home: t.TempDir(), Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewUnattached(Options{})
	h := srv.HTTPHandler(HTTPOptions{})
	get := func(h http.Handler) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(h); code != http.StatusServiceUnavailable || body != "serving ok\nservice starting\nstore not checked\n" {
		t.Fatalf("before start: %d %q", code, body)
	}
	srv.Attach(svc)
	srv.Start(context.Background())
	if code, body := get(h); code != http.StatusOK || body != "serving ok\nservice ok\nstore ok\n" {
		t.Fatalf("serving: %d %q", code, body)
	}
	srv.Close()
	_ = svc.Close(context.Background())
	if code, body := get(h); code != http.StatusServiceUnavailable || body != "serving ok\nservice ok\nstore unavailable\n" {
		t.Fatalf("database closed: %d %q", code, body)
	}

	failed := NewUnattached(Options{})
	failed.Fail(errors.New("cannot open the store"))
	if code, body := get(failed.HTTPHandler(HTTPOptions{})); code != http.StatusServiceUnavailable || body != "serving ok\nservice failed\nstore not opened\n" {
		t.Fatalf("failed to open: %d %q", code, body)
	}
}

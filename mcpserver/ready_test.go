package mcpserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/service"
)

// connectUnattached connects a client to a server built by NewUnattached:
// the handshake (connectServer fails the test without it) and a ping must
// succeed before the server has a service.
func connectUnattached(t *testing.T, srv *Server) *mcp.ClientSession {
	t.Helper()
	cs := connectServer(t, srv, nil)
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping before the service: %v", err)
	}
	return cs
}

// listWorkflows calls workflow_list in the background; the channel gets
// its result or its error.
func listWorkflows(cs *mcp.ClientSession) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_list", Arguments: map[string]any{}})
		if err == nil && res.IsError {
			err = errors.New(toText(res.Content))
		}
		done <- err
	}()
	return done
}

func TestUnattachedServerHoldsRequestsUntilStart(t *testing.T) {
	srv := NewUnattached(Options{})
	cs := connectUnattached(t, srv)
	done := listWorkflows(cs)
	select {
	case err := <-done:
		t.Fatalf("workflow_list answered before the service was attached: %v", err)
	case <-time.After(200 * time.Millisecond):
	}

	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	svc, err := service.Open(context.Background(), service.Options{Home: home, Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	srv.Attach(svc)
	select {
	case err := <-done:
		t.Fatalf("workflow_list answered after Attach but before Start: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	srv.Start(context.Background())
	t.Cleanup(srv.Close)
	if err := <-done; err != nil {
		t.Fatalf("workflow_list held until Start: %v", err)
	}
	if err := <-listWorkflows(cs); err != nil {
		t.Fatalf("workflow_list after Start: %v", err)
	}
}

func TestFailedServerAnswersHeldRequests(t *testing.T) {
	srv := NewUnattached(Options{})
	cs := connectUnattached(t, srv)
	held := listWorkflows(cs)
	time.Sleep(50 * time.Millisecond) // usually held by then; answered the same either way
	srv.Fail(errors.New("open store: database is locked"))
	for _, done := range []<-chan error{held, listWorkflows(cs)} {
		err := <-done
		if err == nil || !strings.Contains(err.Error(), "stepwise could not start: open store: database is locked") {
			t.Fatalf("want the start's error, got %v", err)
		}
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping after Fail: %v", err)
	}
}

package mcpserver

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// transports are the ways a client reaches the server in these tests:
// in memory, and the two `serve` offers — stdio (ConnectStdio) and
// streamable HTTP (HTTPHandler), where the go-sdk client speaks 2026-07-28
// (statelessly) unless told 2025-11-25 (a session).
var transports = []string{"memory", "stdio", "http", "http-2025-11-25"}

// pings reports whether the go-sdk client's ping and logging/setLevel
// reach the server over via: the client (v1.8.0) sends them in the
// stateless protocol without the _meta the protocol asks of every
// request, which the SDK's HTTP handler refuses.
func pings(via string) bool { return via != "http" }

// connectVia connects a go-sdk client to srv over one of transports.
func connectVia(t *testing.T, srv *Server, via string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	var ct mcp.Transport
	switch via {
	case "memory":
		return connectServer(t, srv, copts)
	case "stdio":
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ss, err := srv.ConnectStdio(context.Background(), inR, outW)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		ct = &mcp.IOTransport{Reader: outR, Writer: inW}
	case "http", "http-2025-11-25":
		hs := httptest.NewServer(srv.HTTPHandler(HTTPOptions{}))
		t.Cleanup(hs.Close)
		ct = &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}
	}
	var opts *mcp.ClientSessionOptions
	if version, ok := strings.CutPrefix(via, "http-"); ok {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(context.Background(), ct, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if opts != nil && (cs.InitializeResult() == nil || cs.InitializeResult().ProtocolVersion != opts.ProtocolVersion) {
		t.Fatalf("not a %s session: %+v", opts.ProtocolVersion, cs.InitializeResult())
	}
	return cs
}

// connectUnattached connects a client to a server built by NewUnattached:
// the handshake (connectVia fails the test without it) and a ping must
// succeed before the server has a service.
func connectUnattached(t *testing.T, srv *Server, via string) *mcp.ClientSession {
	t.Helper()
	cs := connectVia(t, srv, via, nil)
	if !pings(via) {
		return cs
	}
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
	for _, via := range transports {
		t.Run(via, func(t *testing.T) { unattachedHoldsUntilStart(t, via) })
	}
}

func unattachedHoldsUntilStart(t *testing.T, via string) {
	srv := NewUnattached(Options{})
	cs := connectUnattached(t, srv, via)
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
	for _, via := range transports {
		t.Run(via, func(t *testing.T) { failedAnswersHeld(t, via) })
	}
}

func failedAnswersHeld(t *testing.T, via string) {
	srv := NewUnattached(Options{})
	cs := connectUnattached(t, srv, via)
	held := listWorkflows(cs)
	time.Sleep(50 * time.Millisecond) // usually held by then; answered the same either way
	srv.Fail(errors.New("open store: database is locked"))
	for _, done := range []<-chan error{held, listWorkflows(cs)} {
		err := <-done
		if err == nil || !strings.Contains(err.Error(), "stepwise could not start: open store: database is locked") {
			t.Fatalf("want the start's error, got %v", err)
		}
	}
	if err := cs.Ping(context.Background(), nil); pings(via) && err != nil {
		t.Fatalf("ping after Fail: %v", err)
	}
}

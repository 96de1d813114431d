package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// env is a service on a temporary home with the test workflows in its
// library, and an MCP server for it.
type env struct {
	t   *testing.T
	svc *service.Service
	srv *Server
}

func newEnv(t *testing.T, opts Options, so service.Options) *env {
	t.Helper()
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"greet.yaml", "vault.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(lib, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	so.Home, so.Durability = home, "normal"
	svc, err := service.Open(context.Background(), so)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(svc, opts)
	srv.Start(context.Background())
	t.Cleanup(func() {
		srv.Close()
		_ = svc.Close(context.Background())
	})
	return &env{t: t, svc: svc, srv: srv}
}

// connect connects a client over in-memory transports.
func (e *env) connect(copts *mcp.ClientOptions) *mcp.ClientSession {
	e.t.Helper()
	return connectServer(e.t, e.srv, copts)
}

// connectServer connects a client to srv over in-memory transports; the
// session is closed when the test ends.
func connectServer(t *testing.T, srv *Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, copts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}

// call calls a tool and decodes its structured content into out; it
// returns whether the result is an error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return res.IsError
}

func readFile(name string) ([]byte, error) { return os.ReadFile(name) }

func toText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonMarshal(v any) ([]byte, error)   { return json.Marshal(v) }
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

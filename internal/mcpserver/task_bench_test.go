package mcpserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// BenchmarkTaskGet is one tasks/get of a run waiting on a question, over
// in-memory transports: the poll a Tasks client repeats.
//
//	go test ./mcpserver -run '^$' -bench TaskGet -benchmem
func BenchmarkTaskGet(b *testing.B) {
	home := b.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "workflows"), 0o755); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "greet.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "workflows", "greet.yaml"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	svc, err := service.Open(context.Background(), service.Options{Home: home, Durability: "normal"})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(context.Background())
	srv := New(svc, Options{})
	srv.Start(context.Background())
	defer srv.Close()
	c := connectRawTo(b, srv)
	id := c.start("run_start", map[string]any{"workflow": "greet"})
	c.until(id, "input_required", "name.1")
	b.ReportAllocs()
	for b.Loop() {
		c.OK("tasks/get", map[string]any{"taskId": id})
	}
}

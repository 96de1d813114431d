package mcpserver

import (
	"context"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// BenchmarkNew measures building the server (tools, schemas, resources,
// prompts): what every `stepwise serve` pays before it can answer
// initialize.
//
//	go test ./mcpserver -run '^$' -bench New -benchmem
func BenchmarkNew(b *testing.B) {
	svc, err := service.Open(context.Background(), service.Options{Home: b.TempDir(), Durability: "normal"})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		New(svc, Options{})
	}
}

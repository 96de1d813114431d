//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The conformance suite tests servers over HTTP only (e2e/conformance): over
// stdio, the fixtures answer through the built binary too, for a client on
// each protocol — progress notifications on the call, and a question the
// server asks (elicitation on 2025-11-25, an input-required result the
// client's SDK answers and retries on 2026-07-28).
func TestServeStdioConformanceFixtures(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cmd := exec.Command(sharedBinary(t), "--home", t.TempDir(), "serve", "--conformance-fixtures")
			cmd.Env = append(os.Environ(), "STEPWISE_TEST_FIXTURES=1")
			var mu sync.Mutex
			var progress []float64
			var asked []string
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, r.Params.Progress)
				},
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, r.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
				},
			})
			cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })

			p := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
			p.SetProgressToken("p-1")
			res, err := cs.CallTool(context.Background(), p)
			if err != nil || res.IsError {
				t.Fatalf("test_tool_with_progress: %v %+v", err, res)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_input_required_result_elicitation"})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "Hello, Ada!" {
				t.Fatalf("test_input_required_result_elicitation: %v %+v", err, res)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(progress, []float64{0, 50, 100}) {
				t.Errorf("progress %v, want 0, 50, 100", progress)
			}
			if len(asked) != 1 || asked[0] != "What is your name?" {
				t.Errorf("asked %q", asked)
			}
		})
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The library workflows the MCP measurements start.
var library = map[string]string{
	// wait asks one question: a run of it waits until answered. It is the
	// run run_get reads and the run a server holds 10,000 of.
	"wait": `version: 1
name: wait
steps:
  - id: name
    ask: {prompt: "Your name?", type: string}
`,
	// ask-loop asks for a number again and again: each run_continue
	// records the answer, jumps back and opens the next question.
	"ask-loop": `version: 1
name: ask-loop
steps:
  - id: number
    max_visits: 10000
    ask: {prompt: "Next number?", type: integer}
  - id: again
    switch:
      - goto: number
`,
}

// newHome makes a stepwise home under parent whose library holds the
// workflows above.
func newHome(parent, name string) (string, error) {
	dir := filepath.Join(parent, name)
	lib := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return "", err
	}
	for wf, text := range library {
		if err := os.WriteFile(filepath.Join(lib, wf+".yaml"), []byte(text), 0o644); err != nil {
			return "", fmt.Errorf("home %s: %w", dir, err)
		}
	}
	return dir, nil
}

// startWaiting starts a run of wait through run_start and returns its id
// once it waits on its question.
func startWaiting(ctx context.Context, cs *mcp.ClientSession) (string, error) {
	res, err := call(ctx, cs, "run_start", map[string]any{"workflow": "wait"})
	if err != nil {
		return "", err
	}
	if st := field(res, "status"); st != "waiting" {
		return "", fmt.Errorf("run_start: status %q, want waiting", st)
	}
	return field(res, "run_id"), nil
}

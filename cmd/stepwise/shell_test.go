//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command that prints what looks like JSON-RPC, then leaves a file.
const shellOverStdio = `version: 1
name: noisy
steps:
  - id: say
    uses: shell
    with:
      command: 'echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"; echo oops >&2; touch "$1"'
      shell: true
      args: [made-by-serve]
outputs:
  said: ${{ steps.say.output.stdout }}
`

// `stepwise serve` refuses shell unless the operator passes --allow-shell;
// with it, the command runs in --workspace and its output never reaches
// the JSON-RPC stream.
func TestServeShellPolicy(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	cs := serveStdio(t, "--home", t.TempDir(), "--workspace", ws, "serve")
	r, isErr := callTool(t, cs, "run_start", map[string]any{"definition": shellOverStdio}, nil)
	if !isErr || r.ErrorCode != "SHELL_NOT_ALLOWED" {
		t.Fatalf("without --allow-shell: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-serve")); err == nil {
		t.Fatal("the refused command ran")
	}

	cs = serveStdio(t, "--home", t.TempDir(), "--workspace", ws, "serve", "--allow-shell")
	r, isErr = callTool(t, cs, "run_start", map[string]any{"definition": shellOverStdio}, nil)
	said, _ := r.Outputs["said"].(string)
	if isErr || r.Status != "succeeded" || !strings.Contains(said, `"jsonrpc"`) {
		t.Fatalf("with --allow-shell: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "made-by-serve")); err != nil {
		t.Fatal(err)
	}
	// The session still works after the command printed.
	if _, isErr := callTool(t, cs, "workflow_list", map[string]any{}, nil); isErr {
		t.Fatal("workflow_list after the command failed")
	}
}

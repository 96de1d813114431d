//go:build unix

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real binary: `serve --max-runs` purges at start, and `purge` run by
// a script (no terminal) refuses without --yes.
func TestServeRetentionAndPurgeWithoutTerminal(t *testing.T) {
	bin := sharedBinary(t)
	home := libraryHome(t)
	wf := filepath.Join(t.TempDir(), "quick.yaml")
	if err := os.WriteFile(wf, []byte("version: 1\nname: quick\nsteps:\n  - {id: a, uses: noop}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runID := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(bin, home, "normal", args...)
		var r struct {
			RunID string `json:"run_id"`
		}
		if (code != 0 && code != 3) || json.Unmarshal([]byte(out), &r) != nil {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errOut)
		}
		return r.RunID
	}
	older := runID("run", wf, "--json")
	newer := runID("run", wf, "--json")
	waiting := runID("run", "greet", "--json", "--no-input")

	cmd := exec.Command(bin, "--home", home, "--durability", "normal", "serve", "--max-runs", "1", "--retention", "30d")
	cmd.Env = childEnv()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := func(id string) bool {
		r, isErr := callTool(t, cs, "run_get", map[string]any{"run_id": id}, nil)
		if isErr && r.ErrorCode != "RUN_NOT_FOUND" {
			t.Fatalf("run_get %s: %+v", id, r)
		}
		return !isErr
	}
	for deadline := time.Now().Add(30 * time.Second); found(older); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("serve --max-runs 1 did not purge the older finished run")
		}
	}
	if !found(newer) || !found(waiting) {
		t.Fatal("serve --max-runs 1 purged the newest finished run or an active one")
	}
	_ = cs.Close()

	out, errOut, code := runCLI(bin, home, "normal", "purge")
	if code != 2 || !strings.Contains(errOut, "--yes") || out != "" {
		t.Fatalf("purge without a terminal nor --yes: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCLI(bin, home, "normal", "purge", "--yes")
	if code != 0 || !strings.HasPrefix(out, "purged 1 run: ") {
		t.Fatalf("purge --yes: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = runCLI(bin, home, "normal", "runs", "--json")
	if code != 0 || strings.Contains(out, newer) || !strings.Contains(out, waiting) {
		t.Fatalf("runs after the purge: %s", out)
	}
}

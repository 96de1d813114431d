package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestServeToolsProfile runs `serve --tools core` and lists its tools over
// stdio, and checks that an unknown profile is a usage error naming the
// known ones.
func TestServeToolsProfile(t *testing.T) {
	cs := serveStdio(t, "--home", libraryHome(t), "serve", "--tools", "core")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	got := strings.Join(names, " ")
	if len(names) != 10 || !strings.Contains(got, "run_start") || strings.Contains(got, "run_purge") {
		t.Errorf("--tools core lists %s", got)
	}
	if r, isErr := callTool(t, cs, "run_get", map[string]any{"run_id": "missing"}, nil); !isErr {
		t.Errorf("run_get of a missing run: %+v", r)
	}
	if _, _, err := tryTool(cs, "run_list", map[string]any{}, nil); err == nil {
		t.Error("run_list answered under --tools core")
	}

	out, err := exec.Command(sharedBinary(t), "--home", t.TempDir(), "serve", "--tools", "lean").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), `--tools: unknown tool profile "lean": use all or core`) {
		t.Fatalf("--tools lean: exit %v, output %q", err, out)
	}
}

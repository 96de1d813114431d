//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server whose store cannot be opened still answers the handshake (it
// is answered before the store opens), then answers the client's calls
// with the reason or closes the session, and exits with the usage code
// and the reason on stderr: it never serves without its store.
func TestServeStdioStoreThatCannotOpen(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "stepwise.db"), bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(sharedBinary(t), "--home", home, "serve")
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err == nil {
		res, callErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "workflow_list", Arguments: map[string]any{}})
		if callErr == nil {
			t.Fatalf("workflow_list answered without a store: %+v", res)
		}
		if !strings.Contains(callErr.Error(), "could not start") && !strings.Contains(callErr.Error(), "closed") && !strings.Contains(callErr.Error(), "EOF") {
			t.Fatalf("want the start's error or a closed session, got %v", callErr)
		}
		_ = cs.Close()
	}
	// Close (or a failed Connect) waits for the process; its state is set.
	if cmd.ProcessState == nil {
		if err := cmd.Wait(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Logf("wait: %v", err)
		}
	}
	if code := cmd.ProcessState.ExitCode(); code != 2 {
		t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "not a database") {
		t.Fatalf("stderr does not say why: %s", stderr.String())
	}
}

// With --expose-workflows the library's wf_ tools are there from the
// session's first listing, and nothing announces them as a change: the
// session starts once the server has (it is not answered before the
// store opens, as without the flag).
func TestServeStdioExposedToolsNeedNoListChanged(t *testing.T) {
	home := libraryHome(t)
	changed := make(chan struct{}, 10)
	cmd := exec.Command(sharedBinary(t), "--home", home, "serve", "--expose-workflows")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range res.Tools {
		found = found || tool.Name == "wf_greet"
	}
	if !found {
		t.Fatal("wf_greet is not in the first listing")
	}
	// A change is announced after a short delay (the SDK gathers them):
	// wait well past it.
	select {
	case <-changed:
		t.Fatal("tools/list_changed sent though the tools did not change after the session started")
	case <-time.After(300 * time.Millisecond):
	}
}

// SIGTERM stops a stdio server cleanly: exit 0, and no error on stderr
// (the SDK's Run logged one for every session ended by a signal).
func TestServeStdioSIGTERMLogsNoError(t *testing.T) {
	var stderr bytes.Buffer
	cmd := exec.Command(sharedBinary(t), "--home", libraryHome(t), "serve")
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil { // the server has started
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close() // waits for the process
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; stderr: %s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "level=ERROR") {
		t.Fatalf("an error logged for a stop by SIGTERM:\n%s", stderr.String())
	}
}

//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const slowWorkflow = `version: 1
name: slow
steps:
  - {id: first, uses: noop}
  - {id: slow, uses: noop, with: {delay: 30s}}
  - {id: last, uses: transform, with: {value: done}}
outputs:
  result: ${{ steps.last.output }}
`

// TestInterruptLeavesRunResumable: Ctrl-C (SIGINT) during a step ends
// `stepwise run` with exit 130 and a one-line message; the run stays
// running (nothing of the interrupted step is recorded) and `stepwise
// resume` finishes it.
func TestInterruptLeavesRunResumable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := sharedBinary(t)
	home := t.TempDir()
	wf := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(wf, []byte(slowWorkflow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--home", home, "run", wf, "--no-input")
	cmd.Env = childEnv()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the first step is recorded, i.e. the slow one runs.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errOut.String(), "✓ first") {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the run did not start: %s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stderr %s", err, errOut.String())
	}
	msg := errOut.String()
	if !strings.Contains(msg, "interrupted; the run stays resumable: stepwise resume ") || strings.Contains(msg, "goroutine") {
		t.Fatalf("stderr %q", msg)
	}
	id := strings.TrimSpace(msg[strings.LastIndex(msg, "stepwise resume ")+len("stepwise resume "):])

	stdout, stderr, code := runCLI(bin, home, "full", "show", id, "--json")
	if code != 0 {
		t.Fatalf("show: %d %s", code, stderr)
	}
	var shown struct {
		Run struct {
			Status string `json:"status"`
			Steps  []struct {
				ID string `json:"id"`
			} `json:"steps"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &shown); err != nil {
		t.Fatal(err)
	}
	if shown.Run.Status != "running" || len(shown.Run.Steps) != 1 || shown.Run.Steps[0].ID != "first" {
		t.Fatalf("after the interrupt: %s", stdout)
	}
	// Resume re-runs the interrupted step (30 s is too long for a test, so
	// the resume is itself interrupted by a cancel from another process).
	resume := exec.Command(bin, "--home", home, "resume", id, "--json")
	resume.Env = childEnv()
	var rOut, rErr bytes.Buffer
	resume.Stdout, resume.Stderr = &rOut, &rErr
	if err := resume.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, stderr, code := runCLI(bin, home, "full", "cancel", id, "--reason", "test over"); code != 0 {
		t.Fatalf("cancel: %d %s", code, stderr)
	}
	done := make(chan error, 1)
	go func() { done <- resume.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = resume.Process.Kill()
		t.Fatalf("resume did not notice the cancel: %s", rErr.String())
	}
	if !strings.Contains(rOut.String(), `"status": "canceled"`) {
		t.Fatalf("resume output %s %s", rOut.String(), rErr.String())
	}
}

//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A step that kills the process that runs it, every time.
const selfKiller = `version: 1
name: self-killer
steps:
  - id: boom
    uses: shell
    with:
      command: 'echo ran >> ran.txt; kill -9 $PPID; sleep 5'
      shell: true
  - id: after
    uses: noop
`

// A step that ends its process (as one that runs it out of memory would)
// does not crash-loop the process that recovers it: resume --all runs it
// again after each of the first 3 kills, and the 4th recovery fails it
// with STEP_CRASHED instead of running it a 5th time.
func TestCrashLoopEndsWithStepCrashed(t *testing.T) {
	bin := sharedBinary(t)
	home := t.TempDir()
	wf := filepath.Join(t.TempDir(), "self-killer.yaml")
	if err := os.WriteFile(wf, []byte(selfKiller), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := detachRuns(t, bin, home, "normal", wf, [][]string{nil})
	id := ids[0]
	ran := func() int {
		b, _ := os.ReadFile(filepath.Join(home, "workspace", "ran.txt"))
		return strings.Count(string(b), "ran\n")
	}
	for i := 1; ; i++ {
		if i > 6 {
			t.Fatalf("resume --all was killed %d times; the step ran %d times", i-1, ran())
		}
		stdout, stderr, code := runCLI(bin, home, "normal", "resume", "--all")
		if code == 0 {
			if !strings.Contains(stderr, "no run is running") {
				t.Fatalf("resume --all exited 0 saying %q", stderr)
			}
			if i != 5 {
				t.Fatalf("resume --all finished at its %d. start, want the 5th (4 kills)", i)
			}
			break
		}
		if code != -1 || ran() != i {
			// -1: killed by a signal.
			t.Fatalf("resume --all %d: exit %d, the step ran %d times\nstdout: %s\nstderr: %s", i, code, ran(), stdout, stderr)
		}
	}
	if n := ran(); n != 4 {
		t.Fatalf("the step ran %d times, want 4 (once, then after each of 3 recoveries)", n)
	}
	stdout, stderr, code := runCLI(bin, home, "normal", "show", id, "--json")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, stderr)
	}
	var shown struct {
		Run struct {
			Status string `json:"status"`
			Error  struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				StepID  string `json:"step_id"`
			} `json:"error"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(stdout), &shown); err != nil {
		t.Fatalf("show --json: %v\n%s", err, stdout)
	}
	r := shown.Run
	want := "the process ended 4 times while this step ran; it is not run again"
	if r.Status != "failed" || r.Error.Code != "STEP_CRASHED" || r.Error.StepID != "boom" || r.Error.Message != want {
		t.Fatalf("show --json: %s", stdout)
	}
}

//go:build linux

package hostile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Item 2: a step that ends the process running it must not end it
// forever. serve recovers an interrupted run at start and runs the step
// again; after --max-recoveries (3) recoveries the step fails with
// STEP_CRASHED instead of running again.

// selfKiller is a workflow whose one step kills its server (the shell
// step's parent) after writing a line to ran.txt in the workspace.
const selfKiller = `version: 1
name: self-killer
steps:
  - id: boom
    uses: shell
    with: {command: 'echo ran >> ran.txt; kill -9 $PPID; sleep 5', shell: true}
`

// crashMessage is the run's error message once the step is given up.
const crashMessage = "the process ended 4 times while this step ran; it is not run again"

// crashCases are item 2's cases.
func crashCases() []Case {
	return []Case{
		{
			Name: "crash: a step that kills serve, at every restart", Transport: Stdio, Want: "STEP_CRASHED",
			Flags: []string{"--allow-shell"}, Deadline: 60 * time.Second,
			Serves: crashLoop,
		},
	}
}

// crashLoop starts a run of selfKiller, which kills its server; restarts
// serve on the same home, each restart recovering the run and being
// killed by it again, until a restart gives the step up: the step ran 4
// times (once, then after each of 3 recoveries), the 5th server answers
// and the run failed with STEP_CRASHED. The restarts the step kills may
// die before they answer initialize (they recover the run as they start):
// each must be killed by the step, not end otherwise.
func crashLoop(ctx context.Context, _ *testing.T, ss *Servers) (string, error) {
	ran := func() int {
		b, _ := os.ReadFile(filepath.Join(ss.Home(), "workspace", "ran.txt"))
		return strings.Count(string(b), "ran\n")
	}
	s, err := ss.Start(ctx, true)
	if err != nil {
		return "", err
	}
	// The answer may not come: the step kills the server as the run starts.
	_, _ = s.conn.Tool(ctx, "run_start", map[string]any{"definition": selfKiller, "wait_seconds": 20})
	for i := 1; i <= 4; i++ {
		st, err := s.exited(ctx)
		if err != nil {
			return "", fmt.Errorf("server %d: %w", i, err)
		}
		if ws, ok := st.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			return "", fmt.Errorf("server %d ended with %v, want killed by the step (SIGKILL)\n%s", i, st, s.log())
		}
		if n := ran(); n != i {
			return "", fmt.Errorf("after server %d the step ran %d times, want %d", i, n, i)
		}
		handshake := i == 4 // the 5th server must answer
		if s, err = ss.Start(ctx, handshake); err != nil {
			return "", err
		}
		if !handshake {
			// It answers, or the step kills it first: both are fine here.
			if s.conn.Handshake(ctx) == nil {
				_, _ = s.conn.Tool(ctx, "run_list", map[string]any{"limit": 1})
			}
		}
	}
	r, err := s.conn.Tool(ctx, "run_list", map[string]any{"limit": 5})
	if err != nil || r.IsError {
		return r.ErrorCode(), fmt.Errorf("run_list on the last server: %v %v", err, r.Structured)
	}
	runs, _ := r.Structured["runs"].([]any)
	if len(runs) != 1 {
		return "", fmt.Errorf("run_list: %d runs, want 1: %v", len(runs), r.Structured)
	}
	id, _ := runs[0].(map[string]any)["run_id"].(string)
	r, err = s.conn.Tool(ctx, "run_get", map[string]any{"run_id": id, "wait_seconds": 20})
	if err != nil || r.IsError {
		return r.ErrorCode(), fmt.Errorf("run_get: %v %v", err, r.Structured)
	}
	runErr, _ := r.Structured["error"].(map[string]any)
	if r.Structured["status"] != "failed" || runErr["step_id"] != "boom" || runErr["message"] != crashMessage {
		return "", fmt.Errorf("run_get: status %v, error %v", r.Structured["status"], runErr)
	}
	if n := ran(); n != 4 {
		return "", fmt.Errorf("the step ran %d times, want 4", n)
	}
	code, _ := runErr["code"].(string)
	return code, nil
}

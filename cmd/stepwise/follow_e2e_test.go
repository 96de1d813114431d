//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"stepwise.dev/stepwise/internal/store/postgres/pgtest"
)

// follower is a `show --follow` process whose output is read line by line.
type follower struct {
	cmd   *exec.Cmd
	lines chan string
	all   strings.Builder
}

// startFollower starts show --follow RUN and returns once it follows.
func startFollower(t *testing.T, bin string, args ...string) *follower {
	t.Helper()
	f := &follower{cmd: exec.Command(bin, args...), lines: make(chan string, 256)}
	out, err := f.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	f.cmd.Stderr = os.Stderr
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.cmd.Process.Kill(); _ = f.cmd.Wait() })
	go func() {
		defer close(f.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f.lines <- sc.Text()
		}
	}()
	for line := range f.lines {
		f.all.WriteString(line + "\n")
		if line == "following:" {
			return f
		}
	}
	t.Fatalf("show --follow ended before following:\n%s", f.all.String())
	return nil
}

// wait reads the rest of the output and returns the exit code.
func (f *follower) wait() (int, string) {
	for line := range f.lines {
		f.all.WriteString(line + "\n")
	}
	err := f.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), f.all.String()
	}
	return 0, f.all.String()
}

// TestShowFollowAcrossProcesses: a detached run, driven by another
// process, is followed by show --follow to its end — on SQLite, where the
// follower reads the store, and on PostgreSQL; a run nobody drives is
// followed until Ctrl-C (130).
func TestShowFollowAcrossProcesses(t *testing.T) {
	bin := sharedBinary(t)
	wf := filepath.Join(t.TempDir(), "steps.yaml")
	doc := "version: 1\nname: steps\nsteps:\n  - {id: first, uses: noop}\n  - {id: nap, sleep: 300ms}\n  - {id: last, uses: noop}\n"
	if err := os.WriteFile(wf, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			base := []string{"--home", t.TempDir()}
			if store == "postgres" {
				if os.Getenv("STEPWISE_TEST_DATABASE_URL") == "" {
					t.Skip("STEPWISE_TEST_DATABASE_URL is not set")
				}
				base = append(base, "--database", pgtest.Schema(t))
			}
			start := func() string {
				out, err := exec.Command(bin, append(base, "run", wf, "--detach", "--json")...).Output()
				var r struct {
					RunID string `json:"run_id"`
				}
				if err != nil || json.Unmarshal(out, &r) != nil || r.RunID == "" {
					t.Fatalf("run --detach: %v\n%s", err, out)
				}
				return r.RunID
			}
			id := start()
			f := startFollower(t, bin, append(base, "show", "--follow", id)...)
			if out, err := exec.Command(bin, append(base, "resume", id)...).CombinedOutput(); err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			code, out := f.wait()
			_, live, _ := strings.Cut(out, "following:\n")
			if code != 0 || !strings.Contains(live, "→ nap\n") || !strings.Contains(live, "✓ last\n") || !strings.Contains(live, "run "+id+": succeeded") {
				t.Fatalf("show --follow: exit %d\n%s", code, out)
			}

			// Nobody drives this one: Ctrl-C ends the following, not the run.
			id = start()
			f = startFollower(t, bin, append(base, "show", "--follow", id)...)
			if err := f.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code, out := f.wait(); code != 130 {
				t.Fatalf("Ctrl-C: exit %d, want 130\n%s", code, out)
			}
			if out, err := exec.Command(bin, append(base, "show", id, "--json")...).Output(); err != nil || !strings.Contains(string(out), `"status": "running"`) {
				t.Fatalf("the run after Ctrl-C: %v\n%s", err, out)
			}
		})
	}
}

package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// Shell runs a program in the workspace. with: {command, args?, shell?,
// env?, dir?, timeout?, stdin?, max_output_bytes?, ok_exit_codes?,
// parse?}. The program runs directly (no shell unless shell: true) with a
// clean environment, its output captured — never the server's stdout,
// which in `stepwise serve` carries JSON-RPC — and its whole process group
// killed when it runs out of time or the step is canceled.
//
// The workspace is the command's working directory and HOME, not a jail:
// a command can reach whatever the server's user can. That is why the
// policy keeps it off for MCP callers unless the operator allows it.
type Shell struct {
	Workspace *Workspace
	Policy    ShellPolicy
	// Path is the PATH commands get (default: the server's, or the
	// system's standard directories).
	Path string
	// Lang is the LANG commands get (default: the server's, or C.UTF-8).
	Lang string
}

// Defaults of the shell action.
const (
	DefaultShellTimeout = 5 * time.Minute
	// DefaultMaxOutput is how much of stdout and of stderr (each) is kept.
	DefaultMaxOutput = 1 << 20
	// waitDelay is how long a killed command's output pipes may stay open
	// (a grandchild that left the process group) before they are closed.
	waitDelay = 2 * time.Second
)

// NewShell returns the shell action with the server's PATH and LANG.
func NewShell(w *Workspace, p ShellPolicy) Shell {
	s := Shell{Workspace: w, Policy: p, Path: os.Getenv("PATH"), Lang: os.Getenv("LANG")}
	if s.Path == "" {
		s.Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	if s.Lang == "" {
		s.Lang = "C.UTF-8"
	}
	return s
}

// Name implements Action.
func (Shell) Name() string { return "shell" }

// Description implements Action.
func (Shell) Description() string {
	return "Run a program in the workspace and capture its output. with: {command (program name or path), args? (list), " +
		"shell? (true: run `sh -c command` with args as $1…; default false: no shell), env? (added to a clean PATH/HOME/LANG environment), " +
		"dir? (relative to the workspace), timeout? (default 5m), stdin?, max_output_bytes? (per stream, default 1 MiB), ok_exit_codes? (default [0]), parse?: text|json}. " +
		"Output: {exit_code, stdout, stderr, truncated, duration_ms}. Servers allow it only with --allow-shell or --allow-shell-cmd."
}

// Safety implements Action: a command can do anything.
func (Shell) Safety() string { return Destructive }

// shellRun is one parsed invocation.
type shellRun struct {
	program   string // as written ("sh" with shell: true)
	argv      []string
	env       map[string]string
	dir       string
	timeout   time.Duration
	stdin     *string
	maxOutput int64
	okCodes   []int64
	parseJSON bool
}

// Run implements Action.
func (s Shell) Run(ctx context.Context, c Call) (any, error) {
	r, err := parseShell(c.Input)
	if err != nil {
		return nil, err
	}
	if err := s.Policy.Check(r.program, r.env); err != nil {
		return nil, err
	}
	if s.Workspace == nil {
		return nil, inputError("shell", "no workspace is configured")
	}
	dir, err := s.Workspace.Resolve(r.dir)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("shell: dir: %w", err)}
	}
	if info, err := os.Stat(s.Workspace.Abs(dir)); err != nil || !info.IsDir() {
		return nil, inputError("shell", "dir %q is not a directory of the workspace", dir.Rel)
	}
	env := s.environment(r.env)
	// A bare name is looked up in the PATH the command gets (a step's env
	// may set it, except under an allowlist: Check refused that), not by
	// exec in the server's own environment.
	path := r.program
	if !strings.ContainsRune(path, '/') {
		if path, err = lookPath(r.program, env["PATH"]); err != nil {
			return nil, inputError("shell", "command %q: %v", r.program, err)
		}
	}
	return s.execute(ctx, c, r, path, s.Workspace.Abs(dir), env)
}

// environment is the clean base environment with the step's overrides.
func (s Shell) environment(overrides map[string]string) map[string]string {
	env := map[string]string{"PATH": s.Path, "HOME": s.Workspace.Real, "LANG": s.Lang}
	for k, v := range overrides {
		env[k] = v
	}
	return env
}

func (s Shell) execute(parent context.Context, c Call, r *shellRun, path, dir string, env map[string]string) (any, error) {
	ctx, cancel := context.WithTimeout(parent, r.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, r.argv[1:]...)
	cmd.Args[0] = r.argv[0]
	cmd.Dir = dir
	cmd.Env = make([]string, 0, len(env)) // never nil: nil would inherit the server's environment
	for _, k := range slices.Sorted(maps.Keys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	if r.stdin != nil {
		cmd.Stdin = strings.NewReader(*r.stdin)
	} // else /dev/null: never the server's stdin
	var mu sync.Mutex // both streams forward lines to one writer
	stdout := newCapture(r.maxOutput, StreamOf(c.Output), &mu)
	stderr := newCapture(r.maxOutput, StreamOf(c.Output), &mu)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	killGroup(cmd)
	cmd.WaitDelay = waitDelay

	started := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(started)
	stdout.flush()
	stderr.flush()

	if parent.Err() != nil {
		// Canceled, or the step's own timeout: the engine says which.
		return nil, fmt.Errorf("shell: %s: %w", r.program, parent.Err())
	}
	if ctx.Err() == context.DeadlineExceeded {
		// A command may hang for a passing reason (a network, a lock):
		// a step that says retry: tries again.
		return nil, &Error{Err: fmt.Errorf("shell: %s timed out after %s; its process group was killed%s", r.program, r.timeout, tailOf(stderr, stdout)), Retryable: true}
	}
	var exitErr *exec.ExitError
	// ErrWaitDelay: the command exited but something it left running kept
	// its output open; its exit code stands.
	if runErr != nil && !errors.As(runErr, &exitErr) && !errors.Is(runErr, exec.ErrWaitDelay) {
		return nil, &Error{Err: fmt.Errorf("shell: start %s: %w", r.program, runErr)}
	}
	code := int64(cmd.ProcessState.ExitCode())
	if code < 0 {
		return nil, &Error{Err: fmt.Errorf("shell: %s was killed (%s)%s", r.program, cmd.ProcessState, tailOf(stderr, stdout)), Retryable: true}
	}
	if !slices.Contains(r.okCodes, code) {
		// Retryable so that `retry:` works for commands that fail for a
		// while (waiting for a host to answer); without retry it fails.
		return nil, &Error{Err: fmt.Errorf("shell: %s exited with code %d%s", r.program, code, tailOf(stderr, stdout)), Retryable: true}
	}
	out := map[string]any{
		"exit_code":   code,
		"stdout":      stdout.text(),
		"stderr":      stderr.text(),
		"truncated":   stdout.truncated || stderr.truncated,
		"duration_ms": elapsed.Milliseconds(),
	}
	if r.parseJSON {
		if stdout.truncated {
			return nil, &Error{Err: fmt.Errorf("shell: %s: stdout was cut at max_output_bytes (%d), so it cannot be parsed as JSON", r.program, r.maxOutput)}
		}
		var v any
		if err := json.Unmarshal(stdout.buf.Bytes(), &v); err != nil {
			return nil, &Error{Err: fmt.Errorf("shell: %s: stdout is not JSON (parse: json): %v", r.program, err)}
		}
		out["stdout"] = v
	}
	return out, nil
}

// tailOf is the end of a failed command's stderr (its stdout when stderr
// is empty), for the step's error message.
func tailOf(stderr, stdout *capture) string {
	t := stderr.tail(10, 2000)
	if t == "" {
		t = stdout.tail(10, 2000)
	}
	if t == "" {
		return ""
	}
	return ":\n" + t
}

//go:build unix

package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var allowAll = ShellPolicy{Enabled: true}

func runShell(t *testing.T, sh Shell, in map[string]any) (map[string]any, error) {
	t.Helper()
	return shellRunCtx(context.Background(), sh, in, nil)
}

func shellRunCtx(ctx context.Context, sh Shell, in map[string]any, output *bytes.Buffer) (map[string]any, error) {
	c := Call{Input: in}
	if output != nil {
		c.Output = output
	}
	out, err := sh.Run(ctx, c)
	if err != nil {
		return nil, err
	}
	return out.(map[string]any), nil
}

func shellOK(t *testing.T, sh Shell, in map[string]any) map[string]any {
	t.Helper()
	out, err := runShell(t, sh, in)
	if err != nil {
		t.Fatalf("%v: %v", in, err)
	}
	return out
}

func TestShellRunsAProgramDirectly(t *testing.T) {
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	var lines bytes.Buffer
	out, err := shellRunCtx(context.Background(), sh, map[string]any{"command": "echo", "args": []any{"hi", 3.0, true}}, &lines)
	if err != nil {
		t.Fatal(err)
	}
	if out["stdout"] != "hi 3 true\n" || out["stderr"] != "" || out["exit_code"] != int64(0) || out["truncated"] != false {
		t.Fatalf("out: %v", out)
	}
	if _, ok := out["duration_ms"].(int64); !ok {
		t.Fatalf("duration_ms: %v", out["duration_ms"])
	}
	if lines.String() != "hi 3 true\n" {
		t.Fatalf("streamed: %q", lines.String())
	}
	// stdin is given; without it the command reads nothing (not the server's stdin).
	if out := shellOK(t, sh, map[string]any{"command": "cat", "stdin": "fed"}); out["stdout"] != "fed" {
		t.Fatalf("stdin: %v", out)
	}
	if out := shellOK(t, sh, map[string]any{"command": "cat"}); out["stdout"] != "" {
		t.Fatalf("no stdin: %v", out)
	}
}

func TestShellHasNoImplicitShell(t *testing.T) {
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	if _, err := runShell(t, sh, map[string]any{"command": "echo hi; touch pwned"}); err == nil || Retryable(err) {
		t.Fatalf("a command line ran: %v", err)
	}
	out := shellOK(t, sh, map[string]any{"command": "echo", "args": []any{"$HOME; touch pwned2 `touch pwned3`"}})
	if out["stdout"] != "$HOME; touch pwned2 `touch pwned3`\n" {
		t.Fatalf("args were interpreted: %v", out)
	}
	for _, f := range []string{"pwned", "pwned2", "pwned3"} {
		if _, err := os.Stat(filepath.Join(s.ws.Real, f)); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	// shell: true is a shell, with args as $1….
	shellOK(t, sh, map[string]any{"command": `printf '%s|%s' "$1" "$2" > out.txt`, "shell": true, "args": []any{"a b", "c"}})
	if data, _ := os.ReadFile(filepath.Join(s.ws.Real, "out.txt")); string(data) != "a b|c" {
		t.Fatalf("shell: %q", data)
	}
}

func TestShellEnvironmentIsClean(t *testing.T) {
	t.Setenv("STEPWISE_SERVER_ONLY", "leaked")
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	out := shellOK(t, sh, map[string]any{"command": "env", "env": map[string]any{"GREETING": "hello", "N": 2.0}})
	env := out["stdout"].(string)
	if strings.Contains(env, "STEPWISE_SERVER_ONLY") || strings.Contains(env, "leaked") {
		t.Fatalf("the server's environment leaked:\n%s", env)
	}
	for _, want := range []string{"HOME=" + s.ws.Real + "\n", "GREETING=hello\n", "N=2\n", "PATH=" + sh.Path + "\n", "LANG="} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
}

func TestShellDirStaysInside(t *testing.T) {
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	out := shellOK(t, sh, map[string]any{"command": "pwd", "dir": "sub"})
	if out["stdout"] != filepath.Join(s.ws.Real, "sub")+"\n" {
		t.Fatalf("pwd: %v", out)
	}
	if out := shellOK(t, sh, map[string]any{"command": "pwd"}); out["stdout"] != s.ws.Real+"\n" {
		t.Fatalf("default dir: %v", out)
	}
	for what, p := range s.escapes() {
		out, err := runShell(t, sh, map[string]any{"command": "touch", "args": []any{"marker"}, "dir": p})
		if !errors.Is(err, ErrOutsideWorkspace) || Retryable(err) {
			t.Errorf("dir %s (%s): %v %v", what, p, out, err)
		}
	}
	s.untouched(t)
	if _, err := runShell(t, sh, map[string]any{"command": "pwd", "dir": "missing"}); err == nil {
		t.Fatal("ran in a missing directory")
	}
}

// A timeout kills the whole process group: a background child too, and in
// time (the bound is a sanity check with a wide margin, not a speed target).
func TestShellTimeoutKillsTheProcessGroup(t *testing.T) {
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	started := time.Now()
	_, err := runShell(t, sh, map[string]any{"command": "sleep 30 & echo $! > child.pid; wait", "shell": true, "timeout": "300ms"})
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err: %v", err)
	}
	if d := time.Since(started); d > 15*time.Second {
		t.Fatalf("took %s", d)
	}
	assertGone(t, filepath.Join(s.ws.Real, "child.pid"))

	// Canceling the step's context kills it the same way.
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err = shellRunCtx(ctx, sh, map[string]any{"command": "sleep 30 & echo $! > child2.pid; wait", "shell": true}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
	assertGone(t, filepath.Join(s.ws.Real, "child2.pid"))
}

// assertGone waits for the process whose pid is in file to be gone (or a
// zombie waiting for its new parent to reap it).
func assertGone(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if errors.Is(err, syscall.ESRCH) || bytes.Contains(stat, []byte(") Z ")) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the background child %d survived", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestShellOutputIsCapped(t *testing.T) {
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	// The command writes far more than is kept and still exits 0: the
	// rest is drained, not refused.
	out := shellOK(t, sh, map[string]any{"command": "head -c 200000 /dev/zero | tr '\\0' a; echo err >&2", "shell": true, "max_output_bytes": 1000})
	if len(out["stdout"].(string)) != 1000 || out["truncated"] != true || out["stderr"] != "err\n" || out["exit_code"] != int64(0) {
		t.Fatalf("stdout %d bytes, %v", len(out["stdout"].(string)), out["truncated"])
	}
	if out := shellOK(t, sh, map[string]any{"command": "echo", "args": []any{"short"}, "max_output_bytes": 1000}); out["truncated"] != false {
		t.Fatalf("short: %v", out)
	}
}

func TestShellExitCodes(t *testing.T) {
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	script := "echo first >&2; echo 'it broke' >&2; exit 3"
	_, err := runShell(t, sh, map[string]any{"command": script, "shell": true})
	if err == nil || !strings.Contains(err.Error(), "exited with code 3") || !strings.Contains(err.Error(), "first\nit broke") {
		t.Fatalf("err: %v", err)
	}
	out := shellOK(t, sh, map[string]any{"command": script, "shell": true, "ok_exit_codes": []any{0, 3}})
	if out["exit_code"] != int64(3) {
		t.Fatalf("accepted code: %v", out)
	}
	// Without stderr, the end of stdout explains the failure.
	if _, err := runShell(t, sh, map[string]any{"command": "echo said so; false", "shell": true}); err == nil || !strings.Contains(err.Error(), "said so") {
		t.Fatalf("stdout tail: %v", err)
	}
	if _, err := runShell(t, sh, map[string]any{"command": "no-such-program-xyz"}); err == nil || Retryable(err) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing program: %v", err)
	}
}

func TestShellParsesJSON(t *testing.T) {
	s := newSandbox(t)
	sh := NewShell(s.ws, allowAll)
	out := shellOK(t, sh, map[string]any{"command": "printf", "args": []any{`{"a": [1, "b"]}`}, "parse": "json"})
	if m, ok := out["stdout"].(map[string]any); !ok || fmt.Sprint(m["a"]) != "[1 b]" {
		t.Fatalf("parsed: %#v", out["stdout"])
	}
	if _, err := runShell(t, sh, map[string]any{"command": "echo", "args": []any{"not json"}, "parse": "json"}); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Fatalf("not json: %v", err)
	}
}

func TestShellPolicy(t *testing.T) {
	s := newSandbox(t)
	off := NewShell(s.ws, ShellPolicy{})
	_, err := runShell(t, off, map[string]any{"command": "touch", "args": []any{"ran"}})
	if !errors.Is(err, ErrShellNotAllowed) || Retryable(err) || !strings.Contains(err.Error(), "--allow-shell") || !strings.Contains(err.Error(), CodeShellNotAllowed) {
		t.Fatalf("off: %v", err)
	}
	if _, err := os.Stat(filepath.Join(s.ws.Real, "ran")); err == nil {
		t.Fatal("a refused command ran")
	}
	listed := NewShell(s.ws, ShellPolicy{Enabled: true, Allow: []string{"echo", "/bin/pwd"}})
	shellOK(t, listed, map[string]any{"command": "echo", "args": []any{"ok"}})
	shellOK(t, listed, map[string]any{"command": "/bin/pwd"})
	for _, in := range []map[string]any{
		{"command": "touch", "args": []any{"ran"}},
		{"command": "/bin/echo"},           // a path is not the name
		{"command": "./echo"},              // nor a file of the workspace
		{"command": "echo", "shell": true}, // the program is sh
		{"command": "echo", "env": map[string]any{"PATH": s.ws.Real}},
		{"command": "echo", "env": map[string]any{"LD_PRELOAD": "x.so"}},
	} {
		_, err := runShell(t, listed, in)
		if !errors.Is(err, ErrShellNotAllowed) || !strings.Contains(err.Error(), "--allow-shell") {
			t.Errorf("%v: %v", in, err)
		}
	}
	if _, err := runShell(t, listed, map[string]any{"command": "touch"}); err == nil || !strings.Contains(err.Error(), "--allow-shell-cmd touch") {
		t.Fatalf("the refusal names the flag to give: %v", err)
	}
}

func TestShellInputSchema(t *testing.T) {
	r := NewRegistry(Shell{})
	sh, _ := r.Get("shell")
	ok := map[string]any{"command": "go", "args": []any{"test", 1}, "env": map[string]any{"A_1": "x"}, "ok_exit_codes": []any{0, 1}, "timeout": "1m", "parse": "json"}
	if vs := r.CheckInput(sh, ok); len(vs) != 0 {
		t.Fatalf("valid: %v", vs)
	}
	if vs := r.CheckInput(sh, map[string]any{"cmd": "go", "env": map[string]any{"A=B": "x"}, "ok_exit_codes": []any{300}}); len(vs) != 4 {
		t.Fatalf("invalid: %v", vs)
	}
}

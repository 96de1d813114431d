package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// buildBinary builds cmd/stepwise into dir as the README builds it (a
// static binary: CGO_ENABLED=0): the servers measured are the binary an
// agent would start, not the packages in this process.
func buildBinary(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "stepwise")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "stepwise.dev/stepwise/cmd/stepwise")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	return bin, nil
}

// stdio starts a server command and connects to it over its standard
// input and output.
func stdio(ctx context.Context, cmd *exec.Cmd) (*Session, error) {
	cmd.Stderr = io.Discard
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	cs, err := connect(ctx, newStdioWire(in, out), cmd)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return cs, nil
}

// stepwiseStdio starts `stepwise serve` on home over stdio.
func stepwiseStdio(ctx context.Context, bin, home, durability string) (*Session, error) {
	return stdio(ctx, exec.Command(bin, "--home", home, "--durability", durability, "serve"))
}

// stdioWith starts `stepwise --home home ARGS…` (a serve command) over
// stdio.
func stdioWith(ctx context.Context, bin, home string, args ...string) (*Session, error) {
	return stdio(ctx, exec.Command(bin, append([]string{"--home", home}, args...)...))
}

// serving is the line both servers print on stderr once they listen.
var serving = regexp.MustCompile(`serving MCP at (\S+)`)

// httpServer starts a server that listens on 127.0.0.1:0 and reports its
// URL on stderr, and connects to it over streamable HTTP.
func httpServer(ctx context.Context, cmd *exec.Cmd) (*Session, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	fail := func(err error) (*Session, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	url := ""
	lines := bufio.NewScanner(stderr)
	for url == "" && lines.Scan() {
		if m := serving.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		return fail(fmt.Errorf("%s printed no address", cmd.Path))
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	cs, err := connect(ctx, newHTTPWire(url), cmd)
	if err != nil {
		return fail(fmt.Errorf("connect to %s: %w", url, err))
	}
	return cs, nil
}

// stepwiseHTTP starts `stepwise serve --http 127.0.0.1:0` on home.
func stepwiseHTTP(ctx context.Context, bin, home, durability string) (*Session, error) {
	return httpServer(ctx, exec.Command(bin, "--home", home, "--durability", durability, "serve", "--http", "127.0.0.1:0"))
}

// Memory is a process's resident set in MiB (VmRSS) and its two parts:
// anonymous memory (heap, stacks, SQLite's caches) and file-backed pages
// (mostly the executable's code and data touched so far).
type Memory struct{ RSS, Anon, File float64 }

func (m Memory) String() string {
	return fmt.Sprintf("%.1f MB (anonymous %.1f, file-backed %.1f)", m.RSS, m.Anon, m.File)
}

// memory reads a process's resident set from /proc/PID/status.
func memory(pid int) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	fields := map[string]*float64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for line := range strings.Lines(string(data)) {
		name, rest, _ := strings.Cut(line, "\t")
		if dst, ok := fields[name]; ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				return Memory{}, fmt.Errorf("%s %q: %w", name, rest, err)
			}
			*dst = kb / 1024
			delete(fields, name)
		}
	}
	if len(fields) > 0 {
		return Memory{}, errors.New("/proc/PID/status lacks VmRSS, RssAnon or RssFile")
	}
	return m, nil
}

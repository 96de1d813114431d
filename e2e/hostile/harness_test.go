//go:build linux

package hostile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The suite's bounds. A deadline is not a speed target: "within seconds",
// generous for a loaded 2-core machine; the times are reported, not
// asserted against anything tighter.
const (
	// defaultDeadline bounds a case's requests when the case sets none.
	defaultDeadline = 30 * time.Second
	// peakLimit is the most resident memory the server may reach.
	peakLimit = 512 << 20
	// killLimit is where the watchdog stops a server that is on its way to
	// exhausting the machine's memory (the case then fails).
	killLimit = 1536 << 20
)

var (
	reportFlag = flag.String("hostile.report", "", "write the hostile-input report table to this file (also $STEPWISE_HOSTILE_REPORT; JSON when it ends in .json)")
	longFlag   = flag.Bool("hostile.long", false, "run the long cases too (also $STEPWISE_HOSTILE_LONG=1)")
)

// long says whether the long cases run.
func long() bool { return *longFlag || os.Getenv("STEPWISE_HOSTILE_LONG") == "1" }

// Transport is how a case reaches the server.
type Transport string

// The transports a case can use.
const (
	Stdio Transport = "stdio"
	HTTP  Transport = "http"
)

// Case is one hostile input. Run sends it over c and checks the answer: it
// returns what the table reports as the outcome (the error code, or a
// short word for an answer that is not an error) and an error when the
// answer is not the structured one expected. The harness then checks the
// outcome against Want, that the server still answers a tools/call, and
// its peak RSS.
type Case struct {
	Name      string
	Transport Transport
	// Flags are given to `stepwise serve` after the harness's own (a
	// --http=ADDR overrides the harness's); "{home}" in a flag stands for
	// the server's home directory.
	Flags []string
	// Env is added to the server's environment (which has no STEPWISE_
	// variables of the test's own).
	Env []string
	// Setup prepares the server's home before it starts (optional).
	Setup func(t *testing.T, home string)
	// NoHandshake leaves the session uninitialized: Run starts from
	// nothing (and may call Conn.Handshake itself).
	NoHandshake bool
	// Token is the bearer token the client sends (HTTP).
	Token string
	// NewSession checks that the server still serves from a new session
	// (HTTP only) instead of the case's, for a case whose request may end
	// its own session.
	NewSession bool
	// Want is the outcome Run must return.
	Want string
	// Long marks a case that takes tens of seconds: it runs with
	// -hostile.long or $STEPWISE_HOSTILE_LONG=1 (CI's hostile-input step),
	// not in every `go test ./...`.
	Long bool
	// Deadline bounds Run (defaultDeadline when zero).
	Deadline time.Duration
	// PeakLimit is the most resident memory the server may reach, when
	// lower than the suite's (peakLimit).
	PeakLimit uint64
	Run       func(ctx context.Context, t *testing.T, c *Conn) (outcome string, err error)
	// Serves, set instead of Run, runs a case that starts its own servers
	// one after another on one home (a server a workflow ends, its
	// restarts; a home read after its server exited): it returns the
	// outcome like Run. The harness then checks that the last server
	// started still answers a tools/call, and the peak RSS of every one.
	Serves func(ctx context.Context, t *testing.T, s *Servers) (outcome string, err error)
	// Refuses marks a case whose server must refuse to start (Run unset):
	// serve must exit with this code without saying where it serves, one
	// line of its stderr holding RefusalLine. The outcome is "exit N".
	Refuses     int
	RefusalLine string
}

// row is one line of the report.
type row struct {
	Case      string  `json:"case"`
	Transport string  `json:"transport"`
	Outcome   string  `json:"outcome"`
	WallMS    float64 `json:"wall_ms"`
	PeakRSSMB float64 `json:"peak_rss_mb"`
	Pass      bool    `json:"pass"`
	Note      string  `json:"note,omitempty"`
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary is the stepwise binary under test: $STEPWISE_HOSTILE_BIN, or
// built once (CGO_ENABLED=0, as the README builds it).
func binary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("STEPWISE_HOSTILE_BIN"); p != "" {
		return p
	}
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stepwise-hostile")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "stepwise")
		build := exec.Command("go", "build", "-o", binPath, "stepwise.dev/stepwise/cmd/stepwise")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// server is a running `stepwise serve` and what the harness watches of it.
type server struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer // the server's log, for a failure's message
	logMu  *sync.Mutex
	conn   *Conn
	url    string // HTTP: the MCP endpoint

	watchStop chan struct{}
	watchDone chan struct{}
	killed    bool   // by the watchdog
	lastRSS   uint64 // the watchdog's last sample, bytes
	maxHWM    uint64 // the highest VmHWM the watchdog read, bytes
}

// lockedWriter keeps the server's log for the failure message, up to 1 MB.
type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < 1<<20 {
		w.buf.Write(p)
	}
	return len(p), nil
}

func (s *server) log() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	out := s.stderr.String()
	if len(out) > 4000 {
		out = "…" + out[len(out)-4000:]
	}
	return out
}

// serverEnv is the test's environment without the variables that change
// what serve allows (tokens, environment policy): every case starts from
// serve's defaults plus its flags.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STEPWISE_") {
			env = append(env, kv)
		}
	}
	return env
}

// start starts serve for c in a fresh home and connects a session.
func start(t *testing.T, ctx context.Context, c Case) *server {
	t.Helper()
	home := t.TempDir()
	if c.Setup != nil {
		c.Setup(t, home)
	}
	s := launch(t, ctx, c, home)
	if !c.NoHandshake {
		if err := s.conn.Handshake(ctx); err != nil {
			t.Fatalf("handshake: %v\n%s", err, s.log())
		}
	}
	return s
}

// launch starts serve for c in home and connects a session without a
// handshake; the server is stopped when the test ends.
func launch(t *testing.T, ctx context.Context, c Case, home string) *server {
	t.Helper()
	cmd := exec.Command(binary(t), serveArgs(c, home)...)
	cmd.Env = append(serverEnv(), c.Env...)
	s := &server{cmd: cmd, stderr: &bytes.Buffer{}, logMu: &sync.Mutex{}, watchStop: make(chan struct{}), watchDone: make(chan struct{})}
	logw := lockedWriter{s.logMu, s.stderr}
	var err error
	switch c.Transport {
	case Stdio:
		in, ierr := cmd.StdinPipe()
		out, oerr := cmd.StdoutPipe()
		if err = errors.Join(ierr, oerr); err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = logw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		w := newStdioWire(in, out)
		s.conn = &Conn{wire: w, Stdio: w}
	case HTTP:
		errPipe, perr := cmd.StderrPipe()
		if perr != nil {
			t.Fatal(perr)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		s.url, err = serveAddress(ctx, errPipe, logw)
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("serve --http: %v\n%s", err, s.log())
		}
		w := newHTTPWire(s.url)
		w.Token = c.Token
		s.conn = &Conn{wire: w, HTTP: w}
	default:
		t.Fatalf("case %s: unknown transport %q", c.Name, c.Transport)
	}
	go s.watch()
	t.Cleanup(s.stop)
	return s
}

// serveArgs is the command line of serve for c in home.
func serveArgs(c Case, home string) []string {
	args := []string{"--home", home, "serve"}
	if c.Transport == HTTP {
		args = append(args, "--http=127.0.0.1:0")
	}
	for _, f := range c.Flags {
		args = append(args, strings.ReplaceAll(f, "{home}", home))
	}
	return args
}

var servingRe = regexp.MustCompile(`serving MCP at (\S+)`)

// serveAddress reads serve's stderr until it says where it serves, then
// copies the rest to log.
func serveAddress(ctx context.Context, stderr io.Reader, log io.Writer) (string, error) {
	found := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stderr)
		sent := false
		for {
			line, err := r.ReadString('\n')
			_, _ = log.Write([]byte(line))
			if m := servingRe.FindStringSubmatch(line); m != nil && !sent {
				found <- m[1]
				sent = true
			}
			if err != nil {
				if !sent {
					close(found)
				}
				return
			}
		}
	}()
	select {
	case url, ok := <-found:
		if !ok {
			return "", errors.New("exited before it said where it serves")
		}
		return url, nil
	case <-ctx.Done():
		return "", errors.New("did not say where it serves")
	}
}

// watch samples the server's resident memory and kills it past killLimit,
// so that a server that lost its bound fails the case instead of taking
// the machine's memory.
func (s *server) watch() {
	defer close(s.watchDone)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-s.watchStop:
				return
			case <-tick.C:
			}
		}
		rss, err := procStatus(s.cmd.Process.Pid, "VmRSS")
		if err != nil {
			return // exited
		}
		if hwm, err := procStatus(s.cmd.Process.Pid, "VmHWM"); err == nil {
			s.maxHWM = max(s.maxHWM, hwm)
		}
		s.lastRSS = rss
		if rss > killLimit {
			s.killed = true
			_ = s.cmd.Process.Kill()
			return
		}
	}
}

// procStatus reads a memory field (VmRSS, VmHWM) of /proc/PID/status, in
// bytes.
func procStatus(pid int, field string) (uint64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %q", field, line)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// peak stops the watchdog and returns the server's peak resident memory
// (VmHWM), read while it still runs.
func (s *server) peak() (uint64, error) {
	select {
	case <-s.watchStop:
	default:
		close(s.watchStop)
	}
	<-s.watchDone
	if s.killed {
		return s.lastRSS, fmt.Errorf("killed by the watchdog at %d MB resident", s.lastRSS>>20)
	}
	return procStatus(s.cmd.Process.Pid, "VmHWM")
}

// exited waits until the server ended by itself (its stdout closed: a
// stdio server) and returns how it ended. Its peak RSS is then the
// watchdog's samples' (see sampledPeak).
func (s *server) exited(ctx context.Context) (*os.ProcessState, error) {
	if s.conn.Stdio == nil {
		return nil, errors.New("exited: a stdio server only")
	}
	select {
	case <-s.conn.Stdio.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("the server did not exit: %w", ctx.Err())
	}
	s.stop()
	return s.cmd.ProcessState, nil
}

// stopped stops the server (stop) and returns how it ended.
func (s *server) stopped() *os.ProcessState {
	s.stop()
	return s.cmd.ProcessState
}

// sampledPeak stops the watchdog and returns the highest peak resident
// memory (VmHWM) it read, or read now if the server still runs: the peak
// of a server that may have exited.
func (s *server) sampledPeak() (uint64, error) {
	select {
	case <-s.watchStop:
	default:
		close(s.watchStop)
	}
	<-s.watchDone
	if s.killed {
		return s.lastRSS, fmt.Errorf("killed by the watchdog at %d MB resident", s.lastRSS>>20)
	}
	peak := s.maxHWM
	if hwm, err := procStatus(s.cmd.Process.Pid, "VmHWM"); err == nil {
		peak = max(peak, hwm)
	}
	return peak, nil
}

// stop ends the server: stdin closed (stdio) or SIGTERM (HTTP), killed if
// it has not exited within 10 s.
func (s *server) stop() {
	select {
	case <-s.watchStop:
	default:
		close(s.watchStop)
	}
	if s.conn.Stdio != nil {
		s.conn.Stdio.close()
	} else {
		s.conn.HTTP.close()
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// alive checks that the server still serves: a tools/call answered, over
// the case's own session, or a new one (HTTP) when newSession.
func (s *server) alive(ctx context.Context, newSession bool) error {
	conn := s.conn
	switch {
	case newSession:
		if conn.HTTP == nil {
			return errors.New("NewSession over stdio: stdio has one session")
		}
		w := newHTTPWire(s.url)
		w.Token = s.conn.HTTP.Token
		defer w.close()
		conn = &Conn{wire: w, HTTP: w}
		fallthrough
	case !conn.initialized:
		if err := conn.Handshake(ctx); err != nil {
			return fmt.Errorf("handshake after the case: %w", err)
		}
	}
	r, err := conn.Tool(ctx, "run_list", map[string]any{"limit": 1})
	if err != nil {
		return fmt.Errorf("run_list after the case: %w", err)
	}
	if r.IsError {
		return fmt.Errorf("run_list after the case: %s", r.ErrorCode())
	}
	return nil
}

// runCase runs one case and fills its report row; failures are the
// subtest's.
func runCase(t *testing.T, c Case, r *row) {
	if c.Refuses != 0 {
		runRefusal(t, c, r)
		return
	}
	if c.Serves != nil {
		runServes(t, c, r)
		return
	}
	deadline := c.Deadline
	if deadline == 0 {
		deadline = defaultDeadline
	}
	startCtx, cancel := context.WithTimeout(context.Background(), defaultDeadline)
	defer cancel()
	s := start(t, startCtx, c)
	r.Note = ""

	ctx, cancelRun := context.WithTimeout(context.Background(), deadline)
	began := time.Now()
	outcome, err := c.Run(ctx, t, s.conn)
	r.WallMS = float64(time.Since(began).Microseconds()) / 1000
	cancelRun()
	r.Outcome = outcome
	var fails []string
	if err != nil {
		fails = append(fails, err.Error())
	} else if outcome != c.Want {
		fails = append(fails, fmt.Sprintf("outcome %q, want %q", outcome, c.Want))
	}
	if err == nil {
		aliveCtx, cancelAlive := context.WithTimeout(context.Background(), defaultDeadline)
		if aerr := s.alive(aliveCtx, c.NewSession); aerr != nil {
			fails = append(fails, aerr.Error())
		}
		cancelAlive()
	}
	peak, perr := s.peak()
	r.PeakRSSMB = float64(peak) / (1 << 20)
	limit := uint64(peakLimit)
	if c.PeakLimit != 0 {
		limit = min(limit, c.PeakLimit)
	}
	if perr != nil {
		fails = append(fails, "peak RSS: "+perr.Error())
	} else if peak >= limit {
		fails = append(fails, fmt.Sprintf("peak RSS %d MB, want under %d MB", peak>>20, limit>>20))
	}
	r.Pass = len(fails) == 0
	if !r.Pass {
		r.Note = strings.Join(fails, "; ")
		t.Errorf("%s\nserver log:\n%s", r.Note, s.log())
	}
}

// Servers starts the servers of a case that runs several, one after
// another on one home (Case.Serves).
type Servers struct {
	t    *testing.T
	c    Case
	home string
	all  []*server
}

// Home is the servers' home directory.
func (ss *Servers) Home() string { return ss.home }

// Start starts serve on the home with the case's flags and environment
// and connects a session, initialized when handshake is set (an error
// then if the server does not answer initialize).
func (ss *Servers) Start(ctx context.Context, handshake bool) (*server, error) {
	s := launch(ss.t, ctx, ss.c, ss.home)
	ss.all = append(ss.all, s)
	if handshake {
		if err := s.conn.Handshake(ctx); err != nil {
			return s, fmt.Errorf("server %d: %w\n%s", len(ss.all), err, s.log())
		}
	}
	return s, nil
}

// runServes runs a case of several servers (Case.Serves) and fills its
// report row: the peak RSS is the highest of its servers'.
func runServes(t *testing.T, c Case, r *row) {
	deadline := c.Deadline
	if deadline == 0 {
		deadline = defaultDeadline
	}
	ss := &Servers{t: t, c: c, home: t.TempDir()}
	if c.Setup != nil {
		c.Setup(t, ss.home)
	}
	r.Note = ""
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	began := time.Now()
	outcome, err := c.Serves(ctx, t, ss)
	r.WallMS = float64(time.Since(began).Microseconds()) / 1000
	cancel()
	r.Outcome = outcome
	var fails []string
	if err != nil {
		fails = append(fails, err.Error())
	} else if outcome != c.Want {
		fails = append(fails, fmt.Sprintf("outcome %q, want %q", outcome, c.Want))
	}
	if err == nil {
		if len(ss.all) == 0 {
			fails = append(fails, "the case started no server")
		} else {
			aliveCtx, cancelAlive := context.WithTimeout(context.Background(), defaultDeadline)
			if aerr := ss.all[len(ss.all)-1].alive(aliveCtx, c.NewSession); aerr != nil {
				fails = append(fails, aerr.Error())
			}
			cancelAlive()
		}
	}
	limit := uint64(peakLimit)
	if c.PeakLimit != 0 {
		limit = min(limit, c.PeakLimit)
	}
	var logs []string
	for i, s := range ss.all {
		peak, perr := s.sampledPeak()
		r.PeakRSSMB = max(r.PeakRSSMB, float64(peak)/(1<<20))
		if perr != nil {
			fails = append(fails, fmt.Sprintf("server %d: peak RSS: %v", i+1, perr))
		} else if peak >= limit {
			fails = append(fails, fmt.Sprintf("server %d: peak RSS %d MB, want under %d MB", i+1, peak>>20, limit>>20))
		}
		logs = append(logs, fmt.Sprintf("server %d:\n%s", i+1, s.log()))
	}
	r.Pass = len(fails) == 0
	if !r.Pass {
		r.Note = strings.Join(fails, "; ")
		t.Errorf("%s\nserver logs:\n%s", r.Note, strings.Join(logs, "\n"))
	}
}

// runRefusal runs serve for a case that wants it to refuse to start and
// fills its report row: the exit code as the outcome, the wall time until
// it exited and its peak RSS as last sampled while it ran (the rusage of a
// child counts the test's own memory it was forked from).
func runRefusal(t *testing.T, c Case, r *row) {
	home := t.TempDir()
	if c.Setup != nil {
		c.Setup(t, home)
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), serveArgs(c, home)...)
	cmd.Env = append(serverEnv(), c.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var peak uint64
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			hwm, err := procStatus(cmd.Process.Pid, "VmHWM")
			if err != nil {
				return // exited (a zombie has no memory)
			}
			peak = max(peak, hwm)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	err := cmd.Wait()
	r.WallMS = float64(time.Since(began).Microseconds()) / 1000
	<-sampled
	r.PeakRSSMB = float64(peak) / (1 << 20)
	r.Note = ""
	var fails []string
	var exit *exec.ExitError
	switch {
	case err == nil:
		r.Outcome = "exit 0"
	case errors.As(err, &exit) && exit.Exited():
		r.Outcome = fmt.Sprintf("exit %d", exit.ExitCode())
	default:
		r.Outcome = "no exit"
		fails = append(fails, fmt.Sprintf("serve did not exit by itself: %v", err))
	}
	if want := fmt.Sprintf("exit %d", c.Refuses); r.Outcome != want {
		fails = append(fails, fmt.Sprintf("outcome %q, want %q", r.Outcome, want))
	}
	log := stderr.String()
	if strings.Contains(log, "serving MCP at") {
		fails = append(fails, "it said where it serves before it refused")
	}
	if !strings.Contains(log, c.RefusalLine) {
		fails = append(fails, fmt.Sprintf("no line of its stderr says %q", c.RefusalLine))
	}
	if peak >= peakLimit {
		fails = append(fails, fmt.Sprintf("peak RSS %d MB, want under %d MB", peak>>20, peakLimit>>20))
	}
	r.Pass = len(fails) == 0
	if !r.Pass {
		r.Note = strings.Join(fails, "; ")
		t.Errorf("%s\nserver log:\n%s", r.Note, log)
	}
}

// report formats the rows as a table.
func report(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-62s %-9s %-22s %10s %13s  %s\n", "case", "transport", "outcome", "wall ms", "peak RSS MB", "result")
	for _, r := range rows {
		res := "ok"
		if !r.Pass {
			res = "FAIL: " + r.Note
		}
		fmt.Fprintf(&b, "%-62s %-9s %-22s %10.1f %13.1f  %s\n", r.Case, r.Transport, r.Outcome, r.WallMS, r.PeakRSSMB, res)
	}
	return b.String()
}

// writeReport writes the table where -hostile.report or
// $STEPWISE_HOSTILE_REPORT says, as JSON for a .json name.
func writeReport(t *testing.T, rows []row) {
	path := *reportFlag
	if path == "" {
		path = os.Getenv("STEPWISE_HOSTILE_REPORT")
	}
	if path == "" {
		return
	}
	data := []byte(report(rows))
	if strings.HasSuffix(path, ".json") {
		var err error
		if data, err = json.MarshalIndent(rows, "", "  "); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Errorf("report: %v", err)
	}
}

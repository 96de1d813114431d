//go:build linux

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// ptyBinary builds the stepwise binary once for the pty tests.
var ptyBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "stepwise-pty-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "stepwise")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/stepwise").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// ptyTerm is a stepwise process whose stdin and stderr are a
// pseudo-terminal (so it asks there) and whose stdout is captured.
type ptyTerm struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	stdout bytes.Buffer

	mu     sync.Mutex
	screen bytes.Buffer // everything the process wrote to the terminal
	seen   int          // how much of screen waitFor has consumed
	wake   chan struct{}
	done   chan struct{}
}

// startPty runs the binary with args in a new session whose controlling
// terminal is a fresh pty; it skips the test when ptys are unavailable.
func startPty(t *testing.T, args ...string) *ptyTerm {
	t.Helper()
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("no /dev/ptmx")
	}
	bin, err := ptyBinary()
	if err != nil {
		t.Fatal(err)
	}
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := pty.Setsize(master, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	p := &ptyTerm{t: t, master: master, wake: make(chan struct{}, 1), done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=1")
	p.cmd.Stdin, p.cmd.Stderr, p.cmd.Stdout = tty, tty, &p.stdout
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				p.mu.Lock()
				p.screen.Write(buf[:n])
				p.mu.Unlock()
				select {
				case p.wake <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		master.Close()
	})
	return p
}

// waitFor waits until text appears on the terminal after what an earlier
// waitFor found.
func (p *ptyTerm) waitFor(ctx context.Context, text string) error {
	for {
		p.mu.Lock()
		i := strings.Index(p.screen.String()[p.seen:], text)
		if i >= 0 {
			p.seen += i + len(text)
		}
		p.mu.Unlock()
		if i >= 0 {
			return nil
		}
		select {
		case <-p.wake:
		case <-ctx.Done():
			return fmt.Errorf("%q never appeared on the terminal", text)
		}
	}
}

func (p *ptyTerm) typeText(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.master, s); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *ptyTerm) wait(ctx context.Context) (int, error) {
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), nil
		}
		return 0, err
	case <-ctx.Done():
		// Its goroutines, on the terminal, tell where it hangs.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = p.cmd.Process.Kill()
			<-exited
		}
		<-p.done
		p.mu.Lock()
		defer p.mu.Unlock()
		return -1, fmt.Errorf("the run never finished; terminal:\n%s", strings.ReplaceAll(p.screen.String(), "\r", ""))
	}
}

const ptyQuestions = `version: 1
name: typed
steps:
  - id: a
    ask: {prompt: "Question-one?"}
  - id: b
    ask: {prompt: "Question-two?"}
  - id: between
    uses: log
    with: {message: "between the questions"}
  - id: sure
    ask: {prompt: "Sure-about-it?", type: boolean}
  - id: c
    ask: {prompt: "Question-three?"}
  - id: ports
    ask:
      prompt: Open-ports?
      type: multi-choice
      choices: [22, 80, 443, 8080]
      default: [22, 80, 443]
  - id: d
    ask:
      prompt: Contact
      fields:
        - {name: e, prompt: "Field-one?"}
        - {name: f, prompt: "Field-two?"}
outputs:
  a: ${{ steps.a.answer }}
  b: ${{ steps.b.answer }}
  c: ${{ steps.c.answer }}
  sure: ${{ steps.sure.answer }}
  ports: ${{ steps.ports.answer }}
  e: ${{ steps.d.answer.e }}
  f: ${{ steps.d.answer.f }}
`

// TestTerminalKeepsEveryKeystroke drives `stepwise run` through a real
// pseudo-terminal: answers typed at once (ahead of the questions) and with
// pauses between them are all recorded exactly, every time.
func TestTerminalKeepsEveryKeystroke(t *testing.T) {
	wf := write(t, "typed.yaml", ptyQuestions)
	want := map[string]any{"a": "alpha", "b": "bravo", "c": "charlie", "e": "delta", "f": "echo", "sure": true, "ports": "[22 80 443]"}
	delays := []time.Duration{0, 0, 20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond}
	for i := range 20 {
		delay := delays[i%len(delays)]
		t.Run(fmt.Sprintf("%d-%s", i, delay), func(t *testing.T) {
			p := startPty(t, "--home", t.TempDir(), "run", wf, "--json")
			// The deadline starts once the process runs (the binary is built on first use).
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			keys := []struct{ prompt, text string }{
				{"Question-one?", "alpha\r"},
				{"Question-two?", "bravo\r"},
				{"Sure-about-it?", "y"},
				{"Question-three?", "charlie\r"},
				{"Open-ports?", "\r"}, // the default
				{"Field-one?", "delta\r"},
				{"", "echo\r"},
			}
			for i, k := range keys {
				// A person reads the question, then types; with no delay,
				// everything after the first answer is typed ahead.
				if (delay > 0 || i == 0) && k.prompt != "" {
					if err := p.waitFor(ctx, k.prompt); err != nil {
						t.Fatal(err)
					}
					time.Sleep(delay)
				}
				p.typeText(k.text)
			}
			code, err := p.wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Status  string         `json:"status"`
				Outputs map[string]any `json:"outputs"`
			}
			if code != ExitOK || json.Unmarshal(p.stdout.Bytes(), &got) != nil || got.Status != "succeeded" {
				t.Fatalf("exit %d: %s", code, p.stdout.String())
			}
			for k, v := range want {
				if g := got.Outputs[k]; g != v && fmt.Sprint(g) != v {
					t.Errorf("answer %s: got %q, want %q (all: %v)", k, got.Outputs[k], v, got.Outputs)
				}
			}
		})
	}
}

// TestTerminalMultiChoiceDefault: a multi-choice question's default is
// preselected, so Enter answers it.
func TestTerminalMultiChoiceDefault(t *testing.T) {
	wf := write(t, "ports.yaml", `version: 1
name: ports
steps:
  - id: ports
    ask:
      prompt: Open-ports?
      type: multi-choice
      choices: [22, 80, 443, 8080]
      default: [22, 80, 443]
      min: 1
outputs:
  ports: ${{ steps.ports.answer }}
`)
	p := startPty(t, "--home", t.TempDir(), "run", wf, "--json")
	// The deadline starts once the process runs (the binary is built on first use).
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.waitFor(ctx, "Open-ports?"); err != nil {
		t.Fatal(err)
	}
	p.typeText("\r")
	code, err := p.wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Outputs map[string]any `json:"outputs"`
	}
	if code != ExitOK || json.Unmarshal(p.stdout.Bytes(), &got) != nil || fmt.Sprint(got.Outputs["ports"]) != "[22 80 443]" {
		t.Fatalf("exit %d: %s", code, p.stdout.String())
	}
}

// TestTerminalInterrupt: Ctrl-C at a question stops the command with the
// interrupted status and the run stays resumable.
func TestTerminalInterrupt(t *testing.T) {
	wf := write(t, "typed.yaml", ptyQuestions)
	p := startPty(t, "--home", t.TempDir(), "run", wf)
	// The deadline starts once the process runs (the binary is built on first use).
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.waitFor(ctx, "Question-one?"); err != nil {
		t.Fatal(err)
	}
	p.typeText("alp\x03")
	code, err := p.wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
	if err := p.waitFor(ctx, "stepwise resume"); err != nil {
		t.Fatal(err)
	}
	// The terminal's mode is as it was: line editing and echo.
	tio, err := unix.IoctlGetTermios(int(p.master.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&(unix.ICANON|unix.ECHO) != unix.ICANON|unix.ECHO || tio.Iflag&unix.ICRNL == 0 {
		t.Fatalf("terminal left in another mode: lflag %#x iflag %#x", tio.Lflag, tio.Iflag)
	}
}

// TestTerminalRefusedAnswerTypedAhead: an answer the question refuses keeps
// the keys typed after it: the correction goes to the same question, the
// next answer to the next one.
func TestTerminalRefusedAnswerTypedAhead(t *testing.T) {
	wf := write(t, "count.yaml", `version: 1
name: count
steps:
  - id: n
    ask: {prompt: "How-many?", type: integer}
  - id: who
    ask: {prompt: "Who?"}
outputs:
  n: ${{ steps.n.answer }}
  who: ${{ steps.who.answer }}
`)
	p := startPty(t, "--home", t.TempDir(), "run", wf, "--json")
	// The deadline starts once the process runs (the binary is built on first use).
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := p.waitFor(ctx, "How-many?"); err != nil {
		t.Fatal(err)
	}
	p.typeText("abc\r\x7f\x7f\x7f42\rzulu\r")
	code, err := p.wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Outputs map[string]any `json:"outputs"`
	}
	if code != ExitOK || json.Unmarshal(p.stdout.Bytes(), &got) != nil || got.Outputs["n"] != 42.0 || got.Outputs["who"] != "zulu" {
		t.Fatalf("exit %d: %s", code, p.stdout.String())
	}
}

package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// syncBuffer is a bytes.Buffer read while a command writes it.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // signalled after each write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// following starts show --follow RUN in the background and returns once
// it has printed the run and follows it; wait gives its exit code.
func following(t *testing.T, home, id string) (out *syncBuffer, wait func() int) {
	t.Helper()
	out, errOut := newSyncBuffer(), newSyncBuffer()
	done := make(chan int, 1)
	go func() { done <- Main([]string{"--home", home, "show", "--follow", id}, out, errOut) }()
	for !strings.Contains(out.String(), "following:\n") {
		select {
		case code := <-done:
			t.Fatalf("show --follow ended before following: exit %d\n%s\n%s", code, out, errOut)
		case <-out.wrote:
		}
	}
	return out, func() int { return <-done }
}

// A detached run, driven by another Main (another service, whose bus the
// follower does not hear: what another process is), is followed to its
// end by show --follow.
func TestShowFollowsARunDrivenElsewhere(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "steps.yaml", "version: 1\nname: steps\nsteps:\n  - {id: first, uses: noop}\n  - {id: nap, sleep: 200ms}\n  - {id: last, uses: noop}\noutputs:\n  done: true\n")
	code, out, _ := runOut(t, home, "run", wf, "--detach", "--json")
	id := decodeRun(t, out).RunID
	if code != ExitOK {
		t.Fatalf("detach: exit %d", code)
	}
	follow, wait := following(t, home, id)
	if code, _, errOut := runOut(t, home, "resume", id); code != ExitOK {
		t.Fatalf("resume: exit %d %q", code, errOut)
	}
	if code := wait(); code != ExitOK {
		t.Fatalf("show --follow: exit %d\n%s", code, follow)
	}
	got := follow.String()
	_, live, _ := strings.Cut(got, "following:\n")
	for _, want := range []string{"→ first\n", "✓ first\n", "→ nap\n", "✓ nap\n", "✓ last\n", "run " + id + ": succeeded\n"} {
		if !strings.Contains(live, want) {
			t.Errorf("the followed lines lack %q:\n%s", want, got)
		}
	}
	if strings.Index(live, "✓ first") > strings.Index(live, "✓ last") {
		t.Errorf("lines out of order:\n%s", live)
	}
}

// A run that comes to wait on a question ends the following with the
// question and exit 3; a failed one with exit 1.
func TestShowFollowWaitsAndFails(t *testing.T) {
	home := t.TempDir()
	asks := write(t, "asks.yaml", "version: 1\nname: asks\nsteps:\n  - {id: a, uses: noop}\n  - id: q\n    ask: {prompt: Ready to go?}\n")
	_, out, _ := runOut(t, home, "run", asks, "--detach", "--json")
	id := decodeRun(t, out).RunID
	follow, wait := following(t, home, id)
	if code, _, errOut := runOut(t, home, "resume", id, "--no-input"); code != ExitWaiting {
		t.Fatalf("resume: exit %d %q", code, errOut)
	}
	if code := wait(); code != ExitWaiting || !strings.Contains(follow.String(), "Ready to go?") || !strings.Contains(follow.String(), "stepwise resume "+id) {
		t.Fatalf("show --follow: exit %d, want %d with the question\n%s", code, ExitWaiting, follow)
	}

	fails := write(t, "fails.yaml", "version: 1\nname: fails\nsteps:\n  - {id: a, uses: noop}\n  - {id: stop, fail: no luck}\n")
	_, out, _ = runOut(t, home, "run", fails, "--detach", "--json")
	id = decodeRun(t, out).RunID
	follow, wait = following(t, home, id)
	if code, _, _ := runOut(t, home, "resume", id); code != ExitInvalid {
		t.Fatalf("resume: exit %d", code)
	}
	if code := wait(); code != ExitInvalid || !strings.Contains(follow.String(), "✗ stop") {
		t.Fatalf("show --follow: exit %d, want %d\n%s", code, ExitInvalid, follow)
	}
	if code, _, errOut := runOut(t, home, "show", "--follow", "--json", id); code != ExitUsage {
		t.Errorf("--follow --json: exit %d %q", code, errOut)
	}
}

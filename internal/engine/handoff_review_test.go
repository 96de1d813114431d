package engine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// gateAnswer holds the commit that closes a pause at the store's door until
// the test lets it through (arrived is closed when it got there).
type gateAnswer struct {
	store.Store
	once    sync.Once
	arrived chan struct{}
	release chan struct{}
}

func (s *gateAnswer) set(db store.Store) { s.Store = db }

func (s *gateAnswer) Commit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	if c.ClosePause != nil {
		s.once.Do(func() { close(s.arrived) })
		<-s.release
	}
	return s.Store.Commit(ctx, c)
}

// A Continue that loses its pause to a Cancel of the run says "already
// used", as before the answer rode along with the driver: the Cancel stops
// the run's driver (whose commit carries the answer), and that stop is not
// the Continue's failure.
func TestReviewContinueLosingToCancelSaysAlreadyUsed(t *testing.T) {
	was := lingerFor
	t.Cleanup(func() { lingerFor = was })
	lingerFor = time.Minute // the answer goes with the driver's next commit, not a flush on its own
	gate := &gateAnswer{arrived: make(chan struct{}), release: make(chan struct{})}
	eng, db := openWith(t, filepath.Join(t.TempDir(), "t.db"), gate)
	defer db.Close()
	defer eng.Close(context.Background())
	id := startOn(t, eng, `version: 1
name: cancel-race
steps:
  - id: q
    ask: {prompt: "N?", type: integer}
  - id: say
    uses: log
    with: {message: "${{ steps.q.answer }}"}
`)
	if st := awaitOn(t, eng, id); st != store.StatusWaiting {
		t.Fatalf("status %s", st)
	}
	ps, err := eng.Pauses(context.Background(), id)
	if err != nil || len(ps) != 1 {
		t.Fatal(ps, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := eng.Continue(context.Background(), ps[0].Token, 7)
		done <- err
	}()
	select {
	case <-gate.arrived: // the answer's commit is at the store, not yet written
	case <-time.After(30 * time.Second):
		t.Fatal("the answer's commit never reached the store")
	}
	if err := eng.Cancel(context.Background(), id, "changed my mind", false); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	var cerr error
	select {
	case cerr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Continue did not return")
	}
	if CodeOf(cerr) != CodeTokenAlreadyUsed {
		t.Fatalf("Continue that lost the pause to a Cancel returned %v, want %s", cerr, CodeTokenAlreadyUsed)
	}
	run, err := db.GetRun(context.Background(), id)
	if err != nil || run.Status != store.StatusCanceled {
		t.Fatalf("run %s %v, want canceled", run.Status, err)
	}
	if answers, _ := db.Answers(context.Background(), id); len(answers) != 0 {
		t.Fatalf("%d answers recorded for a Continue that lost", len(answers))
	}
}

const reviewLoop = `version: 1
name: loop
steps:
  - id: q
    max_visits: 1000
    ask: {prompt: "N?", type: integer}
  - id: t
    uses: transform
    with: {value: "${{ steps.q.answer }}"}
  - id: again
    switch:
      - if: ${{ steps.q.answer >= 0 }}
        goto: q
`

// Several Continues race for each pause of a loop (run with -race): one
// wins and its answer is stored, the others say "already used", and
// nothing touches a run state after handing it to the next loader (a
// Continue that committed its answer itself keeps the state for the
// driver, which another loader may take at once).
func TestReviewContinuesRaceForEachPause(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(reviewLoop, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		var p Pause
		waitFor(t, func() bool {
			ps, err := h.eng.Pauses(context.Background(), id)
			if err != nil || len(ps) != 1 {
				return false
			}
			p = ps[0]
			return true
		})
		const k = 4
		errs := make([]error, k)
		var wg sync.WaitGroup
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = h.eng.Continue(context.Background(), p.Token, round*10+i)
			}()
		}
		wg.Wait()
		wins, winner := 0, -1
		for i, err := range errs {
			switch {
			case err == nil:
				wins, winner = wins+1, round*10+i
			case CodeOf(err) != CodeTokenAlreadyUsed:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d Continues won", round, wins)
		}
		answers, err := h.store.Answers(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range answers {
			if a.PauseSeq == p.Seq {
				n++
				if string(a.Value) != itoa(winner) {
					t.Fatalf("round %d: stored %s, the winner answered %d", round, a.Value, winner)
				}
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d answers stored", round, n)
		}
	}
	waitFor(t, func() bool {
		ps, _ := h.eng.Pauses(context.Background(), id)
		if len(ps) != 1 {
			return false
		}
		_, err := h.eng.Continue(context.Background(), ps[0].Token, -1)
		return err == nil
	})
	if r := h.wait(id); r.Status != store.StatusSucceeded {
		t.Fatalf("status %s", r.Status)
	}
	waitFor(t, func() bool {
		h.eng.mu.Lock()
		defer h.eng.mu.Unlock()
		return len(h.eng.active) == 0 && len(h.eng.sem) == 0
	})
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// lockedBuffer is the engine's action output for a test: writes may come
// from the goroutines of a command's two streams.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A secret that the shell action forwards in two pieces of a long stdout
// line is masked even when a stderr line of the same command is forwarded
// between the pieces: the two streams reach the run's output through one
// action call, and the end held back from one stream's piece must not go
// out with the other stream's line.
func TestReviewSecretCutAcrossPiecesWithTheOtherStreamBetween(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh")
	}
	const s3 = "s3cr3t-v4lue"
	ws, err := action.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	e := &Engine{log: slog.New(slog.NewTextHandler(io.Discard, nil)), output: out}
	rs := &runState{run: store.Run{ID: "r"}, mask: secret.NewMasker()}
	rs.mask.Add(s3)
	sx := &stepExec{s: &workflow.Step{ID: "cmd"}, key: "cmd", visit: 1, attempt: 1, iteration: 1}
	// stdout: a 4 KB piece ending in the secret's start, then (after a
	// line on stderr) the rest of the line.
	script := fmt.Sprintf("printf '%%s' '%s%s'; sleep 0.5; echo oops >&2; sleep 0.5; echo '%s end'",
		strings.Repeat("x", 4096-4), s3[:4], s3[4:])
	call, flush := actionCall(e, rs, sx, map[string]any{"command": "sh", "args": []any{"-c", script}})
	if _, err := action.NewShell(ws, action.ShellPolicy{Enabled: true}).Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	flush()
	got := out.String()
	if strings.Contains(got, s3[:4]) || strings.Contains(got, s3[4:]) {
		t.Fatalf("the secret's pieces reached the output: %q", got[4000:])
	}
	want := strings.Repeat("x", 4096-4) + secret.Redacted + " end\n"
	if strings.ReplaceAll(got, "oops\n", "") != want || strings.Count(got, "oops\n") != 1 {
		t.Fatalf("output %q, want the stdout line %q and the stderr line", got[4000:], want[4000:])
	}
}

// A secret of several lines (a key, a certificate) that an action prints
// line by line, one write each, is masked as a whole, as Mask masks it in
// the whole text.
func TestReviewMultiLineSecretWrittenLineByLine(t *testing.T) {
	const key = "-----BEGIN KEY-----\nMIIEv9Q2lbDq\n-----END KEY-----"
	m := secret.NewMasker()
	m.Add(key)
	text := "key:\n" + key + "\ndone\n"
	var buf strings.Builder
	w := &maskWriter{w: &buf, mask: m}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		if _, err := w.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	if got, want := buf.String(), m.Mask(text); got != want {
		t.Fatalf("wrote %q, want %q", got, want)
	}
}

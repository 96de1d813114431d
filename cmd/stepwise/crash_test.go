//go:build unix

package main

// The crash test: the built binary drives many multi-step runs while the
// test kills it with SIGKILL at random moments and starts it again, over
// and over. Whatever the moment of the kill, every run must end succeeded,
// each step's completion must be recorded exactly once (none lost, none
// duplicated), event sequences must stay gapless, and the results must be
// those of runs that were never interrupted. The database is checked after
// every kill too, not only at the end: what a crash leaves behind must
// always be a consistent prefix of an uninterrupted run.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"stepwise.dev/stepwise/workflow"
)

const (
	crashWorkflow = "testdata/crash-workflow.yaml"
	// crashSkipped is the step of the workflow whose `if` is false.
	crashSkipped = "never"
	// crashInputs: run i gets the input n = 1 + i%crashInputs, so that
	// neighbouring runs have different results; one uninterrupted
	// reference run per value of n.
	crashInputs = 8
	// procTimeout bounds every process the test starts.
	procTimeout = 60 * time.Second
	// minKills is how often the binary must be killed mid-work at least;
	// when it finishes earlier, another wave of runs is created.
	minKills = 10
	// maxKills: after that many kills the binary is left to finish.
	maxKills = 30
	// maxRounds caps the kill loop.
	maxRounds = 200
	// maxWaves: how often the test may add runs when the binary finished
	// them before minKills kills.
	maxWaves = 4
	// creators: processes creating runs at the same time.
	creators = 4
)

// TestCrashRecovery is the acceptance crash test of the engine. Set
// STEPWISE_CRASH_SEED to replay a seed's choice of kill delays (timing
// still varies from one execution to the next).
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds the binary and kills it many times (skipped with -short)")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("STEPWISE_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("STEPWISE_CRASH_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (replay the delays with STEPWISE_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	bin := buildStepwise(t)
	wfPath, err := filepath.Abs(crashWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	refs := referenceRuns(t, bin, wfPath)

	for _, tc := range []struct {
		durability string
		runs       int
	}{
		{"normal", 100},
		{"full", 60},
	} {
		ok := t.Run(tc.durability, func(t *testing.T) {
			c := &crash{t: t, bin: bin, wf: wfPath, home: t.TempDir(), durability: tc.durability, refs: refs, rng: rng, n: map[string]int{}}
			t.Cleanup(func() { c.keepOnFailure(seed) })
			c.run(tc.runs)
		})
		if !ok {
			break // the first failure says enough; keep the output short
		}
	}
}

// buildStepwise builds the binary of this package.
func buildStepwise(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "stepwise")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// ---------------------------------------------------------------------------
// Reference: what uninterrupted runs record.

// reference is an uninterrupted run of the workflow for one value of n.
type reference struct {
	snap    *runSnap
	outcome []eventRow // events without step.started and run.resumed
}

func referenceRuns(t *testing.T, bin, wfPath string) map[int]*reference {
	t.Helper()
	data, err := os.ReadFile(wfPath)
	if err != nil {
		t.Fatal(err)
	}
	wf, _, err := workflow.Load(data, workflow.Options{})
	if err != nil {
		t.Fatalf("%s: %v", wfPath, err)
	}
	var stepIDs []string
	for _, s := range wf.Steps {
		stepIDs = append(stepIDs, s.ID)
	}
	if !slices.Contains(stepIDs, crashSkipped) {
		t.Fatalf("%s has no step %q", wfPath, crashSkipped)
	}

	refs := map[int]*reference{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]string, crashInputs+1)
	for n := 1; n <= crashInputs; n++ {
		wg.Go(func() {
			home := filepath.Join(t.TempDir(), "ref")
			stdout, stderr, code := runCLI(bin, home, "normal", "run", wfPath, "--json", "-i", "n="+strconv.Itoa(n))
			if code != 0 {
				errs[n] = fmt.Sprintf("reference run n=%d: exit %d\nstdout: %s\nstderr: %s", n, code, stdout, stderr)
				return
			}
			var res struct {
				RunID   string         `json:"run_id"`
				Status  string         `json:"status"`
				Outputs map[string]any `json:"outputs"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				errs[n] = fmt.Sprintf("reference run n=%d: stdout is not JSON: %v\n%s", n, err, stdout)
				return
			}
			snaps, err := readSnapshots(home)
			if err != nil {
				errs[n] = fmt.Sprintf("reference run n=%d: %v", n, err)
				return
			}
			s := snaps[res.RunID]
			if len(snaps) != 1 || s == nil {
				errs[n] = fmt.Sprintf("reference run n=%d: want one run %s in the database, have %d", n, res.RunID, len(snaps))
				return
			}
			var dbOutputs map[string]any
			_ = json.Unmarshal([]byte(s.Outputs), &dbOutputs)
			if res.Status != "succeeded" || s.Status != "succeeded" || !reflect.DeepEqual(res.Outputs, dbOutputs) {
				errs[n] = fmt.Sprintf("reference run n=%d: run --json says %s %v, the database %s %s", n, res.Status, res.Outputs, s.Status, s.Outputs)
				return
			}
			// The expected steps: each step of the workflow once, at visit
			// 1, succeeded except the one whose if is false.
			var got, want []string
			for _, st := range s.Steps {
				got = append(got, fmt.Sprintf("%s#%d:%s", st.Key, st.Visit, st.Status))
			}
			for _, id := range stepIDs {
				status := "succeeded"
				if id == crashSkipped {
					status = "skipped"
				}
				want = append(want, id+"#1:"+status)
			}
			if !slices.Equal(got, want) {
				errs[n] = fmt.Sprintf("reference run n=%d: steps recorded\n  %v\nwant\n  %v", n, got, want)
				return
			}
			// The transforms computed what the workflow says: total is
			// (2n + n)·10 + len("run-<n>").
			if want := float64(30*n + len("run-"+strconv.Itoa(n))); dbOutputs["total"] != want {
				errs[n] = fmt.Sprintf("reference run n=%d: outputs.total is %v, want %v (outputs %s)", n, dbOutputs["total"], want, s.Outputs)
				return
			}
			if probs := s.selfCheck(); len(probs) > 0 {
				errs[n] = fmt.Sprintf("reference run n=%d:\n  %s", n, strings.Join(probs, "\n  "))
				return
			}
			mu.Lock()
			refs[n] = &reference{snap: s, outcome: s.outcome()}
			mu.Unlock()
		})
	}
	wg.Wait()
	if errs = slices.DeleteFunc(errs, func(s string) bool { return s == "" }); len(errs) > 0 {
		more := ""
		if len(errs) > 1 {
			more = fmt.Sprintf("\n(and %d more reference runs failed)", len(errs)-1)
		}
		t.Fatalf("bug: %s%s", errs[0], more)
	}
	r := refs[1].snap
	t.Logf("reference runs: %d steps (%d recorded step results), %d events each; outputs for n=1: %s",
		len(stepIDs), len(r.Steps), len(r.Events), r.Outputs)
	return refs
}

// ---------------------------------------------------------------------------
// The kill loop.

type crash struct {
	t          *testing.T
	bin, wf    string
	home       string
	durability string
	refs       map[int]*reference
	rng        *rand.Rand
	n          map[string]int // run id → its input n
	order      []string       // run ids in creation order
}

func (c *crash) run(runs int) {
	t := c.t
	start := time.Now()
	// The first run alone: it creates the database. (Processes that open a
	// new home at the same time race on its migrations, a bug of its own
	// that is not the subject here.)
	c.createRuns(1)
	c.createRuns(runs - 1)
	t.Logf("%d runs created in %v (durability %s)", runs, time.Since(start).Round(time.Millisecond), c.durability)

	kills, waves, noProgress, idle := 0, 0, 0, 0
	lo, hi := 20*time.Millisecond, 300*time.Millisecond
	recorded := 0 // step results recorded so far
	// Where the current wave of runs started, to size the next one.
	waveRound, waveRecorded := 1, 0
	stepsPerRun := len(c.refs[1].snap.Steps)
	loopStart := time.Now()
	var lastStderr string
	for round := 1; ; round++ {
		if round > maxRounds {
			snaps := c.check(false)
			t.Fatalf("bug: the runs did not finish after %d rounds (%d kills): %s\nlast stderr: %s",
				maxRounds, kills, c.summary(snaps), lastStderr)
		}
		killAfter := time.Duration(0) // 0: let it finish
		if kills < maxKills {
			killAfter = lo + time.Duration(c.rng.Int64N(int64(hi-lo)+1))
		}
		res := c.resumeAll(killAfter)
		lastStderr = res.stderr
		snaps := c.check(false)
		now := countSteps(snaps)
		progress := now - recorded
		recorded = now
		if res.killed {
			kills++
			idle++
			if progress > 0 {
				idle = 0
			} else {
				noProgress++
			}
			if idle >= 3 && hi < 5*time.Second {
				// Nothing recorded three kills in a row: perhaps the
				// machine is so loaded that starting takes longer than
				// the delays. Wait longer.
				lo, hi, idle = lo*3/2, hi*3/2, 0
				t.Logf("round %d: nothing recorded in 3 rounds; kill delays now %v–%v", round, lo, hi)
			}
			if testing.Verbose() {
				t.Logf("round %d: killed after %v; %d step results recorded (+%d), %d of %d runs succeeded",
					round, killAfter.Round(time.Millisecond), now, progress, countStatus(snaps, "succeeded"), len(snaps))
			}
			continue
		}
		// resume --all exited 0 by itself.
		t.Logf("round %d: resume --all finished by itself after %d kills; %d step results recorded (+%d)", round, kills, now, progress)
		if !strings.Contains(res.stderr, "no run is running") {
			t.Errorf("resume --all exited 0 without saying %q; stderr: %s", "no run is running", res.stderr)
		}
		if n := countStatus(snaps, "succeeded"); n != len(snaps) {
			t.Fatalf("resume --all exited 0 but only %d of %d runs succeeded: %s", n, len(snaps), c.summary(snaps))
		}
		if kills >= minKills {
			break
		}
		if waves >= maxWaves {
			msg := fmt.Sprintf("the binary was killed only %d times (want %d) after %d extra waves of runs: it works faster than the test assumes", kills, minKills, waves)
			if kills < minKills/2 {
				t.Error(msg)
			} else {
				t.Log(msg)
			}
			break
		}
		// Enough runs for the kills still missing, at the pace of this
		// wave (with a margin: a kill sometimes comes before any work).
		perRound := float64(now-waveRecorded) / float64(round-waveRound+1)
		more := int(1.5 * float64(minKills-kills+1) * perRound / float64(stepsPerRun))
		more = min(max(more, 20), 500)
		waves++
		waveRound, waveRecorded = round+1, now
		c.createRuns(more)
		t.Logf("only %d kills so far: created a wave of %d more runs", kills, more)
	}
	t.Logf("kill loop: %d kills (%d before anything was recorded) in %v, %d runs, %d step results",
		kills, noProgress, time.Since(loopStart).Round(time.Millisecond), len(c.n), recorded)

	snaps := c.check(true)
	c.checkCLI(snaps)
	t.Logf("durability %s: all %d runs succeeded, each step recorded exactly once (%v in all)",
		c.durability, len(snaps), time.Since(start).Round(time.Millisecond))
}

// createRuns records k runs without executing them, creators processes
// at a time.
func (c *crash) createRuns(k int) {
	t := c.t
	type created struct {
		n           int
		id, problem string
	}
	results := make([]created, k)
	base := len(c.order)
	var wg sync.WaitGroup
	sem := make(chan struct{}, creators)
	for i := range k {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			n := 1 + (base+i)%crashInputs
			results[i].n = n
			stdout, stderr, code := runCLI(c.bin, c.home, c.durability, "run", c.wf, "--detach", "--json", "-i", "n="+strconv.Itoa(n))
			if code != 0 {
				results[i].problem = fmt.Sprintf("run --detach: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
				return
			}
			var res struct {
				RunID  string `json:"run_id"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.RunID == "" || res.Status != "running" {
				results[i].problem = fmt.Sprintf("run --detach printed %q (%v), want {\"run_id\": …, \"status\": \"running\"}", stdout, err)
				return
			}
			results[i].id = res.RunID
		})
	}
	wg.Wait()
	for _, r := range results {
		if r.problem != "" {
			t.Fatalf("bug: %s", r.problem)
		}
		if _, dup := c.n[r.id]; dup {
			t.Fatalf("bug: run --detach returned the run id %s twice", r.id)
		}
		c.n[r.id] = r.n
		c.order = append(c.order, r.id)
	}
}

type procResult struct {
	killed bool
	stderr string
}

// resumeAll starts `resume --all` and kills it with SIGKILL after
// killAfter (0: never; it must finish within procTimeout). A process that
// exits by itself must exit 0.
func (c *crash) resumeAll(killAfter time.Duration) procResult {
	t := c.t
	cmd := exec.Command(c.bin, "--home", c.home, "--durability", c.durability, "resume", "--all")
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start resume --all: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	limit := procTimeout
	if killAfter > 0 {
		limit = killAfter
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var err error
	sentKill := false
	select {
	case err = <-done:
	case <-timer.C:
		if killAfter == 0 {
			// Hung: SIGQUIT makes the Go runtime print every goroutine's
			// stack to stderr and exit.
			_ = cmd.Process.Signal(syscall.SIGQUIT)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			snaps := c.check(false)
			t.Fatalf("bug: resume --all did not finish within %v (sent SIGQUIT): %s\nstdout: %s\nstderr (goroutines):\n%s",
				procTimeout, c.summary(snaps), stdout.String(), clip(stderr.String()))
		}
		sentKill = true
		_ = cmd.Process.Kill() // SIGKILL
		select {
		case err = <-done:
		case <-time.After(procTimeout):
			t.Fatalf("resume --all (pid %d) did not exit %v after SIGKILL", cmd.Process.Pid, procTimeout)
		}
	}
	if err == nil {
		return procResult{stderr: stderr.String()} // done, perhaps just before the kill
	}
	var ee *exec.ExitError
	if sentKill && errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return procResult{killed: true, stderr: stderr.String()}
		}
	}
	t.Fatalf("bug: resume --all failed by itself: %v\nstderr: %s\nstdout: %s", err, stderr.String(), stdout.String())
	return procResult{}
}

// ---------------------------------------------------------------------------
// Checks.

// check reads the database (no process runs) and checks every run against
// its reference: a prefix of it, or all of it when final. It fails the test
// on any inconsistency and returns the snapshots.
func (c *crash) check(final bool) map[string]*runSnap {
	t := c.t
	t.Helper()
	snaps, err := readSnapshots(c.home)
	if err != nil {
		t.Fatalf("read the database: %v", err)
	}
	var probs []string
	if len(snaps) != len(c.n) {
		probs = append(probs, fmt.Sprintf("the database has %d runs, %d were created", len(snaps), len(c.n)))
	}
	for _, id := range c.order {
		s := snaps[id]
		if s == nil {
			probs = append(probs, fmt.Sprintf("run %s: lost (not in the database)", id))
			continue
		}
		for _, p := range c.compare(s, c.refs[c.n[id]], final) {
			probs = append(probs, fmt.Sprintf("run %s (n=%d, %s): %s", id, c.n[id], s.Status, p))
		}
	}
	if len(probs) > 0 {
		when := "after a kill"
		if final {
			when = "at the end"
		}
		if len(probs) > 40 {
			probs = append(probs[:40], fmt.Sprintf("… and %d more", len(probs)-40))
		}
		t.Fatalf("bug: the database is inconsistent %s (durability %s, home %s):\n  %s", when, c.durability, c.home, strings.Join(probs, "\n  "))
	}
	return snaps
}

// compare checks one run against the uninterrupted reference run with the
// same input.
func (c *crash) compare(s *runSnap, ref *reference, final bool) []string {
	probs := s.selfCheck()
	done := s.Status == "succeeded"
	if final && !done {
		probs = append(probs, "not succeeded at the end")
	}
	switch s.Status {
	case "running", "pending", "succeeded":
	default:
		probs = append(probs, "unexpected status "+s.Status)
	}
	complete := final || done

	// Recorded steps: a prefix of the reference's, in order; all of them
	// when the run is done. Each (key, visit) at most once by the primary
	// key, so a duplicate shows as an extra visit or a step out of place.
	rs := ref.snap.Steps
	if p := stepDiff(s.Steps, rs, complete); p != "" {
		probs = append(probs, p)
	} else {
		for i, st := range s.Steps {
			if st != rs[i] {
				probs = append(probs, fmt.Sprintf("step result %s#%d is %+v, want %+v", st.Key, st.Visit, st, rs[i]))
			}
		}
	}

	// Completion events: exactly once per step, in the reference's order,
	// with the same data.
	got, want := s.outcome(), ref.outcome
	gc, wc := countByStep(got), countByStep(want)
	for _, k := range sortedKeys(gc, wc) {
		switch {
		case gc[k] > wc[k]:
			probs = append(probs, fmt.Sprintf("duplicated: %d %s events, want %d", gc[k], k, wc[k]))
		case complete && gc[k] < wc[k]:
			probs = append(probs, fmt.Sprintf("lost: %d %s events, want %d", gc[k], k, wc[k]))
		}
	}
	if len(got) > len(want) || (complete && len(got) != len(want)) {
		probs = append(probs, fmt.Sprintf("%d completion events, want %d", len(got), len(want)))
	} else {
		for i, e := range got {
			if e.Type != want[i].Type || e.StepID != want[i].StepID || e.Data != want[i].Data {
				probs = append(probs, fmt.Sprintf("completion event %d is %s %s %s, want %s %s %s", i+1, e.Type, e.StepID, e.Data, want[i].Type, want[i].StepID, want[i].Data))
				break
			}
		}
	}
	// Every step result has its completion event, and the reverse.
	if n := len(got) - countType(got, "run."); len(s.Steps) != n {
		probs = append(probs, fmt.Sprintf("%d step results but %d step completion events", len(s.Steps), n))
	}
	// The run's first events are those of the reference (inputs, version).
	for i := 0; i < 2 && i < len(ref.snap.Events); i++ {
		if i >= len(s.Events) || s.Events[i].Type != ref.snap.Events[i].Type || s.Events[i].Data != ref.snap.Events[i].Data {
			probs = append(probs, fmt.Sprintf("event %d differs from the reference's %s %s", i+1, ref.snap.Events[i].Type, ref.snap.Events[i].Data))
		}
	}
	if done {
		if !jsonEqual(s.Outputs, ref.snap.Outputs) {
			probs = append(probs, fmt.Sprintf("outputs %s, want %s", s.Outputs, ref.snap.Outputs))
		}
	} else if s.Outputs != "" {
		probs = append(probs, "outputs recorded before the run succeeded: "+s.Outputs)
	}
	return probs
}

// checkCLI checks that the CLI reads the result.
func (c *crash) checkCLI(snaps map[string]*runSnap) {
	t := c.t
	id := c.order[c.rng.IntN(len(c.order))]
	s, ref := snaps[id], c.refs[c.n[id]]
	stdout, stderr, code := runCLI(c.bin, c.home, c.durability, "show", id, "--json")
	if code != 0 {
		t.Fatalf("show %s --json: exit %d\nstderr: %s", id, code, stderr)
	}
	var shown struct {
		Run struct {
			ID      string         `json:"run_id"`
			Status  string         `json:"status"`
			Outputs map[string]any `json:"outputs"`
			Steps   []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"steps"`
		} `json:"run"`
		Events []struct {
			Seq    int64  `json:"seq"`
			Type   string `json:"type"`
			StepID string `json:"step_id"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(stdout), &shown); err != nil {
		t.Fatalf("show %s --json: not JSON: %v\n%s", id, err, stdout)
	}
	var want map[string]any
	_ = json.Unmarshal([]byte(ref.snap.Outputs), &want)
	if shown.Run.ID != id || shown.Run.Status != "succeeded" || !reflect.DeepEqual(shown.Run.Outputs, want) {
		t.Errorf("show %s --json: run %s %s outputs %v, want succeeded with %v", id, shown.Run.ID, shown.Run.Status, shown.Run.Outputs, want)
	}
	if len(shown.Run.Steps) != len(ref.snap.Steps) {
		t.Errorf("show %s --json: %d steps, want %d", id, len(shown.Run.Steps), len(ref.snap.Steps))
	}
	for i, st := range shown.Run.Steps {
		if i < len(ref.snap.Steps) && (st.ID != ref.snap.Steps[i].StepID || st.Status != ref.snap.Steps[i].Status) {
			t.Errorf("show %s --json: step %d is %s %s, want %s %s", id, i+1, st.ID, st.Status, ref.snap.Steps[i].StepID, ref.snap.Steps[i].Status)
		}
	}
	if len(shown.Events) != len(s.Events) {
		t.Errorf("show %s --json: %d events, the database has %d", id, len(shown.Events), len(s.Events))
	}
	for i, e := range shown.Events {
		if e.Seq != int64(i+1) {
			t.Errorf("show %s --json: event %d has seq %d", id, i+1, e.Seq)
			break
		}
	}

	stdout, stderr, code = runCLI(c.bin, c.home, c.durability, "runs", "--status", "running,pending,waiting,failed,canceled", "--json")
	if code != 0 {
		t.Fatalf("runs --json: exit %d\nstderr: %s", code, stderr)
	}
	var listed struct {
		Runs []json.RawMessage `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &listed); err != nil {
		t.Fatalf("runs --json: not JSON: %v\n%s", err, stdout)
	}
	if len(listed.Runs) != 0 {
		t.Errorf("runs --status running,pending,waiting,failed,canceled lists %d runs, want none:\n%s", len(listed.Runs), stdout)
	}
}

// keepOnFailure copies the home of a failed test out of the temporary
// directory (which the test deletes) for a post-mortem.
func (c *crash) keepOnFailure(seed uint64) {
	if !c.t.Failed() {
		return
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("stepwise-crash-%d-%s-", seed, c.durability))
	if err != nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(c.home, "stepwise.db*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
		}
	}
	c.t.Logf("the database is kept in %s (open it with sqlite3, or: stepwise --home %s runs)", dir, dir)
}

func (c *crash) summary(snaps map[string]*runSnap) string {
	by := map[string]int{}
	for _, s := range snaps {
		by[s.Status]++
	}
	return fmt.Sprintf("runs by status %v, %d step results recorded (home %s)", by, countSteps(snaps), c.home)
}

// ---------------------------------------------------------------------------
// Reading the database.

type stepRow struct {
	Key    string
	Visit  int
	StepID string
	Status string
	Output string // canonical JSON, "" for NULL
}

type eventRow struct {
	Seq    int64
	Type   string
	StepID string
	Data   string // canonical JSON, "" for NULL
}

type attemptRow struct {
	Key     string
	Visit   int
	Attempt int
	Status  string
}

type runSnap struct {
	ID       string
	Status   string
	Outputs  string
	EventSeq int64
	Steps    []stepRow // in recording order
	AttemptR []attemptRow
	Events   []eventRow
}

// readSnapshots reads every run of a home's database, read-only.
func readSnapshots(home string) (map[string]*runSnap, error) {
	dsn := "file:" + (&url.URL{Path: filepath.Join(home, "stepwise.db")}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	defer cancel()
	// One read transaction: one consistent view.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()

	snaps := map[string]*runSnap{}
	rows, err := tx.QueryContext(ctx, `SELECT id, status, outputs, event_seq FROM runs`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		s := &runSnap{}
		var outputs []byte
		if err := rows.Scan(&s.ID, &s.Status, &outputs, &s.EventSeq); err != nil {
			rows.Close()
			return nil, err
		}
		s.Outputs = canonicalJSON(outputs)
		snaps[s.ID] = s
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	get := func(id string) (*runSnap, error) {
		if s := snaps[id]; s != nil {
			return s, nil
		}
		return nil, fmt.Errorf("rows of run %s, which is not in the runs table", id)
	}

	rows, err = tx.QueryContext(ctx, `SELECT run_id, key, visit, step_id, status, output FROM steps ORDER BY run_id, rowid`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		var st stepRow
		var output []byte
		if err := rows.Scan(&id, &st.Key, &st.Visit, &st.StepID, &st.Status, &output); err != nil {
			rows.Close()
			return nil, err
		}
		st.Output = canonicalJSON(output)
		s, err := get(id)
		if err != nil {
			rows.Close()
			return nil, err
		}
		s.Steps = append(s.Steps, st)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}

	rows, err = tx.QueryContext(ctx, `SELECT run_id, key, visit, attempt, status FROM attempts ORDER BY run_id, key, visit, attempt`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		var a attemptRow
		if err := rows.Scan(&id, &a.Key, &a.Visit, &a.Attempt, &a.Status); err != nil {
			rows.Close()
			return nil, err
		}
		s, err := get(id)
		if err != nil {
			rows.Close()
			return nil, err
		}
		s.AttemptR = append(s.AttemptR, a)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}

	rows, err = tx.QueryContext(ctx, `SELECT run_id, seq, type, step_id, data FROM events ORDER BY run_id, seq`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		var e eventRow
		var step sql.NullString
		var data []byte
		if err := rows.Scan(&id, &e.Seq, &e.Type, &step, &data); err != nil {
			rows.Close()
			return nil, err
		}
		e.StepID, e.Data = step.String, canonicalJSON(data)
		s, err := get(id)
		if err != nil {
			rows.Close()
			return nil, err
		}
		s.Events = append(s.Events, e)
	}
	if err := closeRows(rows); err != nil {
		return nil, err
	}
	return snaps, nil
}

func closeRows(rows *sql.Rows) error {
	err := rows.Err()
	return errors.Join(err, rows.Close())
}

// selfCheck checks what holds for any run, interrupted or not.
func (s *runSnap) selfCheck() []string {
	var probs []string
	// Event sequence numbers are 1..N without gaps, N = runs.event_seq.
	for i, e := range s.Events {
		if e.Seq != int64(i+1) {
			probs = append(probs, fmt.Sprintf("event %d has seq %d: the sequence has a gap or starts late", i+1, e.Seq))
			break
		}
	}
	if int64(len(s.Events)) != s.EventSeq {
		probs = append(probs, fmt.Sprintf("%d events but runs.event_seq is %d", len(s.Events), s.EventSeq))
	}
	if len(s.Events) < 2 || s.Events[0].Type != "run.created" || s.Events[1].Type != "run.started" {
		probs = append(probs, "the first events are not run.created, run.started")
	}
	// A run ends once: nothing after run.succeeded.
	for i, e := range s.Events {
		if e.Type == "run.succeeded" && i != len(s.Events)-1 {
			probs = append(probs, fmt.Sprintf("%d events after run.succeeded", len(s.Events)-1-i))
		}
	}
	if (countType(s.Events, "run.succeeded") > 0) != (s.Status == "succeeded") {
		probs = append(probs, fmt.Sprintf("status %s with %d run.succeeded events", s.Status, countType(s.Events, "run.succeeded")))
	}
	// Each step completion follows a step.started of the same step (both
	// are committed with the step's result).
	started := map[string]bool{}
	for _, e := range s.Events {
		switch e.Type {
		case "step.started":
			started[e.StepID] = true
		case "step.succeeded", "step.failed":
			if !started[e.StepID] {
				probs = append(probs, fmt.Sprintf("event %d: %s %s without step.started before it", e.Seq, e.Type, e.StepID))
			}
			started[e.StepID] = false
		}
	}
	// A succeeded attempt stands for a recorded step result. (Whether a
	// first-try success gets an attempt row is the engine's choice.)
	recorded := map[string]string{}
	for _, st := range s.Steps {
		recorded[fmt.Sprintf("%s#%d", st.Key, st.Visit)] = st.Status
	}
	for _, a := range s.AttemptR {
		k := fmt.Sprintf("%s#%d", a.Key, a.Visit)
		if a.Status == "succeeded" && recorded[k] != "succeeded" {
			probs = append(probs, fmt.Sprintf("attempt %d of %s succeeded but the step result is %q", a.Attempt, k, recorded[k]))
		}
	}
	return probs
}

// outcome is the run's events that record a completion: every event but
// step.started (committed with the completion, or one day on its own) and
// run.resumed (which recovery may add).
func (s *runSnap) outcome() []eventRow {
	var out []eventRow
	for _, e := range s.Events {
		if e.Type != "step.started" && e.Type != "run.resumed" {
			out = append(out, e)
		}
	}
	return out
}

func countByStep(events []eventRow) map[string]int {
	m := map[string]int{}
	for _, e := range events {
		if strings.HasPrefix(e.Type, "step.") {
			m[e.Type+" "+e.StepID]++
		} else if e.Type != "run.created" && e.Type != "run.started" {
			m[e.Type]++
		}
	}
	return m
}

func sortedKeys(ms ...map[string]int) []string {
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

func countType(events []eventRow, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e.Type, prefix) {
			n++
		}
	}
	return n
}

func countSteps(snaps map[string]*runSnap) int {
	n := 0
	for _, s := range snaps {
		n += len(s.Steps)
	}
	return n
}

func countStatus(snaps map[string]*runSnap, status string) int {
	n := 0
	for _, s := range snaps {
		if s.Status == status {
			n++
		}
	}
	return n
}

// stepDiff checks that the recorded step results (keys and visits) are
// the reference's, or a prefix of them when the run is not complete, and
// names what was lost, duplicated or recorded out of order.
func stepDiff(got, want []stepRow, complete bool) string {
	key := func(s stepRow) string { return fmt.Sprintf("%s#%d", s.Key, s.Visit) }
	var g, w []string
	for _, s := range got {
		g = append(g, key(s))
	}
	for _, s := range want {
		w = append(w, key(s))
	}
	if len(g) <= len(w) && slices.Equal(g, w[:len(g)]) && (!complete || len(g) == len(w)) {
		return ""
	}
	// Lost: expected results missing before the last one recorded (or
	// anywhere, when the run is complete).
	last := -1
	for _, k := range g {
		last = max(last, slices.Index(w, k))
	}
	if complete {
		last = len(w) - 1
	}
	var lost, extra []string
	for _, k := range w[:last+1] {
		if !slices.Contains(g, k) {
			lost = append(lost, k)
		}
	}
	seen := map[string]bool{}
	for _, k := range g {
		if seen[k] || !slices.Contains(w, k) {
			extra = append(extra, k)
		}
		seen[k] = true
	}
	var parts []string
	if len(lost) > 0 {
		parts = append(parts, fmt.Sprintf("lost step results %v", lost))
	}
	if len(extra) > 0 {
		parts = append(parts, fmt.Sprintf("duplicated or unexpected step results %v", extra))
	}
	if len(parts) == 0 {
		parts = append(parts, "step results out of order")
	}
	return fmt.Sprintf("%s (recorded %v, want %v)", strings.Join(parts, ", "), g, w)
}

// canonicalJSON re-encodes JSON with sorted keys ("" for NULL, the raw
// text when it is not JSON).
func canonicalJSON(b []byte) string {
	if b == nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func jsonEqual(a, b string) bool { return canonicalJSON([]byte(a)) == canonicalJSON([]byte(b)) }

// ---------------------------------------------------------------------------
// Processes.

// runCLI runs the binary to its end and returns its output and exit code
// (-1 when it did not exit normally). A process still running after
// procTimeout gets SIGQUIT, so that its stderr shows where it hung (the Go
// runtime prints every goroutine's stack), then SIGKILL.
func runCLI(bin, home, durability string, args ...string) (stdout, stderr string, code int) {
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--home", home, "--durability", durability}, args...)...)
	cmd.Env = childEnv()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if err != nil {
		code = -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			return o.String(), fmt.Sprintf("(hung: still running after %v, sent SIGQUIT: %v; goroutines follow)\n%s", procTimeout, err, clip(e.String())), -1
		} else if code == -1 {
			fmt.Fprintf(&e, "\n(%v)", err)
		}
	}
	return o.String(), e.String(), code
}

// clip shortens a long stderr (a goroutine dump) for a test message.
func clip(s string) string {
	const max = 24 << 10
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("\n… (%d more bytes)", len(s)-max)
}

// childEnv is the test's environment without stepwise's variables, so that
// --home alone decides where the database and the key are.
func childEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "STEPWISE_") })
}

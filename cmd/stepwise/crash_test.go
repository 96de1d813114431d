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
//
// TestCrashRecoveryControlFlow does the same with control flow: durable
// retries, repeats and sleeps, parallel groups, foreach loops, a
// sub-workflow (a child run), compensations and hooks. Runs end succeeded
// or, by design, failed after compensating; either way exactly like an
// uninterrupted run, compared on structure (times and backoffs differ).

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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

	"stepwise.dev/stepwise/internal/workflow"
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

	bin := sharedBinary(t)
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
	base := len(c.order)
	args := make([][]string, k)
	ns := make([]int, k)
	for i := range k {
		ns[i] = 1 + (base+i)%crashInputs
		args[i] = []string{"-i", "n=" + strconv.Itoa(ns[i])}
	}
	for i, id := range detachRuns(c.t, c.bin, c.home, c.durability, c.wf, args) {
		if _, dup := c.n[id]; dup {
			c.t.Fatalf("bug: run --detach returned the run id %s twice", id)
		}
		c.n[id] = ns[i]
		c.order = append(c.order, id)
	}
}

// detachRuns records one run of wf per entry of inputs (its -i flags)
// without executing it, creators processes at a time, and returns their
// ids in the order of inputs.
func detachRuns(t *testing.T, bin, home, durability, wf string, inputs [][]string) []string {
	t.Helper()
	type created struct{ id, problem string }
	results := make([]created, len(inputs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, creators)
	for i, in := range inputs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			stdout, stderr, code := runCLI(bin, home, durability, append([]string{"run", wf, "--detach", "--json"}, in...)...)
			if code != 0 {
				results[i].problem = fmt.Sprintf("run --detach %v: exit %d\nstdout: %s\nstderr: %s", in, code, stdout, stderr)
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
	ids := make([]string, len(inputs))
	seen := map[string]bool{}
	for i, r := range results {
		if r.problem != "" {
			t.Fatalf("bug: %s", r.problem)
		}
		if seen[r.id] {
			t.Fatalf("bug: run --detach returned the run id %s twice", r.id)
		}
		seen[r.id] = true
		ids[i] = r.id
	}
	return ids
}

type procResult struct {
	killed bool
	stderr string
}

// resumeAll starts `resume --all` and kills it with SIGKILL after
// killAfter (0: never; it must finish within procTimeout). A process that
// exits by itself must exit 0.
func (c *crash) resumeAll(killAfter time.Duration) procResult {
	return resumeAllProc(c.t, c.bin, c.home, c.durability, killAfter, procTimeout, func() string { return c.summary(c.check(false)) })
}

// resumeAllProc starts `resume --all` in home, with the global flags
// extra, and kills it with SIGKILL after killAfter. With killAfter 0 it
// must finish within limit; when it hangs, the test fails with its
// goroutines and state(), a description of the database. A process that
// exits by itself must exit 0.
func resumeAllProc(t *testing.T, bin, home, durability string, killAfter, limit time.Duration, state func() string, extra ...string) procResult {
	t.Helper()
	args := append([]string{"--home", home, "--durability", durability}, extra...)
	cmd := exec.Command(bin, append(args, "resume", "--all")...)
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("start resume --all: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

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
			t.Fatalf("bug: resume --all did not finish within %v (sent SIGQUIT): %s\nstdout: %s\nstderr (goroutines):\n%s",
				limit, state(), stdout.String(), clip(stderr.String()))
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
	keepHome(c.t, c.home, fmt.Sprintf("stepwise-crash-%d-%s-", seed, c.durability))
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
	Key      string
	Visit    int
	StepID   string
	Status   string
	Output   string // canonical JSON, "" for NULL
	Error    string
	Attempts int
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
	Workflow string
	ParentID string // "" for a top-level run
	Status   string
	Outputs  string
	Error    string // canonical JSON, "" for NULL
	EventSeq int64
	Steps    []stepRow // in recording order
	AttemptR []attemptRow
	Events   []eventRow
	Timers   []string // keys of the run's durable wake-ups
}

// readSnapshots reads every run of a home's database, read-only.
func readSnapshots(home string) (map[string]*runSnap, error) {
	db, err := openHomeDB(home)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return snapshotsOf(db)
}

// openHomeDB opens a home's SQLite database read-only.
func openHomeDB(home string) (*sql.DB, error) {
	dsn := "file:" + (&url.URL{Path: filepath.Join(home, "stepwise.db")}).EscapedPath() + "?mode=ro&_pragma=busy_timeout(10000)"
	return sql.Open("sqlite", dsn)
}

// snapshotsOf reads every run of a store's database (SQLite's or
// PostgreSQL's: the tables are the same) in one read transaction.
func snapshotsOf(db *sql.DB) (map[string]*runSnap, error) {
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	defer cancel()
	// One read transaction: one consistent view.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()

	snaps := map[string]*runSnap{}
	rows, err := tx.QueryContext(ctx, `SELECT id, workflow, parent_id, status, outputs, error, event_seq FROM runs`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		s := &runSnap{}
		var outputs, runErr []byte
		var parent sql.NullString
		if err := rows.Scan(&s.ID, &s.Workflow, &parent, &s.Status, &outputs, &runErr, &s.EventSeq); err != nil {
			rows.Close()
			return nil, err
		}
		s.ParentID = parent.String
		s.Outputs, s.Error = canonicalJSON(outputs), canonicalJSON(runErr)
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

	rows, err = tx.QueryContext(ctx, `SELECT run_id, key, visit, step_id, status, output, error, attempts FROM steps ORDER BY run_id, ord`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		var st stepRow
		var output []byte
		var stepErr sql.NullString
		if err := rows.Scan(&id, &st.Key, &st.Visit, &st.StepID, &st.Status, &output, &stepErr, &st.Attempts); err != nil {
			rows.Close()
			return nil, err
		}
		st.Output, st.Error = canonicalJSON(output), stepErr.String
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

	rows, err = tx.QueryContext(ctx, `SELECT run_id, key FROM timers ORDER BY run_id, key`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return nil, err
		}
		s, err := get(id)
		if err != nil {
			rows.Close()
			return nil, err
		}
		s.Timers = append(s.Timers, key)
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

// ---------------------------------------------------------------------------
// The control-flow scenario: durable retries, a repeat, a sleep, a parallel
// group, a foreach with concurrency, a sub-workflow, compensations and
// hooks, killed at random moments like the straight-line workflow above.

const (
	flowWorkflow = "testdata/crash-flow/crash-flow.yaml"
	// flowChild is the sub-workflow's name; its file lies next to
	// flowWorkflow.
	flowChild = "crash-flow-child"
	// flowInputs: run i gets n = 1 + i%flowInputs and fails late when n
	// is a multiple of 3; one uninterrupted reference run per n.
	flowInputs = 6
	// flowRuns: runs created at first in each subtest.
	flowRuns = 48
	// flowItems is the length of the foreach of the workflow.
	flowItems = 8
	// Bounds of the kill loop (see minKills and the others above).
	flowMinKills  = 16
	flowMaxKills  = 30
	flowMaxRounds = 150
	flowMaxWaves  = 3
	// flowHang: a resume --all left to finish must finish within this.
	flowHang = 30 * time.Second
)

func flowFails(n int) bool { return n%3 == 0 }

func flowArgs(n int) []string {
	return []string{"-i", "n=" + strconv.Itoa(n), "-i", "fail=" + strconv.FormatBool(flowFails(n))}
}

// flowRef is an uninterrupted run of the control-flow workflow for one n,
// with its child run.
type flowRef struct {
	n             int
	parent, child *runSnap
}

// flowShape is what the checks need to know of the two workflows: their
// top-level step ids, whose results are recorded in a fixed order (the
// branches, items and item compensations of groups are not).
type flowShape struct {
	parentTop, childTop map[string]bool
}

// TestCrashRecoveryControlFlow is the crash test of control flow: runs
// that retry, repeat, sleep, fan out, call a sub-workflow and compensate
// are killed at random moments and resumed with `resume --all`; each must
// end exactly like an uninterrupted run (compared on structure: times and
// backoff delays differ). STEPWISE_CRASH_SEED replays the kill delays.
func TestCrashRecoveryControlFlow(t *testing.T) {
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

	bin := sharedBinary(t)
	wfPath, err := filepath.Abs(flowWorkflow)
	if err != nil {
		t.Fatal(err)
	}
	childPath := filepath.Join(filepath.Dir(wfPath), flowChild+".yaml")
	shape := flowShape{parentTop: topLevel(t, wfPath), childTop: topLevel(t, childPath)}
	refs := flowReferences(t, bin, wfPath, shape)

	for i, tc := range []struct {
		name, durability string
		// library: the child workflow is also in the home's library, not
		// only next to the parent's file.
		library bool
	}{
		// As the fixture is meant to be used: the child found next to the
		// file that was run.
		{"sibling", "normal", false},
		// The child in the library too, so that the rest of the control
		// flow is exercised even when finding siblings fails.
		{"library", "full", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each subtest draws its own delays: a seed replays each.
			rng := rand.New(rand.NewPCG(seed, seed^(0x9e3779b97f4a7c15*uint64(i+1))))
			f := &flowCrash{t: t, bin: bin, wf: wfPath, home: t.TempDir(), durability: tc.durability,
				refs: refs, shape: shape, rng: rng, n: map[string]int{}, positions: map[string]int{}}
			if tc.library {
				lib := filepath.Join(f.home, "workflows")
				data, err := os.ReadFile(childPath)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(lib, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(lib, flowChild+".yaml"), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { keepHome(t, f.home, fmt.Sprintf("stepwise-crash-flow-%d-%s-", seed, tc.name)) })
			t.Logf("child workflow %s; durability %s", map[bool]string{false: "only next to " + filepath.Base(wfPath), true: "in the library and next to " + filepath.Base(wfPath)}[tc.library], tc.durability)
			f.run(flowRuns)
		})
	}
}

// topLevel returns the ids of a workflow file's top-level steps.
func topLevel(t *testing.T, path string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wf, _, err := workflow.Load(data, workflow.Options{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	top := map[string]bool{}
	for _, s := range wf.Steps {
		top[s.ID] = true
	}
	return top
}

// flowReferences runs the workflow once per n, uninterrupted, each in a
// home of its own, and checks that each run did what the workflow says.
func flowReferences(t *testing.T, bin, wfPath string, shape flowShape) map[int]*flowRef {
	t.Helper()
	refs := map[int]*flowRef{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]string, flowInputs+1)
	for n := 1; n <= flowInputs; n++ {
		wg.Go(func() {
			home := filepath.Join(t.TempDir(), "ref")
			stdout, stderr, code := runCLI(bin, home, "normal", append([]string{"run", wfPath, "--json"}, flowArgs(n)...)...)
			wantStatus, wantCode := "succeeded", 0
			if flowFails(n) {
				wantStatus, wantCode = "failed", 1
			}
			var res struct {
				RunID  string `json:"run_id"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil || code != wantCode || res.Status != wantStatus {
				errs[n] = fmt.Sprintf("reference run n=%d: exit %d (want %d), status %q (want %s)\nstdout: %s\nstderr: %s", n, code, wantCode, res.Status, wantStatus, stdout, stderr)
				return
			}
			snaps, err := readSnapshots(home)
			if err != nil {
				errs[n] = fmt.Sprintf("reference run n=%d: %v", n, err)
				return
			}
			ref := &flowRef{n: n, parent: snaps[res.RunID]}
			for _, s := range snaps {
				if s.ParentID == res.RunID {
					ref.child = s
				}
			}
			if ref.parent == nil || ref.child == nil || len(snaps) != 2 {
				errs[n] = fmt.Sprintf("reference run n=%d: want the run %s and one child run in the database, have %d runs", n, res.RunID, len(snaps))
				return
			}
			if probs := flowReferenceCheck(ref, shape); len(probs) > 0 {
				errs[n] = fmt.Sprintf("reference run n=%d (fail=%v):\n  %s", n, flowFails(n), strings.Join(probs, "\n  "))
				return
			}
			mu.Lock()
			refs[n] = ref
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
	ok, ko := refs[1].parent, refs[3].parent
	t.Logf("reference runs: %d step results and %d events when they succeed (n=1), %d step results and %d events when boom fails (n=3); child runs: %d step results",
		len(ok.Steps), len(ok.Events), len(ko.Steps), len(ko.Events), len(refs[1].child.Steps))
	return refs
}

// flowExpected is what an uninterrupted run records: key=status of each
// step result, in no particular order.
func flowExpected(fail bool) []string {
	rows := []string{"reserve=succeeded", "flaky=failed", "poll=succeeded", "settle=succeeded",
		"check_a=succeeded", "check_b=succeeded", "check_c=succeeded", "checks=succeeded"}
	for i := range flowItems {
		rows = append(rows, fmt.Sprintf("each[%d].work=succeeded", i), fmt.Sprintf("each[%d].shape=succeeded", i))
	}
	rows = append(rows, "each=succeeded", "sub=succeeded", "charge=succeeded")
	if !fail {
		rows = append(rows, "boom=skipped", "final=succeeded", "on_success:0=succeeded")
	} else {
		rows = append(rows, "boom=failed", "compensate:charge=succeeded", "compensate:sub=succeeded", "compensate:reserve=succeeded",
			"on_failure:0=succeeded", "on_failure:1=succeeded")
		for i := range flowItems {
			rows = append(rows, fmt.Sprintf("compensate:each[%d].work=succeeded", i))
		}
	}
	slices.Sort(rows)
	return rows
}

// flowReferenceCheck checks an uninterrupted run against the workflow.
func flowReferenceCheck(ref *flowRef, shape flowShape) []string {
	n, fail := ref.n, flowFails(ref.n)
	p, c := ref.parent, ref.child
	probs := flowSelfCheck(p, shape.parentTop)
	for _, pr := range flowSelfCheck(c, shape.childTop) {
		probs = append(probs, "child: "+pr)
	}
	var got []string
	for _, st := range p.Steps {
		if st.Visit != 1 {
			probs = append(probs, fmt.Sprintf("step result %s has visit %d", st.Key, st.Visit))
		}
		got = append(got, st.Key+"="+st.Status)
	}
	slices.Sort(got)
	if want := flowExpected(fail); !slices.Equal(got, want) {
		probs = append(probs, fmt.Sprintf("step results\n    %v\n  want\n    %v", got, want))
	}
	// The retried step: three failed attempts, then the run went on.
	var flakyAttempts []string
	for _, a := range p.AttemptR {
		if a.Key == "flaky" {
			flakyAttempts = append(flakyAttempts, fmt.Sprintf("%d:%s", a.Attempt, a.Status))
		}
	}
	if want := []string{"1:failed", "2:failed", "3:failed"}; !slices.Equal(flakyAttempts, want) {
		probs = append(probs, fmt.Sprintf("attempts of flaky %v, want %v", flakyAttempts, want))
	}
	for _, st := range p.Steps {
		if st.Key == "flaky" && (st.Attempts != 3 || st.Error != fmt.Sprintf("flaky %d", n)) {
			probs = append(probs, fmt.Sprintf("flaky recorded with %d attempts and error %q, want 3 and %q", st.Attempts, st.Error, fmt.Sprintf("flaky %d", n)))
		}
	}
	for typ, want := range map[string]int{"step.retrying": 2, "step.repeating": 2, "step.sleeping": 1, "step.child_started": 1} {
		if got := countType(p.Events, typ); got != want {
			probs = append(probs, fmt.Sprintf("%d %s events, want %d", got, typ, want))
		}
	}
	if ids := childStarts(p); len(ids) != 1 || ids[0] != c.ID {
		probs = append(probs, fmt.Sprintf("step.child_started names %v, the child run is %s", ids, c.ID))
	}
	// The sub-workflow: its own steps and outputs, used by the parent.
	var childSteps []string
	for _, st := range c.Steps {
		childSteps = append(childSteps, st.Key+"="+st.Status)
	}
	if want := []string{"c1=succeeded", "c2=succeeded", "calc=succeeded"}; !slices.Equal(childSteps, want) {
		probs = append(probs, fmt.Sprintf("child step results %v, want %v", childSteps, want))
	}
	childTotal := float64(103 * n) // base (each.output[2].v = 3n) + 100n
	var childOut map[string]any
	_ = json.Unmarshal([]byte(c.Outputs), &childOut)
	if c.Status != "succeeded" || c.Workflow != flowChild || childOut["total"] != childTotal || childOut["label"] != "child-"+strconv.Itoa(n) {
		probs = append(probs, fmt.Sprintf("child run %s %s with outputs %s, want %s succeeded with total %v", c.Workflow, c.Status, c.Outputs, flowChild, childTotal))
	}
	if sub := findRow(p, "sub"); sub == nil || !jsonEqual(sub.Output, c.Outputs) {
		probs = append(probs, fmt.Sprintf("the output of sub is not the child's outputs %s", c.Outputs))
	}
	if fail {
		if want := fmt.Sprintf(`{"message":"boom %d","step_id":"boom"}`, n); p.Error != want {
			probs = append(probs, fmt.Sprintf("run error %s, want %s", p.Error, want))
		}
		if p.Outputs != "" {
			probs = append(probs, "outputs recorded for a failed run: "+p.Outputs)
		}
		for key, want := range map[string]string{"compensate:charge": fmt.Sprintf(`"refund %d"`, 103*n+flowItems),
			"compensate:sub": fmt.Sprintf(`"unsub %d"`, 103*n), "compensate:reserve": fmt.Sprintf(`"unreserve %d"`, n)} {
			if r := findRow(p, key); r == nil || r.Output != want {
				probs = append(probs, fmt.Sprintf("%s recorded %+v, want the output %s", key, r, want))
			}
		}
	} else {
		var out map[string]any
		_ = json.Unmarshal([]byte(p.Outputs), &out)
		if want := float64(10 * (103*n + flowItems)); out["total"] != want {
			probs = append(probs, fmt.Sprintf("outputs.total is %v, want %v (outputs %s)", out["total"], want, p.Outputs))
		}
		if r := findRow(p, "on_success:0"); r == nil || r.Output != fmt.Sprintf(`"done %d"`, 10*(103*n+flowItems)) {
			probs = append(probs, fmt.Sprintf("on_success:0 recorded %+v", r))
		}
	}
	return probs
}

func findRow(s *runSnap, key string) *stepRow {
	for i := range s.Steps {
		if s.Steps[i].Key == key {
			return &s.Steps[i]
		}
	}
	return nil
}

// childStarts returns the child run ids that step.child_started events
// name.
func childStarts(s *runSnap) []string {
	var ids []string
	for _, e := range s.Events {
		if e.Type == "step.child_started" {
			var d struct {
				Child string `json:"child_run_id"`
			}
			_ = json.Unmarshal([]byte(e.Data), &d)
			ids = append(ids, d.Child)
		}
	}
	return ids
}

// flowSelfCheck checks what holds for any run of any workflow, interrupted
// or not: gapless events, one end, every result with its completion event
// in the same order, every top-level completion after its start.
func flowSelfCheck(s *runSnap, top map[string]bool) []string {
	var probs []string
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
	// One end, the last event, matching the status.
	ends := 0
	for i, e := range s.Events {
		switch e.Type {
		case "run.succeeded", "run.failed", "run.canceled":
			ends++
			if i != len(s.Events)-1 {
				probs = append(probs, fmt.Sprintf("%d events after %s", len(s.Events)-1-i, e.Type))
			}
			if want := strings.TrimPrefix(e.Type, "run."); s.Status != want {
				probs = append(probs, fmt.Sprintf("status %s with a %s event", s.Status, e.Type))
			}
		}
	}
	switch {
	case ends > 1:
		probs = append(probs, fmt.Sprintf("%d run end events", ends))
	case ends == 0 && s.Status != "running" && s.Status != "pending":
		probs = append(probs, fmt.Sprintf("status %s without an end event", s.Status))
	}
	// Each result is committed with its completion event: both tell the
	// same story in the same order.
	var rows, evs []string
	for _, st := range s.Steps {
		rows = append(rows, rowClass(st))
	}
	started := map[string]bool{}
	for _, e := range s.Events {
		var d struct {
			Key   string `json:"key"`
			Visit int    `json:"visit"`
		}
		_ = json.Unmarshal([]byte(e.Data), &d)
		switch e.Type {
		case "step.started":
			started[e.StepID] = true
		case "step.succeeded", "step.failed", "step.skipped":
			key := d.Key
			if key == "" {
				key = e.StepID
				if top[e.StepID] && e.Type != "step.skipped" && !started[e.StepID] {
					probs = append(probs, fmt.Sprintf("event %d: %s %s without step.started before it", e.Seq, e.Type, e.StepID))
				}
			}
			evs = append(evs, fmt.Sprintf("step %s#%d", key, d.Visit))
		case "compensation.succeeded", "compensation.failed":
			evs = append(evs, "compensation compensate:"+e.StepID)
		case "hook.succeeded", "hook.failed":
			evs = append(evs, "hook "+e.StepID)
		}
	}
	if !slices.Equal(rows, evs) {
		i := 0
		for i < len(rows) && i < len(evs) && rows[i] == evs[i] {
			i++
		}
		at := func(l []string) string {
			if i < len(l) {
				return l[i]
			}
			return "(nothing)"
		}
		probs = append(probs, fmt.Sprintf("the step results and their completion events disagree (%d results, %d events): result %d is %s, completion event %d is for %s",
			len(rows), len(evs), i+1, at(rows), i+1, at(evs)))
	}
	return probs
}

// rowClass names a step result as its completion event names it.
func rowClass(st stepRow) string {
	switch {
	case strings.HasPrefix(st.StepID, "compensate:"):
		return "compensation " + st.StepID
	case strings.HasPrefix(st.StepID, "on_success:"), strings.HasPrefix(st.StepID, "on_failure:"):
		return "hook " + st.Key
	}
	return fmt.Sprintf("step %s#%d", st.Key, st.Visit)
}

func rowKey(st stepRow) string { return fmt.Sprintf("%s#%d", st.Key, st.Visit) }

// inOrder reports whether a step result is recorded at a fixed place of
// the run: a top-level step, a hook, the compensation of a top-level step.
// Branches, items and their compensations are recorded in the order they
// happen to end.
func inOrder(key string, top map[string]bool) bool {
	switch {
	case top[key], strings.HasPrefix(key, "on_success:"), strings.HasPrefix(key, "on_failure:"):
		return true
	case strings.HasPrefix(key, "compensate:"):
		return top[strings.TrimPrefix(key, "compensate:")]
	}
	return false
}

// flowCompare checks a run against the uninterrupted reference run of the
// same workflow and inputs: a consistent prefix of it while the run is
// running, all of it once it ended.
func flowCompare(s, ref *runSnap, top map[string]bool, final bool) []string {
	probs := flowSelfCheck(s, top)
	complete := false
	switch {
	case s.Status == ref.Status:
		complete = true
	case s.Status == "running" || s.Status == "pending":
		if final {
			probs = append(probs, fmt.Sprintf("still %s at the end, %d step results recorded, last events %s", s.Status, len(s.Steps), lastEvents(s, 3)))
		}
	default:
		probs = append(probs, fmt.Sprintf("ended %s with error %s; the reference run ended %s", s.Status, s.Error, ref.Status))
	}
	head := len(probs)
	// diverged: the first step result whose status differs from the
	// reference's; what follows it is its consequence.
	diverged := ""

	// Step results: those of the reference, each once and identical (times
	// aside); the ones at fixed places in the reference's order, the
	// others between the same fixed ones.
	want := map[string]stepRow{}
	var wantOrder []string      // keys of the results at fixed places
	place := map[string]int{}   // key → index in wantOrder
	between := map[string]int{} // key of a result elsewhere → fixed results before it
	for _, st := range ref.Steps {
		k := rowKey(st)
		want[k] = st
		if inOrder(st.Key, top) {
			place[k] = len(wantOrder)
			wantOrder = append(wantOrder, k)
		} else {
			between[k] = len(wantOrder)
		}
	}
	got := map[string]int{} // key → position in s.Steps
	var gotOrder []string
	for i, st := range s.Steps {
		k := rowKey(st)
		got[k] = i
		w, ok := want[k]
		if !ok {
			probs = append(probs, fmt.Sprintf("unexpected step result %s (%s %s, error %q): the reference has none (a duplicate, or a wrong path)", k, st.StepID, st.Status, st.Error))
			continue
		}
		if a, b := normRow(st), normRow(w); a != b {
			probs = append(probs, fmt.Sprintf("step result %s is %+v, want %+v", k, a, b))
			if diverged == "" && (a.Status != b.Status || a.Error != b.Error) {
				diverged = probs[len(probs)-1]
			}
		}
		if _, fixed := place[k]; fixed {
			gotOrder = append(gotOrder, k)
		} else if b := between[k]; b != len(gotOrder) {
			probs = append(probs, fmt.Sprintf("step result %s recorded after the fixed results %v, the reference records it after %v",
				k, gotOrder, wantOrder[:b]))
		}
	}
	if len(gotOrder) > len(wantOrder) || !slices.Equal(gotOrder, wantOrder[:len(gotOrder)]) {
		probs = append(probs, fmt.Sprintf("step results out of order: %v, the reference records %v", gotOrder, wantOrder))
	}
	var lost []string
	for _, st := range ref.Steps {
		k := rowKey(st)
		if _, ok := got[k]; ok {
			continue
		}
		p, fixed := place[k]
		if complete || (fixed && p < len(gotOrder)) || (!fixed && between[k] < len(gotOrder)) {
			lost = append(lost, k)
		}
	}
	if len(lost) > 0 {
		probs = append(probs, fmt.Sprintf("lost step results %v", lost))
	}
	// Within an item, the body's steps in order.
	itemPos := map[string]int{}
	for i, st := range ref.Steps {
		itemPos[rowKey(st)] = i
	}
	lastInItem := map[string]int{}
	for _, st := range s.Steps {
		j := strings.LastIndex(st.Key, "].")
		if j < 0 || strings.HasPrefix(st.Key, "compensate:") {
			continue
		}
		item, p := st.Key[:j+1], itemPos[rowKey(st)]
		if prev, ok := lastInItem[item]; ok && p < prev {
			probs = append(probs, fmt.Sprintf("step result %s recorded after a later step of the same item", rowKey(st)))
		}
		lastInItem[item] = p
	}
	// Compensations: in the reverse order in which this run completed the
	// steps they undo.
	prev, prevKey, prevTarget := len(s.Steps), "", ""
	for _, st := range s.Steps {
		if !strings.HasPrefix(st.StepID, "compensate:") {
			continue
		}
		target := fmt.Sprintf("%s#%d", strings.TrimPrefix(st.Key, "compensate:"), st.Visit)
		p, ok := got[target]
		switch {
		case !ok:
			probs = append(probs, fmt.Sprintf("compensation %s of a step that is not recorded", rowKey(st)))
			continue
		case s.Steps[p].Status != "succeeded":
			probs = append(probs, fmt.Sprintf("compensation %s of a step that %s", rowKey(st), s.Steps[p].Status))
		case p > prev:
			probs = append(probs, fmt.Sprintf("compensations out of order: %s ran after %s, but %s completed after %s (want the reverse order of completion)",
				st.Key, prevKey, target, prevTarget))
		}
		prev, prevKey, prevTarget = p, st.Key, target
	}

	// Attempts: the reference's, each once; all of those of a step whose
	// result is recorded.
	wantA := map[string]bool{}
	for _, a := range ref.AttemptR {
		wantA[fmt.Sprintf("%s#%d attempt %d %s", a.Key, a.Visit, a.Attempt, a.Status)] = true
	}
	gotA := map[string]bool{}
	for _, a := range s.AttemptR {
		k := fmt.Sprintf("%s#%d attempt %d %s", a.Key, a.Visit, a.Attempt, a.Status)
		gotA[k] = true
		if !wantA[k] {
			probs = append(probs, "unexpected "+k)
		}
	}
	for _, a := range ref.AttemptR {
		k := fmt.Sprintf("%s#%d attempt %d %s", a.Key, a.Visit, a.Attempt, a.Status)
		if _, recorded := got[fmt.Sprintf("%s#%d", a.Key, a.Visit)]; !gotA[k] && (complete || recorded) {
			probs = append(probs, "lost "+k)
		}
	}

	// Events that record something (all but step.started and
	// run.resumed): the reference's, each as often, with the same data
	// (times, delays and run ids aside).
	gc, wc := flowOutcome(s), flowOutcome(ref)
	for _, k := range sortedKeys(gc, wc) {
		switch {
		case gc[k] > wc[k]:
			probs = append(probs, fmt.Sprintf("duplicated: %d × %s, the reference has %d", gc[k], k, wc[k]))
		case complete && gc[k] < wc[k]:
			probs = append(probs, fmt.Sprintf("lost: %d × %s, the reference has %d", gc[k], k, wc[k]))
		}
	}

	// Outputs and error.
	if complete {
		if normJSON(s.Outputs) != normJSON(ref.Outputs) {
			probs = append(probs, fmt.Sprintf("outputs %s, want %s", s.Outputs, ref.Outputs))
		}
		if s.Error != ref.Error {
			probs = append(probs, fmt.Sprintf("error %s, want %s", s.Error, ref.Error))
		}
		if len(s.Timers) > 0 {
			probs = append(probs, fmt.Sprintf("durable wake-ups %v left after the run ended", s.Timers))
		}
	} else if s.Outputs != "" {
		probs = append(probs, "outputs recorded before the run ended: "+s.Outputs)
	}
	if diverged != "" {
		// The run took another path than the reference: name the turn, and
		// what follows from it only in short.
		rest := slices.DeleteFunc(slices.Clone(probs[head:]), func(p string) bool { return p == diverged })
		probs = append(probs[:head:head], "took another path than the reference: "+diverged)
		if len(rest) > 0 {
			var some []string
			for _, p := range rest[:min(3, len(rest))] {
				if len(p) > 140 {
					p = p[:140] + "…"
				}
				some = append(some, p)
			}
			probs = append(probs, fmt.Sprintf("… and %d differences that follow from it, such as: %s", len(rest), strings.Join(some, "; ")))
		}
	}
	return probs
}

// normRow is a step result without what differs between executions
// (times inside outputs).
func normRow(st stepRow) stepRow {
	st.Output = normJSON(st.Output)
	return st
}

func flowOutcome(s *runSnap) map[string]int {
	m := map[string]int{}
	for _, e := range s.Events {
		if e.Type != "step.started" && e.Type != "run.resumed" {
			m[strings.TrimSpace(e.Type+" "+e.StepID+" "+normJSON(e.Data))]++
		}
	}
	return m
}

func lastEvents(s *runSnap, k int) string {
	var out []string
	for _, e := range s.Events[max(0, len(s.Events)-k):] {
		out = append(out, strings.TrimSpace(fmt.Sprintf("%d %s %s %s", e.Seq, e.Type, e.StepID, e.Data)))
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// normJSON is canonical JSON without what differs between executions of
// the same run: times (RFC 3339 strings), backoff delays and the ids of
// parent and child runs.
func normJSON(s string) string {
	if s == "" {
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(normValue("", v))
	return strings.TrimSuffix(b.String(), "\n")
}

func normValue(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normValue(k, e)
		}
	case []any:
		for i, e := range x {
			x[i] = normValue("", e)
		}
	case string:
		if key == "parent_id" || key == "child_run_id" {
			return "<run id>"
		}
		if _, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return "<time>"
		}
	case float64:
		if key == "delay_ms" {
			return "<delay>"
		}
	}
	return v
}

// ---------------------------------------------------------------------------
// The kill loop of the control-flow scenario.

type flowCrash struct {
	t          *testing.T
	bin, wf    string
	home       string
	durability string
	refs       map[int]*flowRef
	shape      flowShape
	rng        *rand.Rand
	n          map[string]int // run id → its input n
	order      []string       // run ids in creation order
	// positions counts where the kills caught the runs (a run counted
	// once per kill).
	positions map[string]int
}

func (f *flowCrash) createRuns(k int) {
	base := len(f.order)
	args := make([][]string, k)
	ns := make([]int, k)
	for i := range k {
		ns[i] = 1 + (base+i)%flowInputs
		args[i] = flowArgs(ns[i])
	}
	for i, id := range detachRuns(f.t, f.bin, f.home, f.durability, f.wf, args) {
		if _, dup := f.n[id]; dup {
			f.t.Fatalf("bug: run --detach returned the run id %s twice", id)
		}
		f.n[id] = ns[i]
		f.order = append(f.order, id)
	}
}

func (f *flowCrash) run(runs int) {
	t := f.t
	start := time.Now()
	f.createRuns(1) // alone: it creates the database
	f.createRuns(runs - 1)
	t.Logf("%d runs created in %v", runs, time.Since(start).Round(time.Millisecond))

	kills, waves, noProgress, idle := 0, 0, 0, 0
	lo, hi := 20*time.Millisecond, 300*time.Millisecond
	recorded := 0
	waveRound, waveRecorded := 1, 0
	r1 := f.refs[1]
	perRun := len(r1.parent.Steps) + len(r1.child.Steps)
	loopStart := time.Now()
	for round := 1; ; round++ {
		if round > flowMaxRounds {
			t.Fatalf("bug: the runs did not finish after %d rounds (%d kills): %s", flowMaxRounds, kills, f.summary(f.check(false)))
		}
		killAfter := time.Duration(0)
		if kills < flowMaxKills {
			killAfter = lo + time.Duration(f.rng.Int64N(int64(hi-lo)+1))
		}
		// The test's kills, dozens in a row within milliseconds of each
		// start, catch a step with an effect (a parallel group, a retried
		// call) in flight more often than a step that crashes its process
		// would be let run (--max-recoveries, 3): this test is about what
		// is recorded, TestCrashLoopEndsWithStepCrashed about that limit.
		// (The straight-line workflow above has pure steps only, which a
		// crash never counts against.)
		res := resumeAllProc(t, f.bin, f.home, f.durability, killAfter, flowHang, func() string { return f.summary(f.check(false)) }, "--max-recoveries", "1000")
		snaps := f.check(false)
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
				lo, hi, idle = lo*3/2, hi*3/2, 0
				t.Logf("round %d: nothing recorded in 3 rounds; kill delays now %v–%v", round, lo, hi)
			}
			caught := f.caught(snaps)
			if testing.Verbose() {
				t.Logf("round %d: killed after %v; %d step results recorded (+%d); caught %v",
					round, killAfter.Round(time.Millisecond), now, progress, caught)
			}
			continue
		}
		t.Logf("round %d: resume --all finished by itself after %d kills; %d step results recorded (+%d)", round, kills, now, progress)
		if !strings.Contains(res.stderr, "no run is running") {
			t.Errorf("resume --all exited 0 without saying %q; stderr: %s", "no run is running", res.stderr)
		}
		if n := countStatus(snaps, "running") + countStatus(snaps, "pending"); n > 0 {
			t.Fatalf("bug: resume --all exited 0 but %d runs are still running: %s", n, f.summary(snaps))
		}
		if kills >= flowMinKills {
			break
		}
		if waves >= flowMaxWaves {
			msg := fmt.Sprintf("the binary was killed only %d times (want %d) after %d extra waves of runs", kills, flowMinKills, waves)
			if kills < flowMinKills/2 {
				t.Error(msg)
			} else {
				t.Log(msg)
			}
			break
		}
		rate := float64(now-waveRecorded) / float64(round-waveRound+1)
		more := int(1.5 * float64(flowMinKills-kills+1) * rate / float64(perRun))
		more = min(max(more, 12), 120)
		waves++
		waveRound, waveRecorded = round+1, now
		f.createRuns(more)
		t.Logf("only %d kills so far: created a wave of %d more runs", kills, more)
	}
	t.Logf("kill loop: %d kills (%d before anything was recorded) in %v, %d runs, %d step results",
		kills, noProgress, time.Since(loopStart).Round(time.Millisecond), len(f.n), recorded)
	var where []string
	for _, k := range slices.Sorted(maps.Keys(f.positions)) {
		where = append(where, fmt.Sprintf("%s %d", k, f.positions[k]))
	}
	t.Logf("the kills caught runs: %s", strings.Join(where, ", "))

	snaps := f.check(true)
	f.checkCLI(snaps)
	t.Logf("all %d runs (%d succeeded, %d failed as their reference) and their %d child runs ended like the references (%v in all)",
		len(f.n), countTop(snaps, "succeeded"), countTop(snaps, "failed"), len(snaps)-len(f.n), time.Since(start).Round(time.Millisecond))
}

func countTop(snaps map[string]*runSnap, status string) int {
	n := 0
	for _, s := range snaps {
		if s.ParentID == "" && s.Status == status {
			n++
		}
	}
	return n
}

// caught counts where a kill caught the running top-level runs.
func (f *flowCrash) caught(snaps map[string]*runSnap) map[string]int {
	m := map[string]int{}
	for _, id := range f.order {
		s := snaps[id]
		if s == nil || (s.Status != "running" && s.Status != "pending") {
			continue
		}
		rec := map[string]bool{}
		for _, st := range s.Steps {
			rec[st.Key] = true
		}
		items := 0
		for i := range flowItems {
			if rec[fmt.Sprintf("each[%d].shape", i)] {
				items++
			}
		}
		pos := "between steps"
		switch {
		case len(s.Steps) == 0 && countType(s.Events, "step.retrying") == 0:
			pos = "before the first step"
		case !rec["flaky"] && countType(s.Events, "step.retrying") > 0:
			pos = "retry backoff"
		case !rec["poll"] && countType(s.Events, "step.repeating") > 0:
			pos = "repeat"
		case !rec["settle"] && countType(s.Events, "step.sleeping") > 0:
			pos = "sleep"
		case !rec["checks"] && (rec["check_a"] || rec["check_b"] || rec["check_c"]):
			pos = "parallel"
		case !rec["each"] && (items > 0 || rec["each[0].work"] || rec["each[1].work"] || rec["each[2].work"]):
			pos = "foreach"
		case !rec["sub"] && len(childStarts(s)) > 0:
			pos = "sub-workflow"
		case rec["on_failure:0"]:
			pos = "on_failure hooks"
		case rec["boom"] && findRow(s, "boom").Status == "failed":
			pos = "compensating"
		case rec["final"]:
			pos = "on_success"
		}
		m[pos]++
		f.positions[pos]++
	}
	return m
}

// check reads the database (no process runs) and checks every run and
// child run against the references: a consistent prefix, or all of it
// when final. It fails the test on any inconsistency.
func (f *flowCrash) check(final bool) map[string]*runSnap {
	t := f.t
	t.Helper()
	snaps, err := readSnapshots(f.home)
	if err != nil {
		t.Fatalf("read the database: %v", err)
	}
	var probs []string
	var notFound []string // runs whose sub step did not find the child workflow
	children := map[string][]*runSnap{}
	for _, s := range snaps {
		switch _, created := f.n[s.ID]; {
		case s.ParentID != "":
			children[s.ParentID] = append(children[s.ParentID], s)
			if _, ok := f.n[s.ParentID]; !ok {
				probs = append(probs, fmt.Sprintf("run %s (%s) has the parent %s, which is not a run the test created", s.ID, s.Workflow, s.ParentID))
			}
		case !created:
			probs = append(probs, fmt.Sprintf("run %s (%s): a top-level run the test did not create", s.ID, s.Workflow))
		}
	}
	for _, id := range f.order {
		n := f.n[id]
		ref := f.refs[n]
		s := snaps[id]
		label := fmt.Sprintf("run %s (n=%d, fail=%v)", id, n, flowFails(n))
		if s == nil {
			probs = append(probs, label+": lost (not in the database)")
			continue
		}
		label += " " + s.Status
		for _, p := range flowCompare(s, ref.parent, f.shape.parentTop, final) {
			probs = append(probs, label+": "+p)
		}
		// The sub-workflow step starts one child run, the one its event
		// names, whatever crashes happen; its output is the child's
		// outputs.
		kids := children[id]
		starts := childStarts(s)
		var ids []string
		for _, k := range kids {
			ids = append(ids, k.ID)
		}
		switch {
		case len(kids) > 1:
			probs = append(probs, fmt.Sprintf("%s: %d child runs %v for its one sub-workflow call", label, len(kids), ids))
		case len(starts) > 1:
			probs = append(probs, fmt.Sprintf("%s: %d step.child_started events %v", label, len(starts), starts))
		case len(starts) == 1 && !slices.Equal(ids, starts):
			probs = append(probs, fmt.Sprintf("%s: step.child_started names the child %s, the database has the child runs %v", label, starts[0], ids))
		case final && len(kids) == 0:
			probs = append(probs, label+": no child run at the end")
		}
		for _, k := range kids {
			if k.Workflow != flowChild {
				probs = append(probs, fmt.Sprintf("%s: child run %s runs %s, want %s", label, k.ID, k.Workflow, flowChild))
			}
			for _, p := range flowCompare(k, ref.child, f.shape.childTop, final) {
				probs = append(probs, fmt.Sprintf("%s, child run %s %s: %s", label, k.ID, k.Status, p))
			}
		}
		if sub := findRow(s, "sub"); sub != nil && sub.Status == "failed" && strings.Contains(sub.Error, "no workflow named") && len(kids) == 0 {
			notFound = append(notFound, id)
		}
		if sub := findRow(s, "sub"); sub != nil && sub.Status == "succeeded" {
			if len(kids) != 1 || kids[0].Status != "succeeded" || !jsonEqual(sub.Output, kids[0].Outputs) {
				probs = append(probs, fmt.Sprintf("%s: sub succeeded with %s, but the child runs are %v", label, sub.Output, f.describe(kids)))
			}
		}
	}
	if len(probs) > 0 {
		when := "after a kill"
		if final {
			when = "at the end"
		}
		if len(probs) > 20 {
			probs = append(probs[:20], fmt.Sprintf("… and %d more", len(probs)-20))
		}
		headline := ""
		if len(notFound) > 0 {
			headline = fmt.Sprintf("\n  The step sub of %d runs (the first: %s) failed: the process that drove it (resume --all) did not find the sub-workflow %s, "+
				"which lies next to %s, the file that was run; only the process that loaded that file looks there. The details:",
				len(notFound), notFound[0], flowChild, filepath.Base(f.wf))
		}
		t.Fatalf("bug: the database is inconsistent %s (durability %s, %s):%s\n  %s", when, f.durability, f.summary(snaps), headline, strings.Join(probs, "\n  "))
	}
	return snaps
}

func (f *flowCrash) describe(runs []*runSnap) []string {
	var out []string
	for _, r := range runs {
		out = append(out, fmt.Sprintf("%s %s %s", r.ID, r.Status, r.Outputs))
	}
	return out
}

func (f *flowCrash) summary(snaps map[string]*runSnap) string {
	top, kids := map[string]int{}, map[string]int{}
	for _, s := range snaps {
		if s.ParentID == "" {
			top[s.Status]++
		} else {
			kids[s.Status]++
		}
	}
	return fmt.Sprintf("runs by status %v, child runs by status %v, %d step results recorded (home %s)", top, kids, countSteps(snaps), f.home)
}

// checkCLI checks that the CLI reads the results.
func (f *flowCrash) checkCLI(snaps map[string]*runSnap) {
	t := f.t
	id := f.order[f.rng.IntN(len(f.order))]
	ref := f.refs[f.n[id]].parent
	stdout, stderr, code := runCLI(f.bin, f.home, f.durability, "show", id, "--json")
	if code != 0 {
		t.Fatalf("show %s --json: exit %d\nstderr: %s", id, code, stderr)
	}
	var shown struct {
		Run struct {
			ID      string          `json:"run_id"`
			Status  string          `json:"status"`
			Outputs json.RawMessage `json:"outputs"`
			Steps   []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"steps"`
		} `json:"run"`
		Events []struct {
			Seq int64 `json:"seq"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(stdout), &shown); err != nil {
		t.Fatalf("show %s --json: not JSON: %v\n%s", id, err, stdout)
	}
	outputs := canonicalJSON(shown.Run.Outputs)
	if outputs == "null" {
		outputs = ""
	}
	if shown.Run.ID != id || shown.Run.Status != ref.Status || normJSON(outputs) != normJSON(ref.Outputs) {
		t.Errorf("show %s --json: run %s %s outputs %s, want %s with %s", id, shown.Run.ID, shown.Run.Status, shown.Run.Outputs, ref.Status, ref.Outputs)
	}
	if len(shown.Events) != len(snaps[id].Events) {
		t.Errorf("show %s --json: %d events, the database has %d", id, len(shown.Events), len(snaps[id].Events))
	}
	stdout, stderr, code = runCLI(f.bin, f.home, f.durability, "runs", "--status", "running,pending,waiting", "--json")
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
		t.Errorf("runs --status running,pending,waiting lists %d runs, want none:\n%s", len(listed.Runs), stdout)
	}
}

// keepHome copies the database of a failed test out of the temporary
// directory (which the test deletes) for a post-mortem.
func keepHome(t *testing.T, home, pattern string) {
	if !t.Failed() {
		return
	}
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return
	}
	files, _ := filepath.Glob(filepath.Join(home, "stepwise.db*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600)
		}
	}
	t.Logf("the database is kept in %s (open it with sqlite3, or: stepwise --home %s runs)", dir, dir)
}

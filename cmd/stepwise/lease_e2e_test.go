//go:build unix

package main

// Issue 22's acceptance tests with real processes: several `serve`
// processes (and `resume --all`) on one SQLite home, and `serve --http`
// replicas on one PostgreSQL database, drive runs whose steps append a
// line "<run id> <step id>" to one file. Whatever the processes do, no
// effect happens twice and every step is recorded once; when a replica is
// killed with SIGKILL, only the steps it had in flight may happen twice.

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// effectsFile is the file, in the workspace, the effect steps append to.
const effectsFile = "effects.log"

// effectShape is how a test workflow's effect steps are made.
type effectShape struct {
	name string
	// ask: a question before the effects, whose answer ends each line.
	ask bool
	// effects: e1 … eN, each appending one line.
	effects int
	// between: a noop step of this delay between two effects ("": none).
	between string
	// nap: a sleep step (a durable wake-up, which any process may serve)
	// of this duration after e<napAfter> (default e1) ("": none).
	nap      string
	napAfter int
	// gateAfter: a shell step "gate" after e<gateAfter> waits until the
	// file gateFile exists in the workspace (0: none).
	gateAfter int
	// shellSleep: the effects are shell commands that append, then sleep
	// this long (a step that is killed while it sleeps has happened);
	// otherwise the file action appends.
	shellSleep string
}

// gateFile is the file the gate step of a shape waits for.
const gateFile = "gate"

// effectSteps are the ids of the steps that append.
func (s effectShape) effectSteps() []string {
	ids := make([]string, s.effects)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%d", i+1)
	}
	return ids
}

// steps are the ids of all the workflow's steps, in order.
func (s effectShape) steps() []string {
	var ids []string
	if s.ask {
		ids = append(ids, "ask")
	}
	for i, id := range s.effectSteps() {
		if s.nap != "" && i == max(s.napAfter, 1) {
			ids = append(ids, "nap")
		}
		if s.gateAfter > 0 && i == s.gateAfter {
			ids = append(ids, "gate")
		}
		if i > 0 && s.between != "" {
			ids = append(ids, fmt.Sprintf("w%d", i))
		}
		ids = append(ids, id)
	}
	return ids
}

// yaml is the workflow.
func (s effectShape) yaml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: %s\nsteps:\n", s.name)
	answer := ""
	if s.ask {
		b.WriteString("  - id: ask\n    ask: {prompt: \"Word?\", type: string}\n")
		answer = " ${{ steps.ask.answer }}"
	}
	for i, id := range s.effectSteps() {
		if s.nap != "" && i == max(s.napAfter, 1) {
			fmt.Fprintf(&b, "  - id: nap\n    sleep: %s\n", s.nap)
		}
		if s.gateAfter > 0 && i == s.gateAfter {
			fmt.Fprintf(&b, "  - id: gate\n    uses: shell\n    with: {command: 'while [ ! -e %s ]; do sleep 0.05; done', shell: true}\n", gateFile)
		}
		if i > 0 && s.between != "" {
			fmt.Fprintf(&b, "  - id: w%d\n    uses: noop\n    with: {delay: %s}\n", i, s.between)
		}
		if s.shellSleep != "" {
			fmt.Fprintf(&b, "  - id: %s\n    uses: shell\n    with:\n      command: 'printf \"%%s %%s\\n\" \"$1\" \"$2\" >> %s; sleep %s'\n      shell: true\n      args: ['${{ run.id }}', %s]\n",
				id, effectsFile, s.shellSleep, id)
			continue
		}
		fmt.Fprintf(&b, "  - id: %s\n    uses: file\n    with:\n      op: append\n      path: %s\n      content: \"${{ run.id }} %s%s\\n\"\n", id, effectsFile, id, answer)
	}
	return b.String()
}

// effectCounts reads the effects file: how often each "<run> <step>"
// happened. A line of any other form is a problem.
func effectCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			t.Errorf("%s: a torn or foreign line %q", path, sc.Text())
			continue
		}
		counts[f[0]+" "+f[1]]++
	}
	return counts
}

// checkEffects checks that each effect step of each run happened at least
// once, and that nothing else did; it returns the (run, step)s that
// happened more than once, with their counts.
func checkEffects(t *testing.T, counts map[string]int, runs []string, steps []string) map[string]int {
	t.Helper()
	want := map[string]bool{}
	missing := 0
	for _, id := range runs {
		for _, st := range steps {
			k := id + " " + st
			want[k] = true
			if counts[k] == 0 {
				if missing++; missing <= 10 {
					t.Errorf("run %s step %s: its effect never happened (not in %s)", id, st, effectsFile)
				}
			}
		}
	}
	if missing > 10 {
		t.Errorf("… %d effects missing in all", missing)
	}
	repeated := map[string]int{}
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		switch {
		case !want[k]:
			t.Errorf("%s: a line %q of no run of this test", effectsFile, k)
		case counts[k] > 1:
			repeated[k] = counts[k]
		}
	}
	return repeated
}

// checkRecorded checks what the store recorded for each run: succeeded,
// the result of each of steps (the workflow's, in order) once and no
// other, each step.succeeded event once, and what holds for any run
// (runSnap.selfCheck: gapless events, one end).
func checkRecorded(t *testing.T, snaps map[string]*runSnap, runs []string, steps []string) {
	t.Helper()
	bad := 0
	for _, id := range runs {
		s := snaps[id]
		if s == nil {
			t.Errorf("run %s is not in the store", id)
			bad++
			continue
		}
		probs := s.selfCheck()
		if s.Status != "succeeded" {
			probs = append(probs, fmt.Sprintf("status %s, error %s", s.Status, s.Error))
		}
		rows := map[string]int{}
		for _, st := range s.Steps {
			rows[st.StepID]++
			if st.Status != "succeeded" {
				probs = append(probs, fmt.Sprintf("step %s visit %d is %s", st.StepID, st.Visit, st.Status))
			}
		}
		for _, st := range slices.Sorted(maps.Keys(rows)) {
			if !slices.Contains(steps, st) {
				probs = append(probs, fmt.Sprintf("a result of a step %q the workflow does not have", st))
			}
		}
		byStep := countByStep(s.Events)
		for _, st := range steps {
			if rows[st] != 1 {
				probs = append(probs, fmt.Sprintf("step %s: %d step results recorded, want 1", st, rows[st]))
			}
			if n := byStep["step.succeeded "+st]; n != 1 {
				probs = append(probs, fmt.Sprintf("step %s: %d step.succeeded events, want 1", st, n))
			}
		}
		if len(probs) > 0 {
			if bad++; bad <= 10 {
				t.Errorf("run %s: %s\n  last events: %s", id, strings.Join(probs, "; "), lastEvents(s, 8))
			}
		}
	}
	if bad > 10 {
		t.Errorf("… %d runs wrong in all", bad)
	}
}

// waitAll waits until every run has left running (run_get with
// wait_seconds, through cs), within limit, and returns their statuses.
func waitAll(t *testing.T, cs *mcp.ClientSession, runs []string, limit time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(limit)
	status := map[string]string{}
	for _, id := range runs {
		for {
			left := time.Until(deadline).Seconds()
			if left <= 0 {
				t.Fatalf("run %s still %s after %v", id, status[id], limit)
			}
			r, isErr := callTool(t, cs, "run_get", map[string]any{"run_id": id, "wait_seconds": min(left, 20)}, nil)
			if isErr {
				t.Fatalf("run_get %s: %+v", id, r)
			}
			status[id] = r.Status
			if r.Status != "running" && r.Status != "pending" {
				break
			}
		}
	}
	return status
}

// TestServesAndResumeAllOnOneHome: two `stepwise serve` processes (two MCP
// clients that each start one on the same home) and a `stepwise resume
// --all` started while their runs are in flight. Without run leases the
// processes ran the same steps twice (issue 22: 12 of 20 rounds); now
// each effect happens once, each step is recorded once, and resume --all
// leaves the servers' runs to them, saying so.
func TestServesAndResumeAllOnOneHome(t *testing.T) {
	bin := sharedBinary(t)
	home := t.TempDir()
	shape := effectShape{name: "effects", effects: 4, between: "50ms", gateAfter: 2}
	const runs = 50
	ids := make([]string, 0, runs)
	start := func(cs *mcp.ClientSession, which int) {
		r, isErr := callTool(t, cs, "run_start", map[string]any{"definition": shape.yaml(), "wait_seconds": 0}, nil)
		if isErr || r.RunID == "" {
			t.Fatalf("run_start %d through server %d: %+v", len(ids), which, r)
		}
		ids = append(ids, r.RunID)
	}
	// The second server starts (and recovers, as a server does at start)
	// while the first one's runs are in flight; then both start runs.
	servers := []*mcp.ClientSession{serveStdio(t, "--home", home, "serve", "--allow-shell")}
	began := time.Now()
	for range runs / 4 {
		start(servers[0], 1)
	}
	servers = append(servers, serveStdio(t, "--home", home, "serve", "--allow-shell"))
	for len(ids) < runs {
		start(servers[len(ids)%2], len(ids)%2+1)
	}
	t.Logf("%d runs started through 2 servers in %v", runs, time.Since(began).Round(time.Millisecond))

	// resume --all while the runs are in flight (none can pass its gate
	// yet): it drives none of them, and names them all as the servers'.
	// The gate opens when it returns or, should it drive runs itself (and
	// wait for them), after 5 s.
	var gateOnce sync.Once
	var gateErr error
	gateByTimer := false
	openGate := func(byTimer bool) {
		gateOnce.Do(func() {
			gateByTimer = byTimer
			gateErr = os.WriteFile(filepath.Join(home, "workspace", gateFile), nil, 0o600)
		})
	}
	timer := time.AfterFunc(5*time.Second, func() { openGate(true) })
	res := resumeAllProc(t, bin, home, "full", 0, 60*time.Second, func() string { return "" })
	timer.Stop()
	openGate(false)
	if gateErr != nil {
		t.Fatal(gateErr)
	}
	if gateByTimer {
		t.Errorf("resume --all ran for over 5 s: it drove runs the servers drive, and waited for them at their gate")
	}
	re := regexp.MustCompile(`run (\S+): driven by another process \(([^)]*)\), left to it`)
	elsewhere := re.FindAllStringSubmatch(res.stderr, -1)
	t.Logf("resume --all (%v after the first start) left %d runs to the servers", time.Since(began).Round(time.Millisecond), len(elsewhere))
	for _, m := range elsewhere {
		if !slices.Contains(ids, m[1]) {
			t.Errorf("resume --all names a run of no server: %q", m[0])
		}
		if !strings.Contains(m[2], "/") {
			t.Errorf("resume --all names no owner: %q", m[0])
		}
	}
	if len(elsewhere) != runs {
		t.Errorf("resume --all named %d runs driven by the servers, want all %d:\n%s", len(elsewhere), runs, res.stderr)
	} else if want := fmt.Sprintf("(%d driven by other processes)", runs); !strings.Contains(res.stderr, want) {
		t.Errorf("resume --all's summary: want %q in\n%s", want, res.stderr)
	}

	status := waitAll(t, servers[0], ids, 45*time.Second)
	t.Logf("all %d runs ended %v after the first start", runs, time.Since(began).Round(time.Millisecond))
	for _, id := range ids {
		if status[id] != "succeeded" {
			t.Errorf("run %s: %s", id, status[id])
		}
	}
	repeated := checkEffects(t, effectCounts(t, filepath.Join(home, "workspace", effectsFile)), ids, shape.effectSteps())
	for k, n := range repeated {
		t.Errorf("effect %q happened %d times", k, n)
	}
	snaps, err := readSnapshots(home)
	if err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, snaps, ids, shape.steps())
}

// TestServeKilledOnOneHome: of two `stepwise serve` processes on one
// home, the one driving runs of slow effect steps is killed with SIGKILL;
// `resume --all` started at once takes its runs over without waiting for
// their leases to expire (their holder is a process of this machine that
// no longer exists) and drives them to their end. The other server never
// drives them twice: only the steps in flight at the kill happen again.
func TestServeKilledOnOneHome(t *testing.T) {
	bin := sharedBinary(t)
	home := t.TempDir()
	victim := exec.Command(bin, "--home", home, "serve", "--allow-shell")
	cs1, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: victim}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs1.Close() })
	cs2 := serveStdio(t, "--home", home, "serve", "--allow-shell")
	shape := effectShape{name: "slow", effects: 5, shellSleep: "0.2"}
	const runs = 20
	ids := make([]string, runs)
	for i := range ids {
		r, isErr := callTool(t, cs1, "run_start", map[string]any{"definition": shape.yaml(), "wait_seconds": 0}, nil)
		if isErr || r.RunID == "" {
			t.Fatalf("run_start %d: %+v", i, r)
		}
		ids[i] = r.RunID
	}
	db, err := openHomeDB(home)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pid := victim.Process.Pid
	waitDriving(t, db, pid, 3)
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	driven := leasedBy(t, db, pid)
	atKill, err := readSnapshots(home)
	if err != nil {
		t.Fatal(err)
	}
	inFlight, byStep := stepsInFlight(atKill, driven, shape.steps())
	t.Logf("serve 1 (pid %d) killed driving %d runs, in flight by step %v", pid, len(driven), byStep)
	if len(driven) == 0 {
		t.Fatal("the killed server drove no run at the kill: the test did not test a takeover")
	}

	killed := time.Now()
	res := resumeAllProc(t, bin, home, "full", 0, 60*time.Second, func() string { return "" })
	t.Logf("resume --all ended %v after the kill: %s", time.Since(killed).Round(time.Millisecond), strings.TrimSpace(res.stderr))
	// It drove the killed server's runs to their end: none is left
	// running (within the lease TTL, which would let the other server
	// claim them).
	after, err := readSnapshots(home)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range driven {
		if s := after[id]; s == nil || s.Status != "succeeded" {
			t.Errorf("run %s of the killed server after resume --all: %+v", id, s)
		}
	}

	status := waitAll(t, cs2, ids, 45*time.Second)
	for _, id := range ids {
		if status[id] != "succeeded" {
			t.Errorf("run %s: %s", id, status[id])
		}
	}
	counts := effectCounts(t, filepath.Join(home, "workspace", effectsFile))
	checkRepeats(t, checkEffects(t, counts, ids, shape.effectSteps()), inFlight, driven)
	snaps, err := readSnapshots(home)
	if err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, snaps, ids, shape.steps())
}

// openPG opens a PostgreSQL database for the test to read the store.
func openPG(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(2)
	t.Cleanup(func() { db.Close() })
	return db
}

// replicaSet is N `serve --http` replicas on one PostgreSQL database, each
// with a home of its own, sharing one workspace, with a session each.
type replicaSet struct {
	db        string
	workspace string
	urls      []string
	procs     []*exec.Cmd
	sessions  []*mcp.ClientSession
	logs      []string
}

func startReplicas(t *testing.T, n int, extra ...string) *replicaSet {
	t.Helper()
	rs := &replicaSet{db: pgFreshDatabase(t), workspace: t.TempDir()}
	bin := sharedBinary(t)
	logs := t.TempDir()
	for i := range n {
		log := filepath.Join(logs, fmt.Sprintf("replica%d.log", i+1))
		args := append([]string{"--workspace", rs.workspace, "--log-file", log}, extra...)
		u, cmd := startReplicaProc(t, bin, t.TempDir(), rs.db, args...)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("r%d", i+1), Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: u}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		rs.urls = append(rs.urls, u)
		rs.procs = append(rs.procs, cmd)
		rs.sessions = append(rs.sessions, cs)
		rs.logs = append(rs.logs, log)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, l := range rs.logs {
				b, _ := os.ReadFile(l)
				t.Logf("replica %d's log (last 4 KiB):\n%s", i+1, tailString(string(b), 4<<10))
			}
		}
	})
	return rs
}

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestReplicasAnswerAnywhere: three `serve --http` replicas on one
// PostgreSQL database. A workflow saved through replica 1 is run by name
// through the others (runs 1, 4, … start through replica 2); 200 runs,
// each started through one replica and answered through the next, all
// finish with each effect once and each step recorded once — the sleep
// between two effects (a durable wake-up, which any replica's claim may
// serve) included.
func TestReplicasAnswerAnywhere(t *testing.T) {
	rs := startReplicas(t, 3)
	shape := effectShape{name: "answered", ask: true, effects: 3, nap: "300ms"}
	if r, isErr := callTool(t, rs.sessions[0], "workflow_save", map[string]any{"content": shape.yaml()}, nil); isErr || !r.Valid {
		t.Fatalf("workflow_save through replica 1: %+v", r)
	}

	const runs, clients = 200, 20
	ids := make([]string, runs)
	problems := make([]string, runs)
	began := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for range clients {
		wg.Go(func() {
			for i := range next {
				from, to := i%3, (i+1)%3
				r, isErr, err := tryTool(rs.sessions[from], "run_start", map[string]any{"workflow": shape.name}, nil)
				if err != nil || isErr || r.Status != "waiting" || r.Pause == nil {
					problems[i] = fmt.Sprintf("run %d: run_start by name through replica %d: %v %+v", i, from+1, err, r)
					continue
				}
				ids[i] = r.RunID
				r, isErr, err = tryTool(rs.sessions[to], "run_continue", map[string]any{"token": r.Pause.Token, "value": fmt.Sprintf("w%d", i)}, nil)
				if err != nil || isErr || r.Status != "succeeded" {
					problems[i] = fmt.Sprintf("run %d (%s, started through replica %d): run_continue through replica %d: %v %+v", i, ids[i], from+1, to+1, err, r)
				}
			}
		})
	}
	for i := range runs {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Logf("%d runs started and answered across 3 replicas in %v", runs, time.Since(began).Round(time.Millisecond))
	bad := 0
	for _, p := range problems {
		if p != "" {
			if bad++; bad <= 10 {
				t.Error(p)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d runs failed", bad, runs)
	}

	counts := effectCounts(t, filepath.Join(rs.workspace, effectsFile))
	for k, n := range checkEffects(t, counts, ids, shape.effectSteps()) {
		t.Errorf("effect %q happened %d times", k, n)
	}
	snaps, err := snapshotsOf(openPG(t, rs.db))
	if err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, snaps, ids, shape.steps())
}

// ownerOf is a LIKE pattern for the lease owner ids of process pid
// (machine/pid/nonce).
func ownerOf(pid int) string { return fmt.Sprintf("%%/%d/%%", pid) }

// waitDriving waits until process pid holds the leases of at least n
// running runs that have a step recorded.
func waitDriving(t *testing.T, db *sql.DB, pid, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var got int
		err := db.QueryRow(`SELECT count(DISTINCT r.id) FROM runs r JOIN steps s ON s.run_id = r.id
			WHERE r.lease_owner LIKE $1 AND r.status = 'running'`, ownerOf(pid)).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d never drove %d runs with a recorded step (%d)", pid, n, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leasedBy returns the unfinished runs whose lease process pid holds (or
// held, when it ended without releasing it and nobody took it over).
func leasedBy(t *testing.T, db *sql.DB, pid int) []string {
	t.Helper()
	rows, err := db.Query(`SELECT id FROM runs WHERE lease_owner LIKE $1 AND status IN ('running', 'pending') ORDER BY id`, ownerOf(pid))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := closeRows(rows); err != nil {
		t.Fatal(err)
	}
	return ids
}

// stepsInFlight returns, for each of the runs driven, the step it had in
// flight by snaps (the first of steps not recorded), and how many runs had
// each step in flight.
func stepsInFlight(snaps map[string]*runSnap, driven, steps []string) (inFlight map[string]string, byStep map[string]int) {
	inFlight, byStep = map[string]string{}, map[string]int{}
	for _, id := range driven {
		recorded := map[string]bool{}
		if s := snaps[id]; s != nil {
			for _, st := range s.Steps {
				recorded[st.StepID] = true
			}
		}
		for _, st := range steps {
			if !recorded[st] {
				inFlight[id] = st
				byStep[st]++
				break
			}
		}
	}
	return inFlight, byStep
}

// checkRepeats checks the effects that happened more than once (from
// checkEffects) after a process was killed driving the runs driven: each
// is the step that run had in flight, repeated once; it logs how many.
func checkRepeats(t *testing.T, repeated map[string]int, inFlight map[string]string, driven []string) {
	t.Helper()
	repeats := 0
	for _, k := range slices.Sorted(maps.Keys(repeated)) {
		n := repeated[k]
		repeats += n - 1
		run, step, _ := strings.Cut(k, " ")
		if n > 2 || inFlight[run] != step {
			t.Errorf("run %s step %s: its effect happened %d times; the killed process had in flight %q of that run (\"\": none)", run, step, n, inFlight[run])
		}
	}
	t.Logf("%d effects repeated, of %d steps in flight on the killed process", repeats, len(inFlight))
	if repeats > len(driven) {
		t.Errorf("%d effects repeated, more than the %d runs the killed process drove", repeats, len(driven))
	}
}

// TestReplicaKilledMidRun: three replicas drive runs of slow effect steps
// (each appends its line, then sleeps; a durable 300 ms sleep step after
// the third); one is killed with SIGKILL while it drives some. The others
// take its runs over once their leases expire (--lease-ttl 2s), and every run
// finishes with each step recorded once. An effect may happen twice only
// for a step the killed replica had in flight — the first step of one of
// its runs that the store had not recorded at the kill — so at most once
// per run it drove. (A run parked on its wake-up holds no lease: any
// replica serves it when it is due.)
func TestReplicaKilledMidRun(t *testing.T) {
	rs := startReplicas(t, 3, "--allow-shell", "--lease-ttl", "2s")
	shape := effectShape{name: "slow", effects: 5, nap: "300ms", napAfter: 3, shellSleep: "0.2"}
	steps := shape.effectSteps()
	if r, isErr := callTool(t, rs.sessions[0], "workflow_save", map[string]any{"content": shape.yaml()}, nil); isErr || !r.Valid {
		t.Fatalf("workflow_save: %+v", r)
	}
	db := openPG(t, rs.db)

	const runs = 30
	ids := make([]string, runs)
	began := time.Now()
	for i := range ids {
		r, isErr := callTool(t, rs.sessions[i%3], "run_start", map[string]any{"workflow": shape.name, "wait_seconds": 0}, nil)
		if isErr || r.RunID == "" {
			t.Fatalf("run_start %d through replica %d: %+v", i, i%3+1, r)
		}
		ids[i] = r.RunID
	}

	// Kill replica 1 once it is mid-way through several runs: it holds
	// their leases and has recorded some of their steps.
	victim := rs.procs[0]
	pid := victim.Process.Pid
	waitDriving(t, db, pid, 3)
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	killed := time.Now()
	// A commit the killed process had sent is finished by its backend or
	// rolled back: give it a moment, then read what the store holds.
	time.Sleep(time.Second)

	// The runs the killed replica was driving (still running, leased by
	// it) and, for each, the step in flight: the first not recorded.
	driven := leasedBy(t, db, pid)
	atKill, err := snapshotsOf(db)
	if err != nil {
		t.Fatal(err)
	}
	inFlight, byStep := stepsInFlight(atKill, driven, shape.steps())
	var finished int
	for _, s := range atKill {
		if s.Status == "succeeded" {
			finished++
		}
	}
	t.Logf("replica 1 (pid %d) killed %v after the first start, driving %d runs, in flight by step %v (%d of %d runs finished 1 s later)",
		pid, killed.Sub(began).Round(time.Millisecond), len(driven), byStep, finished, runs)
	if len(driven) == 0 {
		t.Fatal("the killed replica drove no run at the kill: the test did not test a takeover")
	}

	status := waitAll(t, rs.sessions[1], ids, 50*time.Second)
	t.Logf("every run ended %v after the kill", time.Since(killed).Round(time.Millisecond))
	for _, id := range ids {
		if status[id] != "succeeded" {
			t.Errorf("run %s: %s", id, status[id])
		}
	}

	// Each of the killed replica's runs was taken over by another
	// replica's claim, which logs it.
	var logs strings.Builder
	for _, l := range rs.logs[1:] {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		logs.Write(b)
	}
	for _, id := range driven {
		if !strings.Contains(logs.String(), `msg="took over a run whose driver stopped" run_id=`+id) {
			t.Errorf("run %s: no replica logged taking it over", id)
		}
	}

	counts := effectCounts(t, filepath.Join(rs.workspace, effectsFile))
	checkRepeats(t, checkEffects(t, counts, ids, steps), inFlight, driven)
	snaps, err := snapshotsOf(db)
	if err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, snaps, ids, shape.steps())
}

// TestReplicaStoppedMidRun: a replica stopped with SIGTERM while it drives
// runs of slow effect steps lets its steps in flight finish, releases its
// leases (nothing in the store is left leased by it) and exits 0; the
// other replicas finish its runs, and no effect happens twice.
func TestReplicaStoppedMidRun(t *testing.T) {
	rs := startReplicas(t, 3, "--allow-shell")
	shape := effectShape{name: "slow", effects: 5, shellSleep: "0.2"}
	if r, isErr := callTool(t, rs.sessions[0], "workflow_save", map[string]any{"content": shape.yaml()}, nil); isErr || !r.Valid {
		t.Fatalf("workflow_save: %+v", r)
	}
	db := openPG(t, rs.db)
	const runs = 30
	ids := make([]string, runs)
	for i := range ids {
		r, isErr := callTool(t, rs.sessions[i%3], "run_start", map[string]any{"workflow": shape.name, "wait_seconds": 0}, nil)
		if isErr || r.RunID == "" {
			t.Fatalf("run_start %d through replica %d: %+v", i, i%3+1, r)
		}
		ids[i] = r.RunID
	}
	stopped := rs.procs[0]
	pid := stopped.Process.Pid
	waitDriving(t, db, pid, 3)
	before := leasedBy(t, db, pid)
	if err := stopped.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := stopped.Wait(); err != nil {
		t.Errorf("replica 1 after SIGTERM: %v, want exit 0", err)
	}
	if held := leasedBy(t, db, pid); len(held) > 0 {
		t.Errorf("replica 1 exited holding the leases of %d runs: %v", len(held), held)
	}
	t.Logf("replica 1 stopped driving %d runs", len(before))
	stop := time.Now()

	status := waitAll(t, rs.sessions[1], ids, 45*time.Second)
	t.Logf("every run ended %v after replica 1 exited", time.Since(stop).Round(time.Millisecond))
	for _, id := range ids {
		if status[id] != "succeeded" {
			t.Errorf("run %s: %s", id, status[id])
		}
	}
	counts := effectCounts(t, filepath.Join(rs.workspace, effectsFile))
	for k, n := range checkEffects(t, counts, ids, shape.effectSteps()) {
		t.Errorf("effect %q happened %d times", k, n)
	}
	snaps, err := snapshotsOf(db)
	if err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, snaps, ids, shape.steps())
}

// retryWorkflow fails its first step twice (a counter file per run in the
// workspace), then succeeds on the third attempt; each attempt appends a
// line "<run> try<n>", and the next step appends "<run> e1".
const retryWorkflow = `version: 1
name: retrying
steps:
  - id: flaky
    uses: shell
    with:
      command: 'n=$(cat "count-$1" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "count-$1"; printf "%s try%s\n" "$1" "$n" >> effects.log; [ $n -ge 3 ]'
      shell: true
      args: ['${{ run.id }}']
    retry: {attempts: 5, backoff: 100ms}
  - id: e1
    uses: file
    with: {op: append, path: effects.log, content: "${{ run.id }} e1\n"}
`

// TestReplicasRetryOnce: the durable backoffs of 60 runs' retries, due
// while three replicas claim ready runs, are each served once: every
// attempt happens once, and the store records the step once.
func TestReplicasRetryOnce(t *testing.T) {
	rs := startReplicas(t, 3, "--allow-shell")
	if r, isErr := callTool(t, rs.sessions[0], "workflow_save", map[string]any{"content": retryWorkflow}, nil); isErr || !r.Valid {
		t.Fatalf("workflow_save: %+v", r)
	}
	const runs = 60
	ids := make([]string, runs)
	for i := range ids {
		r, isErr := callTool(t, rs.sessions[i%3], "run_start", map[string]any{"workflow": "retrying", "wait_seconds": 0}, nil)
		if isErr || r.RunID == "" {
			t.Fatalf("run_start %d through replica %d: %+v", i, i%3+1, r)
		}
		ids[i] = r.RunID
	}
	status := waitAll(t, rs.sessions[1], ids, 45*time.Second)
	for _, id := range ids {
		if status[id] != "succeeded" {
			t.Errorf("run %s: %s", id, status[id])
		}
	}
	counts := effectCounts(t, filepath.Join(rs.workspace, effectsFile))
	for k, n := range checkEffects(t, counts, ids, []string{"try1", "try2", "try3", "e1"}) {
		t.Errorf("%q happened %d times", k, n)
	}
	snaps, err := snapshotsOf(openPG(t, rs.db))
	if err != nil {
		t.Fatal(err)
	}
	checkRecorded(t, snaps, ids, []string{"flaky", "e1"})
	for _, id := range ids {
		if s := snaps[id]; s != nil {
			if n := countByStep(s.Events)["step.retrying flaky"]; n != 2 {
				t.Errorf("run %s: %d step.retrying events, want 2", id, n)
			}
		}
	}
}

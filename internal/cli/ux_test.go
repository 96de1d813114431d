package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/service"
)

// runs --since takes days, as purge --older-than does, and refuses what is
// no duration with a usage error.
func TestRunsSinceTakesDays(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "w.yaml", "version: 1\nname: quick\nsteps:\n  - {id: a, uses: noop}\n")
	_, out, _ := runOut(t, home, "run", wf, "--json")
	id := decodeRun(t, out).RunID
	code, out, errOut := runOut(t, home, "runs", "--since", "7d")
	if code != ExitOK || !strings.Contains(out, id) {
		t.Fatalf("runs --since 7d: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runOut(t, home, "runs", "--since", "1d12h", "--json")
	if code != ExitOK || !strings.Contains(out, id) {
		t.Fatalf("runs --since 1d12h: exit %d\n%s", code, out)
	}
	code, _, errOut = runOut(t, home, "runs", "--since", "a week")
	if code != ExitUsage || !strings.Contains(errOut, "--since") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Fatalf("runs --since 'a week': exit %d %q", code, errOut)
	}
}

// A mistyped flag, global or a command's own, gets the nearest name.
func TestMistypedFlagSuggests(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--hoem", home, "runs"}, "did you mean --home?"},
		{[]string{"runs", "--hoem", home}, "did you mean --home?"},
		{[]string{"--home", home, "runs", "--limt", "3"}, "did you mean --limit?"},
		{[]string{"--home", home, "purge", "--older-then", "3d"}, "did you mean --older-than?"},
		{[]string{"--home", home, "run", "x.yaml", "--answer", "a.yaml"}, "did you mean --answers?"},
	} {
		code, _, errOut := run(t, c.args...)
		if code != ExitUsage || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d %q, want %q", c.args, code, errOut, c.want)
		}
	}
	// Nothing near: no suggestion.
	code, _, errOut := run(t, "--home", home, "runs", "--zzzzzz")
	if code != ExitUsage || strings.Contains(errOut, "did you mean") || !strings.Contains(errOut, "unknown flag: --zzzzzz") {
		t.Errorf("far flag: exit %d %q", code, errOut)
	}
}

// A runtime expression error is one line of the CLI's output, its place
// kept as a column.
func TestExpressionErrorOneLine(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "e.yaml", "version: 1\nname: experr\ninputs:\n  n: {type: integer, default: 1}\nsteps:\n  - id: ok\n    uses: transform\n    with: {value: \"${{ inputs.n.x.y }}\"}\n")
	code, out, errOut := runOut(t, home, "run", wf)
	if code != ExitInvalid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "error in step ok:") {
			line = l
		}
	}
	if line == "" || !strings.Contains(line, "cannot fetch x") || !strings.Contains(line, "(at column ") {
		t.Fatalf("error line %q in\n%s", line, out)
	}
	if strings.Contains(out, "^") || strings.Contains(out, " | ") {
		t.Fatalf("caret dump in\n%s", out)
	}
}

// show lists each step with its answer or output, secrets masked.
func TestShowListsAnswersAndOutputs(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "s.yaml", `version: 1
name: sec
inputs:
  tok: {type: string, secret: true}
steps:
  - id: who
    ask: {prompt: "Name?"}
  - id: pw
    ask: {prompt: "Password?", secret: true}
  - id: echo
    uses: transform
    with: {value: "name=${{ steps.who.answer }} tok=${{ inputs.tok }} pw=${{ steps.pw.answer }}"}
  - id: broken
    uses: noop
    with: {fail: boom}
`)
	answers := write(t, "a.yaml", "who: ada\npw: hunter22\n")
	code, out, errOut := runOut(t, home, "run", wf, "-i", "tok=sekrit99", "--answers", answers, "--json")
	if code != ExitInvalid {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	id := decodeRun(t, out).RunID
	code, out, errOut = runOut(t, home, "show", id)
	if code != ExitOK {
		t.Fatalf("show: exit %d %s", code, errOut)
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "  +") {
			lines[f[0]] = strings.Join(f[1:], " ")
		}
	}
	for step, want := range map[string]string{
		"who":    "succeeded answer: ada",
		"pw":     "succeeded answer: ***",
		"echo":   "succeeded output: ***", // computed from secrets: secret as a whole
		"broken": "failed error: boom",
	} {
		if lines[step] != want {
			t.Errorf("step %s: %q, want %q\n%s", step, lines[step], want, out)
		}
	}
	if strings.Contains(out, "hunter22") || strings.Contains(out, "sekrit99") {
		t.Fatalf("a secret shown:\n%s", out)
	}
}

// The timeline's offsets take the width of the widest, so the columns
// after them line up past a minute.
func TestTimelineAlignedPastAMinute(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	events := []service.StoredEvent{
		{Type: "run.created", At: start},
		{Type: "step.started", StepID: "a", At: start.Add(5100 * time.Millisecond)},
		{Type: "step.succeeded", StepID: "a", At: start.Add(time.Minute + 5213*time.Millisecond)},
		{Type: "run.succeeded", At: start.Add(2*time.Hour + 3*time.Minute + 4*time.Second)},
	}
	lines := timeline(events, start)
	col := -1
	for i, l := range lines {
		at := strings.Index(l, events[i].Type)
		if col >= 0 && at != col {
			t.Fatalf("type column at %d, then %d:\n%s", col, at, strings.Join(lines, "\n"))
		}
		col = at
	}
	for i, want := range []string{"+0.000s", "+5.100s", "+1m05.213s", "+2h03m04.000s"} {
		if !strings.Contains(lines[i], want+"  ") {
			t.Errorf("line %q, want offset %s", lines[i], want)
		}
	}
}

// runs lists a sub-workflow run under its parent and names the parent.
func TestRunsLinksChildToParent(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "child.yaml"), []byte("version: 1\nname: child\nsteps:\n  - {id: c, uses: noop}\noutputs:\n  ok: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(dir, "parent.yaml")
	if err := os.WriteFile(parent, []byte("version: 1\nname: parent\nsteps:\n  - {id: sub, workflow: child}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOut(t, home, "run", parent, "--json")
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	parentID := decodeRun(t, out).RunID
	// A top-level run after them, so that the newest-first order alone
	// would not put the child under its parent.
	if code, out, errOut = runOut(t, home, "run", filepath.Join(dir, "child.yaml"), "--json"); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runOut(t, home, "runs")
	if code != ExitOK {
		t.Fatalf("runs: exit %d %s", code, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasSuffix(lines[0], "PARENT") {
		t.Fatalf("runs:\n%s", out)
	}
	// The newest top-level run, the parent, and the child indented under it.
	if f := strings.Fields(lines[2]); f[0] != parentID || len(f) != 5 {
		t.Fatalf("parent row %q in\n%s", lines[2], out)
	}
	f := strings.Fields(lines[3])
	if !strings.HasPrefix(lines[3], "└ ") || f[2] != "child" || f[len(f)-1] != parentID {
		t.Fatalf("child row %q in\n%s", lines[3], out)
	}
	// A page without the parent still names it.
	code, out, _ = runOut(t, home, "runs", "--status", "succeeded", "--limit", "2")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if code != ExitOK || !strings.HasSuffix(lines[2], parentID) || strings.HasPrefix(lines[2], "└") {
		t.Fatalf("page without the parent:\n%s", out)
	}
}

// -i reports every invalid input at once — values that do not parse as
// their type among them — for run, plan, retry and fork.
func TestInputsAllReportedAtOnce(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "f.yaml", `version: 1
name: many
inputs:
  n: {type: integer, minimum: 1}
  m: {type: integer, minimum: 1}
  b: {type: boolean, default: false}
steps:
  - id: check
    if: ${{ inputs.n > 5 }}
    fail: too big
  - id: ok
    uses: noop
`)
	code, out, _ := runOut(t, home, "run", wf, "-i", "n=9", "-i", "m=1", "--json")
	if code != ExitInvalid {
		t.Fatalf("failing run: exit %d %s", code, out)
	}
	failed := decodeRun(t, out).RunID
	bad := []string{"-i", "n=abc", "-i", "m=0", "-i", "b=maybe", "-i", "zz=1"}
	for _, args := range [][]string{
		append([]string{"run", wf}, bad...),
		append([]string{"plan", wf}, bad...),
		append([]string{"retry", failed}, bad...),
		append([]string{"fork", failed, "--from", "ok"}, bad...),
	} {
		code, out, errOut := runOut(t, home, args...)
		all := out + errOut
		if code != ExitInvalid {
			t.Errorf("%v: exit %d\n%s", args[:2], code, all)
			continue
		}
		for _, want := range []string{`"n" must be an integer`, `"m" must be at least 1`, `"b" must be a boolean`, `zz`} {
			if !strings.Contains(all, want) {
				t.Errorf("%v: %q not reported in\n%s", args[:2], want, all)
			}
		}
	}
	// Flags that are not name=value are all named in one usage error.
	code, _, errOut := runOut(t, home, "run", wf, "-i", "n", "-i", "m=1", "-i", "b")
	if code != ExitUsage || !strings.Contains(errOut, `"n"`) || !strings.Contains(errOut, `"b"`) {
		t.Errorf("malformed flags: exit %d %q", code, errOut)
	}
}

const asksYAML = `version: 1
name: asks
steps:
  - id: count
    ask: {prompt: "How many?", type: integer, min: 1}
  - id: name
    ask: {prompt: "Name?"}
`

// An answer of the answers file that fails validation names the step and
// says the run is left waiting, with its id and how to resume it.
func TestAnswersFileRefusedAnswer(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "asks.yaml", asksYAML)
	bad := write(t, "bad.yaml", "count: 0\nname: ada\n")
	code, out, errOut := runOut(t, home, "run", wf, "--answers", bad)
	if code != ExitInvalid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	_, list, _ := runOut(t, home, "runs", "--json")
	var runs struct {
		Runs []struct {
			ID     string `json:"run_id"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(list), &runs); err != nil || len(runs.Runs) != 1 || runs.Runs[0].Status != "waiting" {
		t.Fatalf("runs: %v %s", err, list)
	}
	id := runs.Runs[0].ID
	first, _, _ := strings.Cut(errOut, "\n")
	for _, want := range []string{"answers file " + bad, "step count", "must be at least 1", "run " + id + " is left waiting", "stepwise resume " + id + " --answers " + bad} {
		if !strings.Contains(errOut, want) {
			t.Errorf("%q missing from %q", want, errOut)
		}
	}
	if !strings.Contains(first, "left waiting") {
		t.Errorf("first line %q does not say the run waits", first)
	}
	// --json: the waiting run and its pause on stdout as well.
	code, out, _ = runOut(t, home, "run", wf, "--answers", bad, "--json")
	if r := decodeRun(t, out); code != ExitInvalid || r.Status != "waiting" || r.Pause == nil || r.Pause.StepID != "count" {
		t.Fatalf("--json: exit %d %s", code, out)
	}
	// What the message says to do works.
	good := write(t, "good.yaml", "count: 2\nname: ada\n")
	if code, out, errOut = runOut(t, home, "resume", id, "--answers", good); code != ExitOK {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
}

// Keys of an answers file that name no question or agent step are refused
// before anything changes; steps of sub-workflows count.
func TestAnswersFileUnknownStep(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "asks.yaml", asksYAML)
	bad := write(t, "bad.yaml", "count: 2\nnmae: ada\nzz: 1\n")
	code, out, errOut := runOut(t, home, "run", wf, "--answers", bad)
	if code != ExitInvalid || !strings.Contains(errOut, `"nmae"`) || !strings.Contains(errOut, `"zz"`) || !strings.Contains(errOut, "count, name") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, list, _ := runOut(t, home, "runs", "--json"); strings.Contains(list, "run_id") {
		t.Fatalf("a run was started: %s", list)
	}
	// resume: refused, the run still waits at its question.
	_, out, _ = runOut(t, home, "run", wf, "--json", "--no-input")
	id := decodeRun(t, out).RunID
	code, _, errOut = runOut(t, home, "resume", id, "--answers", bad)
	if code != ExitInvalid || !strings.Contains(errOut, `"nmae"`) || !strings.Contains(errOut, "nothing changed") {
		t.Fatalf("resume: exit %d %s", code, errOut)
	}
	if _, out, _ = runOut(t, home, "show", id, "--json"); !strings.Contains(out, `"status": "waiting"`) || strings.Contains(out, `"answer"`) {
		t.Fatalf("the run moved: %s", out)
	}
}

// An answers file answers the questions of sub-workflows too (a child run
// numbers its pauses apart from its parent's), and its keys are not
// refused as naming no step.
func TestAnswersFileAnswersSubWorkflow(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "inner.yaml"), []byte("version: 1\nname: inner\nsteps:\n  - id: colour\n    ask: {prompt: Colour?}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outer := filepath.Join(dir, "outer.yaml")
	if err := os.WriteFile(outer, []byte("version: 1\nname: outer\nsteps:\n  - id: name\n    ask: {prompt: Name?}\n  - {id: sub, workflow: inner}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	answers := write(t, "a.yaml", "name: ada\ncolour: blue\n")
	if code, out, errOut := runOut(t, home, "run", outer, "--answers", answers); code != ExitOK {
		t.Fatalf("sub-workflow answers: exit %d\n%s\n%s", code, out, errOut)
	}
}

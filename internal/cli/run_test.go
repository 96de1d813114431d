package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/expr"
)

func runOut(t *testing.T, home string, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append([]string{"--home", home}, args...)...)
}

type runJSON struct {
	RunID   string         `json:"run_id"`
	Status  string         `json:"status"`
	Outputs map[string]any `json:"outputs"`
	Pause   *struct {
		Kind   string `json:"kind"`
		StepID string `json:"step_id"`
		Token  string `json:"token"`
		Prompt string `json:"prompt"`
	} `json:"pause"`
}

func decodeRun(t *testing.T, out string) runJSON {
	t.Helper()
	var r runJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return r
}

func TestRunExampleWithAnswers(t *testing.T) {
	home := t.TempDir()
	code, out, errOut := runOut(t, home, "run", "../../examples/team-onboarding.yaml", "--answers", "../../examples/answers/team-onboarding.yaml", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	r := decodeRun(t, out)
	summary, _ := r.Outputs["summary"].(map[string]any)
	if r.Status != "succeeded" || summary["user"] != "ada" || summary["desk"] != 7.0 || summary["buddy"] != "grace" {
		t.Fatalf("result %+v", r)
	}
	if accounts, _ := summary["accounts"].([]any); len(accounts) != 2 || accounts[0] != "ada@git" {
		t.Fatalf("accounts %v", summary["accounts"])
	}
}

func TestRunWithoutAnswersWaits(t *testing.T) {
	home := t.TempDir()
	code, out, _ := runOut(t, home, "run", "../../examples/team-onboarding.yaml", "--json", "--no-input")
	if code != ExitWaiting {
		t.Fatalf("exit %d, want %d\n%s", code, ExitWaiting, out)
	}
	r := decodeRun(t, out)
	if r.Status != "waiting" || r.Pause == nil || r.Pause.StepID != "username" || r.Pause.Token == "" || r.Pause.Kind != "question" {
		t.Fatalf("result %+v", r)
	}
	// Answer the first question, then the rest from the answers file.
	partial := filepath.Join(t.TempDir(), "a.yaml")
	data, _ := os.ReadFile("../../examples/answers/team-onboarding.yaml")
	if err := os.WriteFile(partial, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOut(t, home, "resume", r.RunID, "--answers", partial, "--json")
	if code != ExitOK || decodeRun(t, out).Status != "succeeded" {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errOut)
	}
	// The run is listed and shown.
	code, out, _ = runOut(t, home, "runs", "--json")
	if code != ExitOK || !strings.Contains(out, r.RunID) {
		t.Fatalf("runs: %d %s", code, out)
	}
	code, out, _ = runOut(t, home, "show", r.RunID)
	if code != ExitOK || !strings.Contains(out, "run.succeeded") || !strings.Contains(out, "step.answered") {
		t.Fatalf("show: %d %s", code, out)
	}
}

func TestRunHumanOutputAndFailures(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "fails.yaml", `version: 1
name: fails
inputs:
  n: {type: integer, minimum: 1}
steps:
  - id: check
    if: ${{ inputs.n > 5 }}
    fail: "n is too big: ${{ inputs.n }}"
  - id: ok
    uses: transform
    with: {value: "${{ inputs.n * 2 }}"}
outputs:
  doubled: ${{ steps.ok.output }}
`)
	code, out, errOut := runOut(t, home, "run", wf, "-i", "n=3")
	if code != ExitOK || !strings.Contains(out, "succeeded") || !strings.Contains(out, `"doubled": 6`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "✓ ok") || !strings.Contains(errOut, "- check (skipped)") {
		t.Errorf("progress: %q", errOut)
	}
	code, out, _ = runOut(t, home, "run", wf, "-i", "n=9")
	if code != ExitInvalid || !strings.Contains(out, "failed") || !strings.Contains(out, "n is too big: 9") {
		t.Fatalf("failing run: exit %d\n%s", code, out)
	}
	code, _, errOut = runOut(t, home, "run", wf, "-i", "n=0")
	if code != ExitInvalid || !strings.Contains(errOut, `input "n" must be at least 1`) {
		t.Fatalf("invalid input: exit %d %q", code, errOut)
	}
	code, _, errOut = runOut(t, home, "run", wf, "-i", "n=abc")
	if code != ExitInvalid || !strings.Contains(errOut, `input "n" must be an integer`) {
		t.Fatalf("untyped input: exit %d %q", code, errOut)
	}
	code, _, errOut = runOut(t, home, "run", wf)
	if code != ExitInvalid || !strings.Contains(errOut, `input "n" is required`) {
		t.Fatalf("missing input: exit %d %q", code, errOut)
	}
	code, _, errOut = runOut(t, home, "run", "no-such-workflow")
	if code != ExitUsage || strings.Contains(errOut, "goroutine") {
		t.Fatalf("missing workflow: exit %d %q", code, errOut)
	}
	code, _, errOut = runOut(t, home, "run", "../../etc/passwd")
	if code == ExitOK {
		t.Fatalf("unsafe name accepted: %q", errOut)
	}
	code, _, errOut = runOut(t, home, "cancel", "nope")
	if code != ExitUsage || !strings.Contains(errOut, "no run nope") {
		t.Fatalf("cancel missing: exit %d %q", code, errOut)
	}
}

func TestDetachThenResumeAll(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "steps.yaml", "version: 1\nname: steps\nsteps:\n  - {id: a, uses: noop}\n  - {id: b, uses: noop}\noutputs:\n  done: true\n")
	var ids []string
	for i := 0; i < 3; i++ {
		code, out, _ := runOut(t, home, "run", wf, "--detach", "--json")
		r := decodeRun(t, out)
		if code != ExitOK || r.Status != "running" {
			t.Fatalf("detach: %d %+v", code, r)
		}
		ids = append(ids, r.RunID)
	}
	code, _, errOut := runOut(t, home, "resume", "--all")
	if code != ExitOK || !strings.Contains(errOut, "no run is running") {
		t.Fatalf("resume --all: %d %q", code, errOut)
	}
	for _, id := range ids {
		code, out, _ := runOut(t, home, "show", id, "--json")
		if code != ExitOK || !strings.Contains(out, `"status": "succeeded"`) {
			t.Fatalf("run %s: %s", id, out)
		}
	}
}

func TestCancelWaitingRun(t *testing.T) {
	home := t.TempDir()
	_, out, _ := runOut(t, home, "run", "../../examples/team-onboarding.yaml", "--json", "--no-input")
	id := decodeRun(t, out).RunID
	code, out, errOut := runOut(t, home, "cancel", id, "--reason", "test")
	if code != ExitOK || !strings.Contains(out, "canceled") {
		t.Fatalf("cancel: %d %s %s", code, out, errOut)
	}
	code, _, errOut = runOut(t, home, "cancel", id)
	if code != ExitInvalid || !strings.Contains(errOut, "already finished") {
		t.Fatalf("second cancel: %d %q", code, errOut)
	}
}

// A step failing on its expression's memory budget says so with its code,
// in one line, without a stack trace.
func TestRunExpressionBudget(t *testing.T) {
	home := t.TempDir()
	wf := filepath.Join(t.TempDir(), "big.yaml")
	doc := "version: 1\nname: big\nsteps:\n  - id: big\n    uses: transform\n    with: {value: \"${{ len(repeat(repeat('x', 100000), 100000)) }}\"}\n"
	if err := os.WriteFile(wf, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOut(t, home, "run", wf, "--no-input")
	if code != ExitInvalid {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInvalid, out, errOut)
	}
	if !strings.Contains(out+errOut, "error in step big: EXPRESSION_BUDGET: ") || strings.Contains(out+errOut, "goroutine ") {
		t.Fatalf("output:\n%s\n%s", out, errOut)
	}
}

// --expr-memory sets the ceiling: an expression that fits the default
// fails below it.
func TestRunExprMemoryFlag(t *testing.T) {
	defer expr.SetMemoryLimit(0)
	home := t.TempDir()
	wf := filepath.Join(t.TempDir(), "mid.yaml")
	doc := "version: 1\nname: mid\nsteps:\n  - id: mid\n    uses: transform\n    with: {value: \"${{ len(repeat('x', 2000000)) }}\"}\n"
	if err := os.WriteFile(wf, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runOut(t, home, "run", wf, "--no-input"); code != ExitOK {
		t.Fatalf("default ceiling: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut := runOut(t, home, "--expr-memory", "1", "run", wf, "--no-input")
	if code != ExitInvalid || !strings.Contains(out+errOut, "EXPRESSION_BUDGET") {
		t.Fatalf("--expr-memory 1: exit %d\n%s\n%s", code, out, errOut)
	}
}

// --max-recoveries below 1 is a usage error: a step could not even run
// again after one crash.
func TestMaxRecoveriesFlag(t *testing.T) {
	home := t.TempDir()
	code, _, errOut := runOut(t, home, "--max-recoveries", "0", "resume", "--all")
	if code != ExitUsage || !strings.Contains(errOut, "--max-recoveries must be at least 1") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := runOut(t, home, "--max-recoveries", "5", "resume", "--all"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

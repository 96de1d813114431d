package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// progressOf runs the workflow files (the first is run; the others are
// beside it, for sub-workflows) and returns the progress lines on stderr.
func progressOf(t *testing.T, wantCode int, files map[string]string, run string) []string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runOut(t, t.TempDir(), "run", filepath.Join(dir, run))
	if code != wantCode {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, wantCode, out, errOut)
	}
	return strings.Split(strings.TrimRight(errOut, "\n"), "\n")
}

// TestProgressLogAfterItsStep: a log step's message comes after the line of
// the step before it, every time.
func TestProgressLogAfterItsStep(t *testing.T) {
	var wf strings.Builder
	wf.WriteString("version: 1\nname: logs\nsteps:\n")
	var want []string
	for i := range 12 {
		fmt.Fprintf(&wf, "  - id: s%d\n    uses: log\n    with: {message: \"message %d\"}\n", i, i)
		want = append(want, fmt.Sprintf("message %d", i), fmt.Sprintf("  ✓ s%d", i))
	}
	got := progressOf(t, ExitOK, map[string]string{"logs.yaml": wf.String()}, "logs.yaml")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("progress:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestProgressRetries: a retried step shows each retry as it is scheduled.
func TestProgressRetries(t *testing.T) {
	got := progressOf(t, ExitInvalid, map[string]string{"retry.yaml": `version: 1
name: retry
steps:
  - id: fetch
    uses: http
    with: {url: "http://127.0.0.1:1/"}
    retry: {attempts: 3, backoff: 10ms, max_backoff: 20ms}
`}, "retry.yaml")
	var retries []string
	for _, l := range got {
		if strings.Contains(l, "↻ fetch: ") {
			retries = append(retries, l[strings.LastIndex(l, "— ")+len("— "):])
		}
	}
	if len(retries) != 2 || !strings.HasPrefix(retries[0], "retry 2/3 in ") || !strings.HasPrefix(retries[1], "retry 3/3 in ") ||
		!strings.Contains(got[len(got)-1], "✗ fetch: ") {
		t.Fatalf("progress:\n%s", strings.Join(got, "\n"))
	}
}

// TestProgressSubWorkflowAndCompensation: a sub-workflow's steps show as
// they happen, indented under the step that runs it, and compensations
// show when a later step fails the run.
func TestProgressSubWorkflowAndCompensation(t *testing.T) {
	got := progressOf(t, ExitInvalid, map[string]string{
		"parent.yaml": `version: 1
name: parent
steps:
  - id: first
    uses: noop
    compensate: {uses: noop}
  - id: sub
    workflow: child
  - id: boom
    fail: "stop here"
`,
		"child.yaml": `version: 1
name: child
steps:
  - id: inner1
    uses: noop
  - id: inner2
    uses: noop
`}, "parent.yaml")
	want := []string{
		"  ✓ first",
		"  ▸ sub: sub-workflow child",
		"    ✓ inner1",
		"    ✓ inner2",
		"  ✓ sub",
		"  ✗ boom: stop here",
		"  ↩ compensating",
		"  ↩ first compensated",
	}
	if n := len(want); len(got) < n || strings.Join(got[:n], "\n") != strings.Join(want, "\n") {
		t.Fatalf("progress:\n%s\nwant first:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestProgressResumedSubWorkflow: resuming a run whose sub-workflow waits
// shows the sub-workflow's steps (its run existed before the command).
func TestProgressResumedSubWorkflow(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	for name, content := range map[string]string{
		"parent.yaml": "version: 1\nname: parent\nsteps:\n  - id: sub\n    workflow: child\n",
		"child.yaml": "version: 1\nname: child\nsteps:\n  - id: who\n    ask: {prompt: Who?}\n" +
			"  - id: hello\n    uses: log\n    with: {message: \"hello ${{ steps.who.answer }}\"}\n",
		"answers.yaml": "who: ada\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runOut(t, home, "run", filepath.Join(dir, "parent.yaml"), "--no-input", "--json")
	if code != ExitWaiting {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runOut(t, home, "resume", decodeRun(t, out).RunID, "--answers", filepath.Join(dir, "answers.yaml"))
	want := "    ✓ who\nhello ada\n    ✓ hello\n  ✓ sub\n"
	if code != ExitOK || !strings.Contains(errOut, want) {
		t.Fatalf("resume: exit %d\n%s\nstderr:\n%s\nwant in it:\n%s", code, out, errOut, want)
	}
}

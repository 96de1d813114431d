package cli

import (
	"strings"
	"testing"
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

package cli

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// asPerson makes purge see a terminal where the person answers yes (or
// not), and records what they were asked; nil restores "no terminal".
func asPerson(t *testing.T, answer *bool, asked *[]string) {
	t.Helper()
	prev := purgeAsker
	t.Cleanup(func() { purgeAsker = prev })
	purgeAsker = func(io.Writer) askPurge {
		if answer == nil {
			return nil
		}
		return func(_ context.Context, q string) (bool, error) {
			*asked = append(*asked, q)
			return *answer, nil
		}
	}
}

// purgeHome is a home with two finished runs (one failed) and one waiting.
func purgeHome(t *testing.T) (home, ok, failed, waiting string) {
	t.Helper()
	home = t.TempDir()
	start := func(def string, wantCode int, extra ...string) string {
		t.Helper()
		code, out, errOut := runOut(t, home, append([]string{"run", write(t, "w.yaml", def), "--json", "--no-input"}, extra...)...)
		if code != wantCode {
			t.Fatalf("run: exit %d, want %d\n%s\n%s", code, wantCode, out, errOut)
		}
		return decodeRun(t, out).RunID
	}
	ok = start("version: 1\nname: fine\nsteps:\n  - {id: a, uses: noop}\n", ExitOK)
	failed = start("version: 1\nname: broken\nsteps:\n  - {id: a, uses: noop, with: {fail: boom}}\n", ExitInvalid)
	waiting = start("version: 1\nname: asks\nsteps:\n  - id: q\n    ask: {prompt: Name?}\n", ExitWaiting)
	return home, ok, failed, waiting
}

// shown reports whether `stepwise show` still finds each run.
func shown(t *testing.T, home string, ids ...string) []bool {
	t.Helper()
	out := make([]bool, len(ids))
	for i, id := range ids {
		code, _, errOut := runOut(t, home, "show", id)
		switch code {
		case ExitOK:
			out[i] = true
		case ExitUsage:
			if !strings.Contains(errOut, "no run "+id) {
				t.Fatalf("show %s: %s", id, errOut)
			}
		default:
			t.Fatalf("show %s: exit %d %s", id, code, errOut)
		}
	}
	return out
}

func TestPurgeWithoutTerminalNeedsYes(t *testing.T) {
	asPerson(t, nil, nil)
	home, ok, failed, waiting := purgeHome(t)
	code, out, errOut := runOut(t, home, "purge")
	if code != ExitUsage || !strings.Contains(errOut, "would delete 2 finished runs") || !strings.Contains(errOut, "--yes") || out != "" {
		t.Fatalf("purge without --yes: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := shown(t, home, ok, failed, waiting); !got[0] || !got[1] || !got[2] {
		t.Fatalf("runs left after a refused purge: %v", got)
	}
	code, out, errOut = runOut(t, home, "purge", "--status", "failed", "--yes", "--json")
	var counts service.PurgeResult
	if code != ExitOK || json.Unmarshal([]byte(out), &counts) != nil {
		t.Fatalf("purge --yes: exit %d\n%s\n%s", code, out, errOut)
	}
	if counts.Runs != 1 || counts.Steps != 1 || counts.Events < 3 || counts.Versions != 1 {
		t.Errorf("counts %+v", counts)
	}
	if got := shown(t, home, ok, failed, waiting); !got[0] || got[1] || !got[2] {
		t.Fatalf("after purging the failed run: %v", got)
	}
	// Nothing more matches: no confirmation needed, exit 0.
	code, out, _ = runOut(t, home, "purge", "--status", "failed")
	if code != ExitOK || !strings.Contains(out, "nothing to purge") {
		t.Fatalf("purge of nothing: exit %d %s", code, out)
	}
	// Runs finished a moment ago are not older than a day.
	code, out, _ = runOut(t, home, "purge", "--older-than", "1d", "--yes")
	if code != ExitOK || !strings.Contains(out, "nothing to purge") {
		t.Fatalf("purge --older-than 1d: exit %d %s", code, out)
	}
	if got := shown(t, home, ok, waiting); !got[0] || !got[1] {
		t.Fatalf("after purges of nothing: %v", got)
	}
}

func TestPurgeAsksInATerminal(t *testing.T) {
	answer := false
	var asked []string
	asPerson(t, &answer, &asked)
	home, ok, failed, waiting := purgeHome(t)
	code, _, errOut := runOut(t, home, "purge", "--workflow", "fine")
	if code != ExitInvalid || !strings.Contains(errOut, "nothing was purged") {
		t.Fatalf("declined: exit %d %s", code, errOut)
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0], "Purge 1 finished run (") {
		t.Fatalf("asked %q", asked)
	}
	answer = true
	code, out, errOut := runOut(t, home, "purge")
	if code != ExitOK || !strings.HasPrefix(out, "purged 2 runs: 2 steps") {
		t.Fatalf("confirmed: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := shown(t, home, ok, failed, waiting); got[0] || got[1] || !got[2] {
		t.Fatalf("after the purge: %v", got)
	}
	// --yes does not ask.
	code, _, _ = runOut(t, home, "purge", "--yes")
	if code != ExitOK || len(asked) != 2 {
		t.Fatalf("purge --yes asked: %d %q", code, asked)
	}
}

func TestPurgeUsageErrors(t *testing.T) {
	asPerson(t, nil, nil)
	home := t.TempDir()
	for _, args := range [][]string{
		{"purge", "--status", "waiting", "--yes"},
		{"purge", "--status", "succeeded,running", "--yes"},
		{"purge", "--older-than", "a while", "--yes"},
		{"purge", "extra"},
		{"serve", "--retention", "forever"},
		{"serve", "--max-runs", "-3"},
	} {
		code, _, errOut := runOut(t, home, args...)
		if code != ExitUsage || !strings.HasPrefix(errOut, "stepwise: ") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
}

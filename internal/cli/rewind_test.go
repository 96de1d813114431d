package cli

import (
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// TestRewindAndRestartCommands: restart waits at the first question with
// the earlier answer as its default; rewinding to a step that is no
// question says where one can go back to.
func TestRewindAndRestartCommands(t *testing.T) {
	home := t.TempDir()
	wf := write(t, "two.yaml", "version: 1\nname: two\nsteps:\n  - {id: q1, ask: {prompt: One?}}\n  - {id: log, uses: noop}\n  - {id: q2, ask: {prompt: Two?}}\n")
	answers := write(t, "a.yaml", "q1: ada\nq2: bob\n")
	code, out, errOut := runOut(t, home, "run", wf, "--answers", answers, "--json")
	if code != ExitOK {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	id := decodeRun(t, out).RunID

	code, _, errOut = runOut(t, home, "rewind", id, "log")
	if code == ExitOK || !strings.Contains(errOut, "q1, q2") || !strings.Contains(errOut, "`stepwise restart "+id+"`") {
		t.Fatalf("rewind to a non-question: exit %d %s", code, errOut)
	}
	code, out, errOut = runOut(t, home, "restart", id, "--json", "--no-input")
	if code != ExitWaiting {
		t.Fatalf("restart: exit %d %s %s", code, out, errOut)
	}
	r := decodeRun(t, out)
	if r.RunID == id || r.Pause == nil || r.Pause.StepID != "q1" {
		t.Fatalf("restarted %+v", r)
	}
	if !strings.Contains(out, `"default": "ada"`) || !strings.Contains(out, `"previous": true`) {
		t.Fatalf("the pause offers no earlier answer: %s", out)
	}
	// The new run goes on with the other answer kept, given anew by file.
	code, out, errOut = runOut(t, home, "rewind", r.RunID, "q2", "--answers", write(t, "b.yaml", "q2: cy\n"), "--json")
	if code != ExitOK || decodeRun(t, out).Status != "succeeded" {
		t.Fatalf("rewind: exit %d %s %s", code, out, errOut)
	}
	if questionHelp(service.Question{Help: "h", Previous: true}) != "h "+previousNote || questionHelp(service.Question{Help: "h"}) != "h" {
		t.Fatal("questionHelp")
	}
}

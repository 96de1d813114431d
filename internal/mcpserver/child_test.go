package mcpserver

import (
	"os"
	"path/filepath"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// A question asked inside a sub-workflow is answered with the child run's
// token; run_continue follows the top-level run, as run_start did.
func TestContinueInSubWorkflowFollowsTopLevelRun(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	lib := filepath.Join(e.svc.Home.Dir, "workflows")
	for name, doc := range map[string]string{
		"asking.yaml": "version: 1\nname: asking\nsteps:\n  - id: who\n    ask: {prompt: \"Who?\", type: string}\noutputs:\n  who: ${{ steps.who.answer }}\n",
		"outer.yaml":  "version: 1\nname: outer\nsteps:\n  - id: call\n    workflow: asking\noutputs:\n  who: ${{ steps.call.output.who }}\n",
	} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cs := e.connect(nil)
	var run RunResult
	if call(t, cs, "run_start", map[string]any{"workflow": "outer"}, &run) || run.Status != "waiting" || run.Pause == nil {
		t.Fatalf("run_start: %+v", run)
	}
	if run.Pause.RunID == run.RunID {
		t.Fatalf("the pause belongs to the top-level run %s, want the child's", run.RunID)
	}
	var done RunResult
	if call(t, cs, "run_continue", map[string]any{"token": run.Pause.Token, "value": "Ada"}, &done) {
		t.Fatalf("run_continue: %+v", done)
	}
	if done.RunID != run.RunID || done.Status != "succeeded" || done.Outputs["who"] != "Ada" {
		t.Fatalf("run_continue answered %+v, want the top-level run %s succeeded with who=Ada", done, run.RunID)
	}
}

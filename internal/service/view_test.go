package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// The view reads a run's children once and skips them for workflows
// without sub-workflow steps: a parent waiting on a child's question still
// shows the child and the child's pause, nested two deep too, and a plain
// run shows neither.
func TestGetRunChildrenAndInheritedPause(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string]string{
		"asker": "version: 1\nname: asker\nsteps:\n  - id: q\n    ask: {prompt: Name?}\n",
		"mid":   "version: 1\nname: mid\nsteps:\n  - id: sub\n    workflow: asker\n",
		"top":   "version: 1\nname: top\nsteps:\n  - id: sub\n    workflow: mid\n",
	} {
		if err := os.WriteFile(filepath.Join(lib, name+".yaml"), []byte(def), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	svc := openPurgeService(t, home, Options{})

	plain := start(t, svc, "asker", store.StatusWaiting)
	v, err := svc.GetRun(ctx, plain)
	if err != nil || v.Pause == nil || v.Pause.RunID != plain || len(v.Children) != 0 {
		t.Fatalf("plain run: %+v %v", v, err)
	}

	top := start(t, svc, "top", store.StatusWaiting)
	v, err = svc.GetRun(ctx, top)
	if err != nil || len(v.Children) != 1 || !strings.Contains(v.Children[0], "(mid, waiting)") {
		t.Fatalf("top run: %+v %v", v, err)
	}
	mid := strings.Fields(v.Children[0])[0]
	if v.Pause == nil || v.Pause.RunID == top || v.Pause.RunID == mid || v.Pause.Prompt != "Name?" {
		t.Fatalf("top run's pause should be the grandchild's: %+v", v.Pause)
	}
	leaf := v.Pause.RunID
	if b, err := svc.GetRunBrief(ctx, top); err != nil || b.Pause == nil || b.Pause.Token != v.Pause.Token || b.Steps != nil || b.Children != nil || b.Status != store.StatusWaiting {
		t.Fatalf("brief view of the top run: %+v %v", b, err)
	}
	mv, err := svc.GetRun(ctx, mid)
	if err != nil || mv.Pause == nil || mv.Pause.Token != v.Pause.Token || len(mv.Children) != 1 || !strings.HasPrefix(mv.Children[0], leaf+" ") {
		t.Fatalf("mid run: %+v %v", mv, err)
	}

	// Answering the grandchild's pause through the top run's token ends
	// all three.
	if _, err := svc.Continue(ctx, v.Pause.Token, "Ada"); err != nil {
		t.Fatal(err)
	}
	if st, err := svc.Wait(ctx, top, 0); err != nil || st != store.StatusSucceeded {
		t.Fatalf("top run after the answer: %s %v", st, err)
	}
	v, err = svc.GetRun(ctx, top)
	if err != nil || v.Pause != nil || len(v.Children) != 1 || !strings.Contains(v.Children[0], "succeeded") {
		t.Fatalf("top run at the end: %+v %v", v, err)
	}
}

// The steps a forward goto jumps over show as skipped in the run's view
// (run_get, stepwise show), not as missing (pending).
func TestGetRunShowsStepsSkippedByGoto(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "version: 1\nname: jumper\nsteps:\n  - id: decide\n    switch:\n      - goto: done\n  - id: jumped\n    uses: noop\n  - id: done\n    uses: noop\n"
	if err := os.WriteFile(filepath.Join(lib, "jumper.yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
	svc := openPurgeService(t, home, Options{})
	id := start(t, svc, "jumper", store.StatusSucceeded)
	v, err := svc.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range v.Steps {
		got = append(got, s.ID+":"+s.Status)
	}
	if strings.Join(got, " ") != "decide:succeeded jumped:skipped done:succeeded" {
		t.Fatalf("steps %v", got)
	}
}

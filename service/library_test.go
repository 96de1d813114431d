package service

import (
	"context"
	"errors"
	"strings"
	"testing"

	"stepwise.dev/stepwise/engine"
)

func openLibraryService(t *testing.T, home string) *Service {
	t.Helper()
	svc, err := Open(context.Background(), Options{Home: home, Durability: "normal"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background()) })
	return svc
}

func logWorkflow(name, message string) string {
	return "version: 1\nname: " + name + "\nsteps:\n  - id: a\n    uses: log\n    with: {message: " + message + "}\n"
}

func errorCode(err error) string {
	var ee *engine.Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ""
}

// A name that is only a draft loads the draft for a run or a plan (the
// write → run → fix → save loop), saying so; the library comes first; the
// strict library lookup (the wf_ tools) never sees a draft.
func TestRunByNameFindsADraft(t *testing.T) {
	ctx := context.Background()
	svc := openLibraryService(t, t.TempDir())
	if _, err := svc.SaveWorkflow(ctx, SaveRequest{Content: logWorkflow("trial", "draft"), Draft: true}); err != nil {
		t.Fatal(err)
	}
	for what, load := range map[string]func(string) (*Loaded, error){"LoadWorkflow": svc.LoadWorkflow, "LoadRunnable": svc.LoadRunnable} {
		l, err := load("trial")
		if err != nil || !l.Draft || !strings.Contains(l.Path, "drafts") {
			t.Fatalf("%s of a draft: %+v %v", what, l, err)
		}
	}
	for _, req := range []PlanRequest{{Name: "trial"}, {Ref: "trial"}} {
		p, err := svc.Plan(ctx, req)
		if err != nil || !p.Valid || !p.Draft {
			t.Fatalf("plan %+v of a draft: %+v %v", req, p, err)
		}
	}
	if _, err := svc.LoadLibraryWorkflow("trial"); errorCode(err) != CodeNotFound {
		t.Fatalf("the library lookup found a draft: %v", err)
	}
	if _, err := svc.LoadRunnable("nowhere"); errorCode(err) != CodeNotFound || !strings.Contains(err.Error(), "drafts") {
		t.Fatalf("neither saved nor draft: %v", err)
	}
	// Saved under the same name (a draft of the next version stays): the
	// library wins.
	if _, err := svc.SaveWorkflow(ctx, SaveRequest{Content: logWorkflow("trial", "saved")}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SaveWorkflow(ctx, SaveRequest{Content: logWorkflow("trial", "next"), Draft: true}); err != nil {
		t.Fatal(err)
	}
	for what, load := range map[string]func(string) (*Loaded, error){"LoadWorkflow": svc.LoadWorkflow, "LoadRunnable": svc.LoadRunnable} {
		l, err := load("trial")
		if err != nil || l.Draft || strings.Contains(l.Path, "drafts") {
			t.Fatalf("%s with both: %+v %v", what, l, err)
		}
	}
	if p, err := svc.Plan(ctx, PlanRequest{Name: "trial"}); err != nil || p.Draft {
		t.Fatalf("plan with both: %+v %v", p, err)
	}
}

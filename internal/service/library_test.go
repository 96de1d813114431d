package service

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/library"
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

const parentWorkflow = "version: 1\nname: parent\nsteps:\n  - id: c\n    workflow: child\n"

// validOf lists the library and returns each workflow's validity.
func validOf(t *testing.T, svc *Service) map[string]bool {
	t.Helper()
	ws, err := svc.ListLibrary(context.Background(), ListOptions{IncludeDrafts: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, w := range ws {
		key := w.Name
		if w.Draft {
			key += " (draft)"
		}
		out[key] = w.Valid
	}
	return out
}

// A listing follows what validity depends on besides the file itself: the
// sub-workflows it calls. A rename reports the workflows that called the
// old name. In one process and across two services on one home.
func TestListFollowsRenamedSubWorkflows(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	a, b := openLibraryService(t, home), openLibraryService(t, home)
	for _, req := range []SaveRequest{{Content: logWorkflow("child", "hi")}, {Content: parentWorkflow}, {Content: parentWorkflow, Draft: true}} {
		if _, err := a.SaveWorkflow(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]bool{"child": true, "parent": true, "parent (draft)": true}
	for _, svc := range []*Service{a, b} {
		if got := validOf(t, svc); !maps.Equal(got, want) {
			t.Fatalf("before the rename: %v", got)
		}
	}
	r, err := a.RenameWorkflow(ctx, "child", "kid", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.ReferencedBy, []string{"parent"}) || !slices.Equal(r.DraftsReferencing, []string{"parent"}) {
		t.Fatalf("the rename reports callers %v and drafts %v, want parent and parent", r.ReferencedBy, r.DraftsReferencing)
	}
	want = map[string]bool{"kid": true, "parent": false, "parent (draft)": false}
	for i, svc := range []*Service{a, b} {
		if got := validOf(t, svc); !maps.Equal(got, want) {
			t.Fatalf("service %d after the rename: %v", i, got)
		}
		if v, err := svc.ValidateLibrary("parent"); err != nil || v.Valid {
			t.Fatalf("service %d validates parent: %+v %v", i, v, err)
		}
	}
	// Back under its old name, from the other service: valid again.
	if _, err := b.RenameWorkflow(ctx, "kid", "child", ""); err != nil {
		t.Fatal(err)
	}
	want = map[string]bool{"child": true, "parent": true, "parent (draft)": true}
	for i, svc := range []*Service{a, b} {
		if got := validOf(t, svc); !maps.Equal(got, want) {
			t.Fatalf("service %d after the rename back: %v", i, got)
		}
	}
	// A delete and a new save count the same.
	if _, err := a.DeleteWorkflow(ctx, "child", false, ""); err != nil {
		t.Fatal(err)
	}
	if got := validOf(t, b); got["parent"] {
		t.Fatalf("after the delete: %v", got)
	}
	if _, err := a.SaveWorkflow(ctx, SaveRequest{Content: logWorkflow("child", "again")}); err != nil {
		t.Fatal(err)
	}
	if got := validOf(t, b); !got["parent"] || !got["parent (draft)"] {
		t.Fatalf("after the save: %v", got)
	}
}

// A listing follows the actions registered (catalogs come and go).
func TestListFollowsTheActions(t *testing.T) {
	ctx := context.Background()
	svc := openLibraryService(t, t.TempDir())
	content := "version: 1\nname: billing\nsteps:\n  - id: v\n    uses: billing_void\n"
	if _, err := svc.SaveWorkflow(ctx, SaveRequest{Content: content, Draft: true}); err != nil {
		t.Fatal(err)
	}
	if got := validOf(t, svc); got["billing (draft)"] {
		t.Fatalf("valid without its action: %v", got)
	}
	svc.Actions.Register(fakeAction{"billing_void", "Voids."})
	if got := validOf(t, svc); !got["billing (draft)"] {
		t.Fatalf("invalid with its action: %v", got)
	}
	svc.Actions.Unregister("billing_void")
	if got := validOf(t, svc); got["billing (draft)"] {
		t.Fatalf("valid after its action went: %v", got)
	}
}

// Two authors change only comments, both from the same read: the second
// save conflicts instead of silently replacing the first (the version,
// which comments leave alone, cannot tell; the revision can).
func TestCommentOnlyEditsConflictOnSave(t *testing.T) {
	ctx := context.Background()
	svc := openLibraryService(t, t.TempDir())
	base := logWorkflow("notes", "hi")
	saved, err := svc.SaveWorkflow(ctx, SaveRequest{Content: base})
	if err != nil {
		t.Fatal(err)
	}
	read, err := svc.GetWorkflow(ctx, "notes")
	if err != nil || read.Revision != saved.Revision || read.Revision != library.Revision([]byte(base)) || read.Version != saved.Version {
		t.Fatalf("get: %+v %v (saved %+v)", read, err, saved)
	}
	if ws, _ := svc.ListWorkflows(ctx, ""); len(ws) != 1 || ws[0].Revision != read.Revision {
		t.Fatalf("list: %+v", ws)
	}
	first, err := svc.SaveWorkflow(ctx, SaveRequest{Content: "# first author\n" + base, ExpectedVersion: read.Revision})
	if err != nil || first.Version != read.Version || first.Revision == read.Revision {
		t.Fatalf("the first comment edit: %+v %v", first, err)
	}
	for _, stale := range []string{read.Revision, read.Version} {
		_, err := svc.SaveWorkflow(ctx, SaveRequest{Content: "# second author\n" + base, ExpectedVersion: stale})
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Code != CodeVersionConflict || ee.CurrentRevision != first.Revision || ee.CurrentVersion != first.Version ||
			!strings.Contains(ee.Suggestion, first.Revision) {
			t.Fatalf("the second comment edit from %s: %+v", stale, err)
		}
		if _, err := svc.RenameWorkflow(ctx, "notes", "memo", stale); errorCode(err) != CodeVersionConflict {
			t.Fatalf("rename from %s: %v", stale, err)
		}
		if _, err := svc.DeleteWorkflow(ctx, "notes", false, stale); errorCode(err) != CodeVersionConflict {
			t.Fatalf("delete from %s: %v", stale, err)
		}
	}
	if got, _ := svc.GetWorkflow(ctx, "notes"); got.Content != "# first author\n"+base || got.Revision != first.Revision {
		t.Fatalf("the first edit is lost: %q", got.Content)
	}
	r, err := svc.RenameWorkflow(ctx, "notes", "memo", first.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := svc.DeleteWorkflow(ctx, "memo", false, r.Revision); err != nil || d.Revision != r.Revision {
		t.Fatalf("delete at the rename's revision: %+v %v", d, err)
	}
}

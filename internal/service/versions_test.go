package service

import (
	"context"
	"testing"
)

// TestWorkflowVersions: each saved version a run started with is listed,
// newest first.
func TestWorkflowVersions(t *testing.T) {
	ctx := context.Background()
	svc := openLibraryService(t, t.TempDir())
	var want []string
	revision := ""
	for _, msg := range []string{"one", "two"} {
		res, err := svc.SaveWorkflow(ctx, SaveRequest{Content: logWorkflow("versioned", msg), ExpectedVersion: revision})
		if err != nil {
			t.Fatal(err)
		}
		l, err := svc.LoadLibraryWorkflow("versioned")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.StartRun(ctx, l, nil, false); err != nil {
			t.Fatal(err)
		}
		if l.Version != res.Version {
			t.Fatalf("loaded %s, saved %s", l.Version, res.Version)
		}
		want, revision = append(want, res.Version), res.Revision
	}
	got, err := svc.WorkflowVersions(ctx, "versioned", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Version != want[1] || got[1].Version != want[0] || got[0].RecordedAt.Before(got[1].RecordedAt) {
		t.Fatalf("versions %+v, want %v newest first", got, want)
	}
}

package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"stepwise.dev/stepwise/store"
)

// testCreateRefusals: a run id taken already is ErrExists, an unrecorded
// version ErrNotFound, each classified by the driver's error code, and
// neither writes anything.
func testCreateRefusals(t *testing.T, s store.Store) {
	r := newRun(t, s)
	dup := r
	dup.Workflow, dup.Inputs = "other", json.RawMessage(`{"b":2}`)
	if _, err := s.CreateRun(ctx, dup, []store.Event{{Type: "run.started"}}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("a second run %s: %v, want ErrExists", r.ID, err)
	}
	if got := ok(s.GetRun(ctx, r.ID))(t); got.Workflow != "wf" || string(got.Inputs) != `{"a":1}` || got.EventSeq != 1 {
		t.Fatalf("the refused duplicate changed the run: %+v", got)
	}
	orphan := store.Run{ID: r.ID + "-orphan", Workflow: "wf", Version: "sha256:never-recorded", Status: store.StatusRunning, State: json.RawMessage(`{}`)}
	if _, err := s.CreateRun(ctx, orphan, []store.Event{{Type: "run.started"}}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a run of an unrecorded version: %v, want ErrNotFound", err)
	}
	if _, err := s.GetRun(ctx, orphan.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused run was written: %v", err)
	}
}

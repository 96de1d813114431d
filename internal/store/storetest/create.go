package storetest

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
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

// testListVersions: a workflow's versions newest first, bounded by the
// limit, without definitions; other workflows' left out.
func testListVersions(t *testing.T, s store.Store) {
	if got := ok(s.ListVersions(ctx, "never", 10))(t); len(got) != 0 {
		t.Fatalf("versions of a workflow never recorded: %+v", got)
	}
	for i, v := range []string{"sha256:v1", "sha256:v2", "sha256:v3"} {
		if err := s.PutVersion(ctx, store.Version{Version: v, Name: "lister", Definition: []byte(`{"name":"lister"}`)}); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			time.Sleep(2 * time.Millisecond) // distinct creation times
		}
	}
	if err := s.PutVersion(ctx, store.Version{Version: "sha256:other", Name: "other", Definition: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	got := ok(s.ListVersions(ctx, "lister", 10))(t)
	var ids []string
	for _, v := range got {
		ids = append(ids, v.Version)
		if v.Name != "lister" || v.Definition != nil || v.CreatedAt.IsZero() {
			t.Errorf("version %+v", v)
		}
	}
	if strings.Join(ids, " ") != "sha256:v3 sha256:v2 sha256:v1" {
		t.Fatalf("versions %v, want v3 v2 v1", ids)
	}
	if got := ok(s.ListVersions(ctx, "lister", 2))(t); len(got) != 2 || got[0].Version != "sha256:v3" {
		t.Fatalf("limit 2: %+v", got)
	}
}

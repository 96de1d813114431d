package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// The purge cases build runs with fixed finish times around purgeBase so
// that filters by time are exact.
var purgeBase = time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)

// finishRun moves a run to a final status at a given time.
func finishRun(t *testing.T, s store.Store, id, status string, at time.Time) {
	t.Helper()
	r := ok(s.GetRun(ctx, id))(t)
	ok(s.Commit(ctx, store.Commit{RunID: id, Rev: r.Rev, Run: store.RunUpdate{Status: status, FinishedAt: at},
		Events: []store.Event{{Type: "run." + status}}}))(t)
}

// finishedRun creates a top-level run of workflow that finished in status
// at the given time.
func finishedRun(t *testing.T, s store.Store, workflow, status string, at time.Time, mods ...func(*store.Run)) string {
	t.Helper()
	r := newRun(t, s, append([]func(*store.Run){func(r *store.Run) { r.Workflow = workflow; r.CreatedAt = at.Add(-time.Minute) }}, mods...)...)
	finishRun(t, s, r.ID, status, at)
	return r.ID
}

// existing returns which of ids are still stored.
func existing(t *testing.T, s store.Store, ids ...string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, id := range ids {
		_, err := s.GetRun(ctx, id)
		switch {
		case err == nil:
			out[id] = true
		case errors.Is(err, store.ErrNotFound):
		default:
			t.Fatal(err)
		}
	}
	return out
}

// wantRemaining fails unless exactly keep of all is still stored.
func wantRemaining(t *testing.T, s store.Store, all []string, keep ...string) {
	t.Helper()
	left := existing(t, s, all...)
	want := map[string]bool{}
	for _, id := range keep {
		want[id] = true
	}
	for _, id := range all {
		if left[id] != want[id] {
			t.Errorf("run %s: stored %v, want %v", id, left[id], want[id])
		}
	}
}

func testPurgeNothing(t *testing.T, s store.Store) {
	for _, dry := range []bool{true, false} {
		if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{DryRun: dry}))(t); res != (store.PurgeResult{}) {
			t.Fatalf("purge of an empty store (dry run %v): %+v", dry, res)
		}
	}
	// Runs exist, but none matches.
	active := newRun(t, s)
	done := finishedRun(t, s, "wf", store.StatusSucceeded, purgeBase)
	for _, f := range []store.PurgeFilter{
		{Workflow: "no-such-workflow"},
		{Status: []string{store.StatusFailed}},
		{FinishedBefore: purgeBase}, // strictly before
		{Keep: 1},
	} {
		for _, dry := range []bool{true, false} {
			f.DryRun = dry
			if res := ok(s.PurgeRuns(ctx, f))(t); res != (store.PurgeResult{}) {
				t.Errorf("purge %+v: %+v", f, res)
			}
		}
	}
	wantRemaining(t, s, []string{active.ID, done}, active.ID, done)
	// Purging twice: the second finds nothing.
	if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{}))(t); res.Runs != 1 {
		t.Fatalf("first purge: %+v", res)
	}
	if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{}))(t); res != (store.PurgeResult{}) {
		t.Fatalf("second purge: %+v", res)
	}
}

func testPurgeInvalidFilter(t *testing.T, s store.Store) {
	done := finishedRun(t, s, "wf", store.StatusSucceeded, purgeBase)
	running := newRun(t, s)
	for _, f := range []store.PurgeFilter{
		{Status: []string{store.StatusRunning}},
		{Status: []string{store.StatusSucceeded, store.StatusWaiting}},
		{Status: []string{store.StatusPaused}, DryRun: true},
		{Status: []string{store.StatusPending}},
		{Status: []string{"archived"}},
		{Keep: -1},
	} {
		res, err := s.PurgeRuns(ctx, f)
		if !errors.Is(err, store.ErrInvalidFilter) {
			t.Errorf("filter %+v: want ErrInvalidFilter, got %v", f, err)
		}
		if res != (store.PurgeResult{}) {
			t.Errorf("filter %+v: counts %+v", f, res)
		}
	}
	wantRemaining(t, s, []string{done, running.ID}, done, running.ID)
}

// testPurgeCounts purges a run with one of every record and a sub-workflow
// run, and checks the counts (dry run and real) and that nothing of them
// is left — but that a version another run uses is.
func testPurgeCounts(t *testing.T, s store.Store) {
	put := func(v string) {
		if err := s.PutVersion(ctx, store.Version{Version: v, Name: v, Definition: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	put("sha256:purge-root")
	put("sha256:purge-child")
	at := purgeBase
	root := newRun(t, s, func(r *store.Run) { r.Workflow = "rich"; r.Version = "sha256:purge-root" }) // 1 event
	step := func(key string) store.Step {
		return store.Step{Key: key, Visit: 1, StepID: key, Status: "succeeded", Attempts: 1, StartedAt: at, FinishedAt: at}
	}
	rev := ok(s.Commit(ctx, store.Commit{RunID: root.ID, Rev: root.Rev, Steps: []store.Step{step("a")},
		Attempts: []store.Attempt{{Key: "a", Visit: 1, Attempt: 1, Status: "failed"}, {Key: "a", Visit: 1, Attempt: 2, Status: "succeeded"}},
		Events:   []store.Event{{Type: "step.started"}, {Type: "step.succeeded"}}}))(t).Rev // 3 events
	rev = ok(s.Commit(ctx, store.Commit{RunID: root.ID, Rev: rev, Run: store.RunUpdate{Status: store.StatusWaiting},
		OpenPause: &store.Pause{Seq: 1, StepKey: "q", Visit: 1, Kind: "question", Request: json.RawMessage(`{}`), ExpiresAt: at.Add(time.Hour)},
		Events:    []store.Event{{Type: "run.paused"}}}))(t).Rev // 4 events
	rev = ok(s.Commit(ctx, store.Commit{RunID: root.ID, Rev: rev, Run: store.RunUpdate{Status: store.StatusRunning},
		ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(`"x"`)},
		Answer:     &store.Answer{PauseSeq: 1, StepKey: "q", Value: json.RawMessage(`"x"`)},
		Events:     []store.Event{{Type: "run.continued"}}}))(t).Rev // 5 events
	// A wake-up left behind: the purge removes it with the run.
	ok(s.Commit(ctx, store.Commit{RunID: root.ID, Rev: rev, SetTimers: []store.Timer{{Key: "t", WakeAt: at.Add(time.Hour)}}}))(t)

	child := newRun(t, s, func(r *store.Run) { r.Workflow = "rich-child"; r.Version = "sha256:purge-child"; r.ParentID = root.ID }) // 1 event
	ok(s.Commit(ctx, store.Commit{RunID: child.ID, Rev: child.Rev, Steps: []store.Step{step("b")},
		Attempts: []store.Attempt{{Key: "b", Visit: 1, Attempt: 1, Status: "succeeded"}},
		Events:   []store.Event{{Type: "step.succeeded"}}}))(t) // 2 events
	finishRun(t, s, child.ID, store.StatusSucceeded, at.Add(-time.Second)) // 3 events
	finishRun(t, s, root.ID, store.StatusSucceeded, at)                    // 6 events

	// Another run of the child's version keeps that version alive.
	other := finishedRun(t, s, "other", store.StatusFailed, at, func(r *store.Run) { r.Version = "sha256:purge-child" })

	want := store.PurgeResult{Runs: 2, Steps: 2, Attempts: 3, Events: 9, Pauses: 1, Answers: 1, Timers: 1, Versions: 1}
	f := store.PurgeFilter{Workflow: "rich", DryRun: true}
	if got := ok(s.PurgeRuns(ctx, f))(t); got != want {
		t.Fatalf("dry run counts %+v, want %+v", got, want)
	}
	wantRemaining(t, s, []string{root.ID, child.ID, other}, root.ID, child.ID, other)
	f.DryRun = false
	if got := ok(s.PurgeRuns(ctx, f))(t); got != want {
		t.Fatalf("purge counts %+v, want %+v", got, want)
	}
	wantRemaining(t, s, []string{root.ID, child.ID, other}, other)
	for _, id := range []string{root.ID, child.ID} {
		if _, err := s.Commit(ctx, store.Commit{RunID: id, Rev: 1}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("commit to purged run %s: %v", id, err)
		}
		if n := len(ok(s.Steps(ctx, id))(t)) + len(ok(s.Attempts(ctx, id))(t)) + len(ok(s.Events(ctx, id, 0, 0))(t)) +
			len(ok(s.Answers(ctx, id))(t)) + len(ok(s.Timers(ctx, id))(t)); n != 0 {
			t.Errorf("purged run %s left %d records", id, n)
		}
		if _, err := s.GetPause(ctx, id, 1); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("pause of purged run %s: %v", id, err)
		}
	}
	if _, found, err := s.NextTimer(ctx); err != nil || found {
		t.Errorf("a timer of a purged run is still due: %v %v", found, err)
	}
	if _, err := s.GetVersion(ctx, "sha256:purge-root"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the purged run's version is still stored: %v", err)
	}
	if _, err := s.GetVersion(ctx, "sha256:purge-child"); err != nil {
		t.Errorf("a version still in use was deleted: %v", err)
	}
	// The other run's history is intact.
	if evs := ok(s.Events(ctx, other, 0, 0))(t); len(evs) != 2 {
		t.Errorf("events of the remaining run: %+v", evs)
	}
	// A dropped version can be recorded again and run.
	put("sha256:purge-root")
	newRun(t, s, func(r *store.Run) { r.Version = "sha256:purge-root" })
}

// testPurgeActive: trees with anything unfinished are left whole, whatever
// the filter; sub-workflow runs are never selected on their own.
func testPurgeActive(t *testing.T, s store.Store) {
	at := purgeBase
	var all []string
	add := func(id string) string { all = append(all, id); return id }
	child := func(parent, workflow string) string {
		return add(newRun(t, s, func(r *store.Run) { r.ParentID = parent; r.Workflow = workflow }).ID)
	}
	for _, st := range []string{store.StatusPending, store.StatusRunning, store.StatusWaiting, store.StatusPaused} {
		add(newRun(t, s, func(r *store.Run) { r.Status = st }).ID)
	}
	// An active parent with a finished child.
	waiting := add(newRun(t, s, func(r *store.Run) { r.Status = store.StatusWaiting }).ID)
	doneChild := child(waiting, "sub")
	finishRun(t, s, doneChild, store.StatusSucceeded, at.Add(-time.Hour))
	// A finished root with a running child, and one with a running
	// grandchild under a finished child.
	root1 := add(finishedRun(t, s, "wf", store.StatusFailed, at.Add(-time.Hour)))
	child(root1, "sub")
	root2 := add(finishedRun(t, s, "wf", store.StatusCanceled, at.Add(-time.Hour)))
	mid := child(root2, "sub")
	finishRun(t, s, mid, store.StatusCanceled, at.Add(-time.Hour))
	child(mid, "sub")
	// The one tree that can go.
	gone := add(finishedRun(t, s, "wf", store.StatusSucceeded, at.Add(-time.Hour)))
	goneChild := child(gone, "sub")
	finishRun(t, s, goneChild, store.StatusSucceeded, at.Add(-2*time.Hour))

	// Selecting the sub-workflow by name selects nothing: children go only
	// with their root.
	if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{Workflow: "sub"}))(t); res != (store.PurgeResult{}) {
		t.Fatalf("purge of sub-workflow runs by name: %+v", res)
	}
	dry := ok(s.PurgeRuns(ctx, store.PurgeFilter{FinishedBefore: at, DryRun: true}))(t)
	res := ok(s.PurgeRuns(ctx, store.PurgeFilter{FinishedBefore: at}))(t)
	if res.Runs != 2 || dry != res {
		t.Fatalf("purge: %+v (dry run %+v), want the one finished tree of 2 runs", res, dry)
	}
	var keep []string
	for _, id := range all {
		if id != gone && id != goneChild {
			keep = append(keep, id)
		}
	}
	wantRemaining(t, s, all, keep...)
}

func testPurgeFilters(t *testing.T, s store.Store) {
	h := func(n int) time.Time { return purgeBase.Add(time.Duration(n) * time.Hour) }
	a1 := finishedRun(t, s, "a", store.StatusSucceeded, h(1))
	a2 := finishedRun(t, s, "a", store.StatusFailed, h(2))
	a3 := finishedRun(t, s, "a", store.StatusCanceled, h(3))
	b1 := finishedRun(t, s, "b", store.StatusSucceeded, h(1))
	b4 := finishedRun(t, s, "b", store.StatusSucceeded, h(4))
	b5 := finishedRun(t, s, "b", store.StatusFailed, h(5))
	all := []string{a1, a2, a3, b1, b4, b5}
	count := func(f store.PurgeFilter) int {
		t.Helper()
		f.DryRun = true
		return ok(s.PurgeRuns(ctx, f))(t).Runs
	}
	for _, c := range []struct {
		f    store.PurgeFilter
		want int
	}{
		{store.PurgeFilter{}, 6},
		{store.PurgeFilter{Workflow: "a"}, 3},
		{store.PurgeFilter{Status: []string{store.StatusFailed}}, 2},
		{store.PurgeFilter{Status: []string{store.StatusFailed, store.StatusCanceled}, Workflow: "a"}, 2},
		{store.PurgeFilter{FinishedBefore: h(2)}, 2}, // strictly before: a1, b1
		{store.PurgeFilter{FinishedBefore: h(2).Add(time.Nanosecond)}, 3},
		{store.PurgeFilter{Keep: 4}, 2},
		{store.PurgeFilter{Keep: 6}, 0},
		{store.PurgeFilter{Workflow: "b", Keep: 1}, 2},
		{store.PurgeFilter{Workflow: "b", Status: []string{store.StatusSucceeded}, Keep: 1}, 1},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("dry run %+v: %d runs, want %d", c.f, got, c.want)
		}
	}
	wantRemaining(t, s, all, all...)

	// Keep spares the newest by finish time: b4 and b5 stay.
	if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{Workflow: "b", Keep: 2}))(t); res.Runs != 1 {
		t.Fatalf("keep 2 of b: %+v", res)
	}
	wantRemaining(t, s, all, a1, a2, a3, b4, b5)
	if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{Status: []string{store.StatusFailed}, FinishedBefore: h(3)}))(t); res.Runs != 1 {
		t.Fatalf("failed before h3: %+v", res)
	}
	wantRemaining(t, s, all, a1, a3, b4, b5)
	if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{Workflow: "a"}))(t); res.Runs != 2 || res.Events != 4 {
		t.Fatalf("workflow a: %+v", res)
	}
	wantRemaining(t, s, all, b4, b5)
	// Keep counts what the filter matches: the newest run overall stays.
	if res := ok(s.PurgeRuns(ctx, store.PurgeFilter{Keep: 1}))(t); res.Runs != 1 {
		t.Fatalf("keep 1: %+v", res)
	}
	wantRemaining(t, s, all, b5)
}

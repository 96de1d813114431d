// Package storetest is the conformance suite of the store: every backend
// runs Run against itself and must pass all of it, so that the engine can
// rely on the same semantics everywhere.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Opener returns a fresh, empty store; it is closed by the suite.
type Opener func(t *testing.T) store.Store

// Run runs the whole conformance suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"Versions", testVersions},
		{"CreateAndGetRun", testCreateAndGetRun},
		{"CreateRefusesTakenIDsAndUnknownVersions", testCreateRefusals},
		{"ListVersionsNewestFirst", testListVersions},
		{"CommitAdvancesRevisionAndEvents", testCommit},
		{"CommitConflictWritesNothing", testCommitConflict},
		{"CommitKeepsOrChangesTheStatus", testCommitStatus},
		{"UpdatedAtIsTheLastWrite", testUpdatedAt},
		{"PauseLifecycle", testPauseLifecycle},
		{"PauseClosedOnceUnderRace", testPauseRace},
		{"ConcurrentCommitsIsolateFailures", testConcurrentCommitsIsolateFailures},
		{"Ping", func(t *testing.T, s store.Store) {
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("ping of an open store: %v", err)
			}
		}},
		{"ConcurrentCommitStress", testConcurrentCommitStress},
		{"CommitEventSeqIsAHint", testCommitEventSeqHint},
		{"AnswerIDsIncrease", testAnswerIDs},
		{"StepsUpsertByVisit", testStepsUpsert},
		{"ManyStepsAndEventsInOneCommit", testManyInOneCommit},
		{"ListRunsFiltersAndPages", testListRuns},
		{"Timers", testTimers},
		{"TimersOfPausedRunsAreNotDue", testTimersOfPausedRuns},
		{"RunIDsByStatus", testRunIDsByStatus},
		{"ReopenAndCopySteps", testReopenAndCopy},
		{"WorkflowStats", testWorkflowStats},
		{"PurgeOfNothingReturnsZeros", testPurgeNothing},
		{"PurgeRefusesUnfinishedStatuses", testPurgeInvalidFilter},
		{"PurgeDeletesAllOfARunAndCountsExactly", testPurgeCounts},
		{"PurgeLeavesActiveTreesWhole", testPurgeActive},
		{"PurgeRespectsFilters", testPurgeFilters},
	}
	tests = append(tests, leaseTests...)
	tests = append(tests, scheduleTests...)
	tests = append(tests, queueTests...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tt.fn(t, s)
		})
	}
}

var ctx = context.Background()

// ok turns a (value, error) pair into a function that fails the test on
// error: ok(s.GetRun(ctx, id))(t).
func ok[T any](v T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func seedVersion(t *testing.T, s store.Store) string {
	t.Helper()
	v := store.Version{Version: "sha256:test", Name: "wf", Definition: []byte(`{"name":"wf"}`)}
	if err := s.PutVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	return v.Version
}

var runCounter atomic.Int64

func newRun(t *testing.T, s store.Store, mods ...func(*store.Run)) store.Run {
	t.Helper()
	r := store.Run{
		ID:       fmt.Sprintf("run-%d", runCounter.Add(1)),
		Workflow: "wf",
		Version:  seedVersion(t, s),
		Status:   store.StatusRunning,
		Inputs:   json.RawMessage(`{"a":1}`),
		State:    json.RawMessage(`{"cursor":0}`),
	}
	for _, m := range mods {
		m(&r)
	}
	res := ok(s.CreateRun(ctx, r, []store.Event{{Type: "run.started"}}))(t)
	if res.Rev != 1 || len(res.EventSeqs) != 1 || res.EventSeqs[0] != 1 {
		t.Fatalf("CreateRun result %+v", res)
	}
	return ok(s.GetRun(ctx, r.ID))(t)
}

func testVersions(t *testing.T, s store.Store) {
	v := store.Version{Version: "sha256:abc", Name: "hello", Definition: []byte(`{"name":"hello"}`)}
	if err := s.PutVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	if err := s.PutVersion(ctx, v); err != nil {
		t.Fatalf("putting an existing version must be a no-op: %v", err)
	}
	got := ok(s.GetVersion(ctx, "sha256:abc"))(t)
	if got.Name != "hello" || string(got.Definition) != `{"name":"hello"}` || got.CreatedAt.IsZero() {
		t.Errorf("got %+v", got)
	}
	if _, err := s.GetVersion(ctx, "sha256:none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}
}

func testCreateAndGetRun(t *testing.T, s store.Store) {
	r := newRun(t, s, func(r *store.Run) { r.ParentID = "parent-1" })
	if r.Status != store.StatusRunning || r.Rev != 1 || r.EventSeq != 1 || r.ParentID != "parent-1" {
		t.Errorf("run %+v", r)
	}
	if string(r.Inputs) != `{"a":1}` || string(r.State) != `{"cursor":0}` || r.Outputs != nil {
		t.Errorf("json fields %s %s %s", r.Inputs, r.State, r.Outputs)
	}
	if r.CreatedAt.IsZero() || !r.FinishedAt.IsZero() {
		t.Errorf("times %v %v", r.CreatedAt, r.FinishedAt)
	}
	if _, err := s.CreateRun(ctx, store.Run{ID: r.ID, Workflow: "wf", Version: r.Version, Status: store.StatusPending}, nil); !errors.Is(err, store.ErrExists) {
		t.Errorf("duplicate id: %v", err)
	}
	if _, err := s.CreateRun(ctx, store.Run{ID: "other", Workflow: "wf", Version: "sha256:unknown", Status: store.StatusPending}, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a run of an unrecorded version must be refused with ErrNotFound: %v", err)
	}
	if _, err := s.GetRun(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing run: %v", err)
	}
	evs := ok(s.Events(ctx, r.ID, 0, 0))(t)
	if len(evs) != 1 || evs[0].Type != "run.started" || evs[0].Seq != 1 {
		t.Errorf("events %+v", evs)
	}
}

func testCommit(t *testing.T, s store.Store) {
	r := newRun(t, s)
	now := time.Now().UTC().Truncate(time.Millisecond)
	res := ok(s.Commit(ctx, store.Commit{
		RunID: r.ID, Rev: 1,
		Run:      store.RunUpdate{State: json.RawMessage(`{"cursor":1}`)},
		Steps:    []store.Step{{Key: "a", Visit: 1, StepID: "a", Status: "succeeded", Output: json.RawMessage(`{"x":1}`), Attempts: 1, StartedAt: now, FinishedAt: now}},
		Attempts: []store.Attempt{{Key: "a", Visit: 1, Attempt: 1, Status: "succeeded", StartedAt: now, FinishedAt: now}},
		Events:   []store.Event{{Type: "step.started", StepID: "a"}, {Type: "step.succeeded", StepID: "a", Data: json.RawMessage(`{"k":"v"}`)}},
	}))(t)
	if res.Rev != 2 || len(res.EventSeqs) != 2 || res.EventSeqs[0] != 2 || res.EventSeqs[1] != 3 {
		t.Fatalf("commit result %+v", res)
	}
	got := ok(s.GetRun(ctx, r.ID))(t)
	if got.Rev != 2 || got.EventSeq != 3 || string(got.State) != `{"cursor":1}` || got.Status != store.StatusRunning {
		t.Errorf("run after commit %+v", got)
	}
	end := time.Now().UTC()
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2,
		Run:    store.RunUpdate{Status: store.StatusSucceeded, Outputs: json.RawMessage(`{"o":true}`), FinishedAt: end},
		Events: []store.Event{{Type: "run.succeeded"}}}))(t)
	got = ok(s.GetRun(ctx, r.ID))(t)
	if got.Status != store.StatusSucceeded || string(got.Outputs) != `{"o":true}` || got.FinishedAt.IsZero() || string(got.State) != `{"cursor":1}` {
		t.Errorf("finished run %+v", got)
	}
	steps := ok(s.Steps(ctx, r.ID))(t)
	if len(steps) != 1 || string(steps[0].Output) != `{"x":1}` || !steps[0].StartedAt.Equal(now) {
		t.Errorf("steps %+v", steps)
	}
	if atts := ok(s.Attempts(ctx, r.ID))(t); len(atts) != 1 || atts[0].Attempt != 1 {
		t.Errorf("attempts %+v", atts)
	}
	evs := ok(s.Events(ctx, r.ID, 1, 0))(t)
	if len(evs) != 3 || evs[1].Type != "step.succeeded" || string(evs[1].Data) != `{"k":"v"}` || evs[2].Seq != 4 {
		t.Errorf("events %+v", evs)
	}
	if evs := ok(s.Events(ctx, r.ID, 0, 2))(t); len(evs) != 2 {
		t.Errorf("limit: %d events", len(evs))
	}
	if _, err := s.Commit(ctx, store.Commit{RunID: "missing", Rev: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("commit to a missing run: %v", err)
	}
}

// UpdatedAt is when the run was last written (created or committed),
// never earlier than the write began: the engine tells runs a previous
// process left in the middle of a step by an UpdatedAt before its own
// start. A commit with nothing but a state moves it too.
func testUpdatedAt(t *testing.T, s store.Store) {
	before := time.Now()
	r := newRun(t, s)
	if r.UpdatedAt.Before(before.Truncate(time.Microsecond)) {
		t.Fatalf("created at %v, UpdatedAt %v is earlier", before, r.UpdatedAt)
	}
	rev := r.Rev
	for i, c := range []store.Commit{
		{Events: []store.Event{{Type: "run.resumed"}}},
		{Run: store.RunUpdate{State: json.RawMessage(`{"cursor":1}`)}},
	} {
		time.Sleep(time.Millisecond) // a clock that moves
		before := time.Now()
		c.RunID, c.Rev = r.ID, rev
		rev = ok(s.Commit(ctx, c))(t).Rev
		got := ok(s.GetRun(ctx, r.ID))(t)
		if got.UpdatedAt.Before(before.Truncate(time.Microsecond)) {
			t.Fatalf("commit %d began at %v, UpdatedAt %v is earlier", i, before, got.UpdatedAt)
		}
	}
}

// A commit that names the status the run already has (an answer that ends
// at the next question) moves the run as any commit does; one that changes
// it is seen by the status filter at once.
func testCommitStatus(t *testing.T, s store.Store) {
	r := newRun(t, s)
	byStatus := func(status string) int {
		t.Helper()
		runs, _ := must2(t)(s.ListRuns(ctx, store.RunFilter{Status: []string{status}, Limit: 10}))
		return len(runs)
	}
	rev := r.Rev
	for i, status := range []string{store.StatusWaiting, store.StatusWaiting, store.StatusRunning, store.StatusRunning} {
		state := json.RawMessage(fmt.Sprintf(`{"cursor":%d}`, i))
		res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: rev, Run: store.RunUpdate{Status: status, State: state}, Events: []store.Event{{Type: "x"}}}))(t)
		if res.Rev != rev+1 {
			t.Fatalf("commit %d: rev %d, want %d", i, res.Rev, rev+1)
		}
		rev = res.Rev
		got := ok(s.GetRun(ctx, r.ID))(t)
		if got.Status != status || string(got.State) != string(state) || got.Rev != rev {
			t.Fatalf("commit %d (%s): run %+v", i, status, got)
		}
		other := store.StatusRunning
		if status == store.StatusRunning {
			other = store.StatusWaiting
		}
		if byStatus(status) != 1 || byStatus(other) != 0 {
			t.Fatalf("commit %d (%s): the status filter finds %d %s and %d %s runs", i, status, byStatus(status), status, byStatus(other), other)
		}
	}
	// A stale commit that would keep the status changes nothing either.
	if _, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: rev - 1, Run: store.RunUpdate{Status: store.StatusRunning, State: json.RawMessage(`{}`)}}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	if got := ok(s.GetRun(ctx, r.ID))(t); got.Rev != rev || string(got.State) != `{"cursor":3}` {
		t.Errorf("a conflicting commit changed the run: %+v", got)
	}
}

func testCommitConflict(t *testing.T, s store.Store) {
	r := newRun(t, s)
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 1, Events: []store.Event{{Type: "x"}}}))(t)
	_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 1,
		Run:    store.RunUpdate{Status: store.StatusFailed},
		Steps:  []store.Step{{Key: "b", Visit: 1, StepID: "b", Status: "succeeded", Attempts: 1}},
		Events: []store.Event{{Type: "y"}}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	got := ok(s.GetRun(ctx, r.ID))(t)
	if got.Status != store.StatusRunning || got.Rev != 2 || got.EventSeq != 2 {
		t.Errorf("a conflicting commit changed the run: %+v", got)
	}
	if steps := ok(s.Steps(ctx, r.ID))(t); len(steps) != 0 {
		t.Errorf("a conflicting commit recorded steps: %+v", steps)
	}
}

func openPause(t *testing.T, s store.Store, r store.Run, seq int64) {
	t.Helper()
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev,
		Run:       store.RunUpdate{Status: store.StatusWaiting},
		OpenPause: &store.Pause{Seq: seq, StepKey: "q", Visit: 1, Kind: "question", Request: json.RawMessage(`{"prompt":"?"}`), ExpiresAt: time.Now().Add(time.Hour)},
		Events:    []store.Event{{Type: "run.paused", StepID: "q"}}}))(t)
}

func testPauseLifecycle(t *testing.T, s store.Store) {
	r := newRun(t, s)
	openPause(t, s, r, 1)
	open := ok(s.OpenPauses(ctx, r.ID))(t)
	if len(open) != 1 || open[0].Seq != 1 || open[0].Status != store.PauseOpen || string(open[0].Request) != `{"prompt":"?"}` {
		t.Fatalf("open pauses %+v", open)
	}
	if _, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2, OpenPause: &store.Pause{Seq: 1, StepKey: "q", Kind: "question", Request: json.RawMessage(`{}`)}}); !errors.Is(err, store.ErrExists) {
		t.Errorf("reopening seq 1: %v", err)
	}
	res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2,
		Run:        store.RunUpdate{Status: store.StatusRunning},
		ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(`"yes"`)},
		Answer:     &store.Answer{PauseSeq: 1, StepKey: "q", Value: json.RawMessage(`"yes"`)},
		Events:     []store.Event{{Type: "run.continued"}}}))(t)
	if res.AnswerID <= 0 {
		t.Errorf("answer id %d", res.AnswerID)
	}
	p := ok(s.GetPause(ctx, r.ID, 1))(t)
	if p.Status != store.PauseAnswered || string(p.Answer) != `"yes"` || p.AnsweredAt.IsZero() {
		t.Errorf("answered pause %+v", p)
	}
	if open := ok(s.OpenPauses(ctx, r.ID))(t); len(open) != 0 {
		t.Errorf("still open: %+v", open)
	}
	before := ok(s.GetRun(ctx, r.ID))(t)
	_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: before.Rev,
		Run:        store.RunUpdate{Status: store.StatusFailed},
		ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(`"again"`)},
		Answer:     &store.Answer{PauseSeq: 1, StepKey: "q", Value: json.RawMessage(`"again"`)},
		Events:     []store.Event{{Type: "run.continued"}}})
	if !errors.Is(err, store.ErrPauseClosed) {
		t.Fatalf("closing twice: %v", err)
	}
	after := ok(s.GetRun(ctx, r.ID))(t)
	if after.Rev != before.Rev || after.Status != before.Status || after.EventSeq != before.EventSeq {
		t.Errorf("a refused close changed the run: %+v -> %+v", before, after)
	}
	if answers := ok(s.Answers(ctx, r.ID))(t); len(answers) != 1 {
		t.Errorf("a refused close recorded an answer: %+v", answers)
	}
	// Several pauses closed as canceled at once; a closed one stays closed.
	cur := ok(s.GetRun(ctx, r.ID))(t)
	res2 := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: cur.Rev,
		OpenPause: &store.Pause{Seq: 2, StepKey: "q2", Visit: 1, Kind: "question", Request: json.RawMessage(`{}`), ExpiresAt: time.Now().Add(time.Hour)}}))(t)
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: res2.Rev, CancelPauses: []int64{1, 2}}))(t)
	if p := ok(s.GetPause(ctx, r.ID, 1))(t); p.Status != store.PauseAnswered {
		t.Errorf("an answered pause was canceled: %+v", p)
	}
	if p := ok(s.GetPause(ctx, r.ID, 2))(t); p.Status != store.PauseCanceled {
		t.Errorf("pause 2: %+v", p)
	}
	if _, err := s.GetPause(ctx, r.ID, 9); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing pause: %v", err)
	}
}

func testPauseRace(t *testing.T, s store.Store) {
	r := newRun(t, s)
	openPause(t, s, r, 1)
	const n = 32
	var wins, closed atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for {
				cur, err := s.GetRun(ctx, r.ID)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: cur.Rev,
					Run:        store.RunUpdate{Status: store.StatusRunning},
					ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(fmt.Sprint(i))},
					Answer:     &store.Answer{PauseSeq: 1, StepKey: "q", Value: json.RawMessage(fmt.Sprint(i))}})
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, store.ErrPauseClosed):
					closed.Add(1)
				case errors.Is(err, store.ErrConflict):
					continue // someone else moved the run; read again
				default:
					t.Error(err)
				}
				return
			}
		}(i)
	}
	wg.Wait()
	if wins.Load() != 1 || closed.Load() != n-1 {
		t.Errorf("wins %d, refused %d", wins.Load(), closed.Load())
	}
	if answers := ok(s.Answers(ctx, r.ID))(t); len(answers) != 1 {
		t.Errorf("%d answers recorded", len(answers))
	}
}

func testAnswerIDs(t *testing.T, s store.Store) {
	var last int64
	for i := 0; i < 5; i++ {
		r := newRun(t, s)
		openPause(t, s, r, 1)
		res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2,
			ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered},
			Answer:     &store.Answer{PauseSeq: 1, StepKey: "q", Value: json.RawMessage(`1`)}}))(t)
		if res.AnswerID <= last {
			t.Fatalf("answer id %d after %d", res.AnswerID, last)
		}
		last = res.AnswerID
	}
}

func testStepsUpsert(t *testing.T, s store.Store) {
	r := newRun(t, s)
	rev := r.Rev
	for _, st := range []store.Step{
		{Key: "a", Visit: 1, StepID: "a", Status: "failed", Error: "boom", Attempts: 1},
		{Key: "a", Visit: 1, StepID: "a", Status: "succeeded", Attempts: 2},
		{Key: "a", Visit: 2, StepID: "a", Status: "succeeded", Attempts: 1},
	} {
		res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: rev, Steps: []store.Step{st}}))(t)
		rev = res.Rev
	}
	steps := ok(s.Steps(ctx, r.ID))(t)
	if len(steps) != 2 || steps[0].Status != "succeeded" || steps[0].Error != "" || steps[0].Attempts != 2 || steps[1].Visit != 2 {
		t.Errorf("steps %+v", steps)
	}
}

// A merged commit (pure steps riding along) carries many steps and events:
// each is recorded once, in order, a step recorded twice in the commit as
// its last record says and in the place of its first.
func testManyInOneCommit(t *testing.T, s store.Store) {
	r := newRun(t, s)
	var steps []store.Step
	var events []store.Event
	for i := range 75 {
		key := fmt.Sprintf("s%02d", i)
		steps = append(steps, store.Step{Key: key, Visit: 1, StepID: key, Status: "succeeded", Attempts: 1})
		events = append(events, store.Event{Type: "step.succeeded", StepID: key, Data: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
		switch i {
		case 4: // s03 again, right after it (a backend may write both in one statement)
			steps = append(steps, store.Step{Key: "s03", Visit: 1, StepID: "s03", Status: "failed", Error: "late", Attempts: 2})
		case 60: // s05 again, far from the first
			steps = append(steps, store.Step{Key: "s05", Visit: 1, StepID: "s05", Status: "failed", Error: "later", Attempts: 3})
		}
	}
	res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Steps: steps, Events: events}))(t)
	if len(res.EventSeqs) != 75 || res.EventSeqs[0] != r.EventSeq+1 || res.EventSeqs[74] != r.EventSeq+75 {
		t.Fatalf("event seqs %v", res.EventSeqs)
	}
	got := ok(s.Steps(ctx, r.ID))(t)
	if len(got) != 75 {
		t.Fatalf("%d steps, want 75", len(got))
	}
	for i, st := range got {
		if want := fmt.Sprintf("s%02d", i); st.Key != want {
			t.Fatalf("step %d is %s, want %s (the order of first records)", i, st.Key, want)
		}
	}
	if st := got[3]; st.Status != "failed" || st.Error != "late" || st.Attempts != 2 {
		t.Errorf("a step recorded twice in one commit: %+v, want its last record", st)
	}
	if st := got[5]; st.Status != "failed" || st.Error != "later" || st.Attempts != 3 {
		t.Errorf("a step recorded twice in one commit: %+v, want its last record", st)
	}
	evs := ok(s.Events(ctx, r.ID, r.EventSeq, 0))(t)
	if len(evs) != 75 {
		t.Fatalf("%d events, want 75", len(evs))
	}
	for i, e := range evs {
		if e.Seq != r.EventSeq+int64(i)+1 || e.StepID != fmt.Sprintf("s%02d", i) || string(e.Data) != fmt.Sprintf(`{"i":%d}`, i) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
}

func testListRuns(t *testing.T, s store.Store) {
	base := time.Now().Add(-time.Hour)
	var ids []string
	for i := 0; i < 25; i++ {
		i := i
		r := newRun(t, s, func(r *store.Run) {
			r.CreatedAt = base.Add(time.Duration(i) * time.Second)
			if i%5 == 0 {
				r.Workflow = "other"
			}
			if i%2 == 0 {
				r.Status = store.StatusSucceeded
			}
		})
		ids = append(ids, r.ID)
	}
	seen := map[string]bool{}
	cursor := ""
	var prev time.Time
	for page := 0; ; page++ {
		runs, next := must2(t)(s.ListRuns(ctx, store.RunFilter{Limit: 7, Cursor: cursor}))
		for _, r := range runs {
			if seen[r.ID] {
				t.Fatalf("run %s listed twice", r.ID)
			}
			seen[r.ID] = true
			if !prev.IsZero() && r.CreatedAt.After(prev) {
				t.Fatalf("not newest first")
			}
			prev = r.CreatedAt
		}
		if next == "" {
			break
		}
		cursor = next
		if page > 10 {
			t.Fatal("paging does not end")
		}
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("run %s never listed", id)
		}
	}
	other, _ := must2(t)(s.ListRuns(ctx, store.RunFilter{Workflow: "other"}))
	if len(other) != 5 {
		t.Errorf("workflow filter: %d", len(other))
	}
	// Search: a workflow name's prefix, a run id's prefix.
	if found, _ := must2(t)(s.ListRuns(ctx, store.RunFilter{Search: "oth"})); len(found) != 5 {
		t.Errorf("search by workflow prefix: %d runs, want 5", len(found))
	}
	byID, _ := must2(t)(s.ListRuns(ctx, store.RunFilter{Search: ids[7], Limit: 1000}))
	hit := false
	for _, r := range byID {
		hit = hit || r.ID == ids[7]
		if !strings.HasPrefix(r.ID, ids[7]) && !strings.HasPrefix(r.Workflow, ids[7]) {
			t.Errorf("search %q found run %s (%s)", ids[7], r.ID, r.Workflow)
		}
	}
	if !hit {
		t.Errorf("search by run id %s: not found", ids[7])
	}
	// Paged, with another filter.
	paged := map[string]bool{}
	for cursor, page := "", 0; ; page++ {
		runs, next := must2(t)(s.ListRuns(ctx, store.RunFilter{Search: "oth", Status: []string{store.StatusSucceeded, store.StatusRunning}, Limit: 2, Cursor: cursor}))
		for _, r := range runs {
			if paged[r.ID] || r.Workflow != "other" {
				t.Errorf("search page %d: run %s (%s) again or not matching", page, r.ID, r.Workflow)
			}
			paged[r.ID] = true
		}
		if cursor = next; next == "" || page > 5 {
			break
		}
	}
	if len(paged) != 5 {
		t.Errorf("search paged by 2: %d runs, want 5", len(paged))
	}
	if found, _ := must2(t)(s.ListRuns(ctx, store.RunFilter{Search: "zzz-none"})); len(found) != 0 {
		t.Errorf("search matching nothing: %d runs", len(found))
	}
	done, _ := must2(t)(s.ListRuns(ctx, store.RunFilter{Status: []string{store.StatusSucceeded}, Workflow: "wf"}))
	for _, r := range done {
		if r.Status != store.StatusSucceeded || r.Workflow != "wf" {
			t.Errorf("filtered %+v", r)
		}
	}
	if len(done) != 10 {
		t.Errorf("status+workflow filter: %d", len(done))
	}
	recent, _ := must2(t)(s.ListRuns(ctx, store.RunFilter{CreatedAfter: base.Add(19500 * time.Millisecond)}))
	if len(recent) != 5 {
		t.Errorf("created-after filter: %d", len(recent))
	}
	if _, _, err := s.ListRuns(ctx, store.RunFilter{Cursor: "not-a-cursor!"}); err == nil {
		t.Error("a bad cursor must be an error")
	}
}

func must2(t *testing.T) func([]store.Run, string, error) ([]store.Run, string) {
	return func(r []store.Run, c string, err error) ([]store.Run, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r, c
	}
}

func testTimers(t *testing.T, s store.Store) {
	r := newRun(t, s)
	now := time.Now()
	if _, found, err := s.NextTimer(ctx); err != nil || found {
		t.Fatalf("no timers yet: %v %v", found, err)
	}
	res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 1, SetTimers: []store.Timer{
		{Key: "late", WakeAt: now.Add(time.Hour)}, {Key: "soon", WakeAt: now.Add(-time.Second)}}}))(t)
	next, found, err := s.NextTimer(ctx)
	if err != nil || !found || next.Key != "soon" || next.RunID != r.ID {
		t.Fatalf("next timer %+v %v %v", next, found, err)
	}
	if ts := ok(s.Timers(ctx, r.ID))(t); len(ts) != 2 || ts[0].Key != "soon" {
		t.Errorf("timers of the run %+v", ts)
	}
	due := ok(s.DueTimers(ctx, now, 10))(t)
	if len(due) != 1 || due[0].Key != "soon" {
		t.Errorf("due %+v", due)
	}
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: res.Rev, ClearTimers: []string{"soon"},
		SetTimers: []store.Timer{{Key: "late", WakeAt: now.Add(2 * time.Hour)}}}))(t)
	if due := ok(s.DueTimers(ctx, now.Add(90*time.Minute), 10))(t); len(due) != 0 {
		t.Errorf("after clear and reschedule: %+v", due)
	}
}

// testTimersOfPausedRuns: an operator-paused run keeps its wake-ups (they
// record when its sleeps and retries end) but they are not due until the
// run is resumed, so the timer loop does not keep waking a run that will
// not advance.
func testTimersOfPausedRuns(t *testing.T, s store.Store) {
	r := newRun(t, s)
	other := newRun(t, s)
	now := time.Now()
	res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 1, SetTimers: []store.Timer{{Key: "nested/sleep", WakeAt: now.Add(-time.Minute)}}}))(t)
	ok(s.Commit(ctx, store.Commit{RunID: other.ID, Rev: 1, SetTimers: []store.Timer{{Key: "retry", WakeAt: now.Add(-time.Second)}}}))(t)
	paused := store.Commit{RunID: r.ID, Rev: res.Rev}
	paused.Run.Status = store.StatusPaused
	res = ok(s.Commit(ctx, paused))(t)
	due := ok(s.DueTimers(ctx, now, 10))(t)
	if len(due) != 1 || due[0].RunID != other.ID {
		t.Errorf("due while paused: %+v, want only the other run's", due)
	}
	if next, found, err := s.NextTimer(ctx); err != nil || !found || next.RunID != other.ID {
		t.Errorf("next timer while paused: %+v %v %v", next, found, err)
	}
	if ts := ok(s.Timers(ctx, r.ID))(t); len(ts) != 1 {
		t.Errorf("a paused run keeps its timers: %+v", ts)
	}
	resumed := store.Commit{RunID: r.ID, Rev: res.Rev}
	resumed.Run.Status = store.StatusRunning
	ok(s.Commit(ctx, resumed))(t)
	if due := ok(s.DueTimers(ctx, now, 10))(t); len(due) != 2 || due[0].RunID != r.ID {
		t.Errorf("due after resume: %+v", due)
	}
}

func testRunIDsByStatus(t *testing.T, s store.Store) {
	a := newRun(t, s)
	b := newRun(t, s, func(r *store.Run) { r.Status = store.StatusWaiting })
	newRun(t, s, func(r *store.Run) { r.Status = store.StatusSucceeded })
	ids := ok(s.RunIDsByStatus(ctx, store.StatusRunning, store.StatusWaiting))(t)
	if len(ids) != 2 || ids[0] != a.ID || ids[1] != b.ID {
		t.Errorf("ids %v", ids)
	}
}

func testReopenAndCopy(t *testing.T, s store.Store) {
	r := newRun(t, s)
	now := time.Now()
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 1, Run: store.RunUpdate{Status: store.StatusFailed,
		Error: json.RawMessage(`{"message":"x"}`), FinishedAt: now}}))(t)
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2, Run: store.RunUpdate{Status: store.StatusRunning, Reopen: true,
		Inputs: json.RawMessage(`{"a":2}`)}}))(t)
	got := ok(s.GetRun(ctx, r.ID))(t)
	if got.Status != store.StatusRunning || got.Error != nil || !got.FinishedAt.IsZero() || string(got.Inputs) != `{"a":2}` {
		t.Fatalf("reopened run %+v", got)
	}
	fork := store.Run{ID: r.ID + "-fork", Workflow: "wf", Version: r.Version, Status: store.StatusRunning}
	ok(s.CreateRun(ctx, fork, nil, store.Step{Key: "a", Visit: 1, StepID: "a", Status: "succeeded", Output: json.RawMessage(`1`), Attempts: 1}))(t)
	if steps := ok(s.Steps(ctx, fork.ID))(t); len(steps) != 1 || string(steps[0].Output) != "1" {
		t.Fatalf("copied steps %+v", steps)
	}
}

func testWorkflowStats(t *testing.T, s store.Store) {
	if st := ok(s.WorkflowStats(ctx, "stats"))(t); st != (store.WorkflowStats{}) {
		t.Fatalf("stats of a workflow never run: %+v", st)
	}
	base := time.Now().UTC().Truncate(time.Millisecond)
	finish := func(r store.Run, status string, d time.Duration) {
		ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Run: store.RunUpdate{Status: status, FinishedAt: r.CreatedAt.Add(d)}}))(t)
	}
	named := func(at time.Time, mods ...func(*store.Run)) store.Run {
		return newRun(t, s, append([]func(*store.Run){func(r *store.Run) { r.Workflow = "stats"; r.CreatedAt = at }}, mods...)...)
	}
	finish(named(base), store.StatusSucceeded, 2*time.Second)
	finish(named(base.Add(time.Second)), store.StatusSucceeded, 4*time.Second)
	finish(named(base.Add(2*time.Second)), store.StatusFailed, 6*time.Second)
	named(base.Add(3 * time.Second)) // still running
	parent := named(base.Add(4*time.Second), func(r *store.Run) { r.Status = store.StatusWaiting })
	// A sub-workflow run of the same workflow does not count.
	finish(named(base.Add(5*time.Second), func(r *store.Run) { r.ParentID = parent.ID }), store.StatusCanceled, time.Second)
	newRun(t, s) // another workflow

	st := ok(s.WorkflowStats(ctx, "stats"))(t)
	want := store.WorkflowStats{Runs: 5, Succeeded: 2, Failed: 1, Active: 2, MeanDuration: 4 * time.Second, LastRunAt: base.Add(4 * time.Second)}
	if st.Runs != want.Runs || st.Succeeded != want.Succeeded || st.Failed != want.Failed || st.Canceled != 0 || st.Active != want.Active ||
		st.MeanDuration != want.MeanDuration || !st.LastRunAt.Equal(want.LastRunAt) {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
}

package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/store"
)

// Lease cases (issue 22; see store/lease.go). The clock is injected: t0 is
// an arbitrary instant and every case moves it by hand.

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const ttl = 10 * time.Second

// PairOpener returns two stores open on the same fresh database (two
// processes, as far as the store can tell); both are closed by the suite.
type PairOpener func(t *testing.T) (store.Store, store.Store)

// RunShared runs the lease cases that race claimants on two stores sharing
// one database.
func RunShared(t *testing.T, open PairOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store, store.Store)
	}{
		{"LeaseRaceOneWinner", testLeaseRace},
		{"ClaimRunsNeverHandsARunTwice", testClaimRunsConcurrent},
		{"FencedCommitAfterTakeover", func(t *testing.T, a, b store.Store) { testLeaseTakeover(t, a, b) }},
		{"CommitRacingTakeover", testLeaseCommitVsTakeover},
		{"ScheduleClaimOneWinner", testScheduleClaimRace},
		{"QueueAdmissionNeverExceedsTheLimit", testQueueConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := open(t)
			t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
			tt.fn(t, a, b)
		})
	}
}

// leaseTests are the lease cases on one store (part of Run).
var leaseTests = []struct {
	name string
	fn   func(*testing.T, store.Store)
}{
	{"LeaseAcquireRenewRelease", testLeaseLifecycle},
	{"LeaseTakeoverAfterExpiry", func(t *testing.T, s store.Store) { testLeaseTakeover(t, s, s) }},
	{"LeaseStaleEpochCommitRefused", testLeaseFencedCommit},
	{"LeaseFencingInGroupCommit", testLeaseFencedGroup},
	{"LeaseRaceOneWinner", func(t *testing.T, s store.Store) { testLeaseRace(t, s, s) }},
	{"ClaimRunsSelects", testClaimRuns},
	{"ClaimRunsNeverHandsARunTwice", func(t *testing.T, s store.Store) { testClaimRunsConcurrent(t, s, s) }},
	{"LeaseModel", testLeaseModel},
	{"LeaseTakenWithCreateAndCommit", testLeaseInWrites},
	{"CommitRacingTakeover", func(t *testing.T, s store.Store) { testLeaseCommitVsTakeover(t, s, s) }},
	{"LeaseTookOver", testLeaseTookOver},
	{"TakeOverLease", testTakeOverLease},
	{"ClaimRunsReady", testClaimReady},
	{"LeaseReleasedWithCommit", testLeaseReleaseInCommit},
}

func wantHeld(t *testing.T, err error, owner string, expires time.Time) {
	t.Helper()
	var held *store.LeaseHeldError
	if !errors.Is(err, store.ErrLeaseHeld) || !errors.As(err, &held) {
		t.Fatalf("want ErrLeaseHeld, got %v", err)
	}
	if held.Owner != owner || !held.Expires.Equal(expires) {
		t.Fatalf("held by %q until %v, want %q until %v", held.Owner, held.Expires, owner, expires)
	}
}

func wantLost(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("%s: want ErrLeaseLost, got %v", what, err)
	}
}

func wantLease(t *testing.T, s store.Store, runID, owner string, epoch int64, expires time.Time) {
	t.Helper()
	l := ok(s.GetLease(ctx, runID))(t)
	if l.RunID != runID || l.Owner != owner || l.Epoch != epoch || !l.Expires.Equal(expires) {
		t.Fatalf("lease %+v, want owner %q epoch %d expires %v", l, owner, epoch, expires)
	}
}

func testLeaseLifecycle(t *testing.T, s store.Store) {
	r := newRun(t, s)
	wantLease(t, s, r.ID, "", 0, time.Time{})
	a := ok(s.AcquireLease(ctx, r.ID, "A", t0, ttl))(t)
	if a.RunID != r.ID || a.Owner != "A" || a.Epoch != 1 || !a.Expires.Equal(t0.Add(ttl)) {
		t.Fatalf("acquired %+v", a)
	}
	wantLease(t, s, r.ID, "A", 1, t0.Add(ttl))

	_, err := s.AcquireLease(ctx, r.ID, "B", t0.Add(time.Second), ttl)
	wantHeld(t, err, "A", t0.Add(ttl))

	// Acquiring again is a new holding: a new epoch, the old one fenced.
	a2 := ok(s.AcquireLease(ctx, r.ID, "A", t0.Add(time.Second), ttl))(t)
	if a2.Epoch != 2 {
		t.Fatalf("re-acquired %+v, want epoch 2", a2)
	}
	_, err = s.RenewLease(ctx, a, t0.Add(2*time.Second), ttl)
	wantLost(t, err, "renew of a superseded epoch")

	// Renewal extends, keeping the epoch.
	a3 := ok(s.RenewLease(ctx, a2, t0.Add(3*time.Second), ttl))(t)
	if a3.Epoch != 2 || !a3.Expires.Equal(t0.Add(3*time.Second+ttl)) {
		t.Fatalf("renewed %+v", a3)
	}
	wantLease(t, s, r.ID, "A", 2, t0.Add(3*time.Second+ttl))
	if got := ok(s.GetRun(ctx, r.ID))(t); got.Rev != r.Rev || !got.UpdatedAt.Equal(r.UpdatedAt) {
		t.Errorf("a lease changed the run's revision or update time: %+v", got)
	}

	// Release, then another owner takes it at once; the epoch goes on.
	wantLost(t, s.ReleaseLease(ctx, a), "release of a superseded epoch")
	if err := s.ReleaseLease(ctx, a3); err != nil {
		t.Fatal(err)
	}
	wantLease(t, s, r.ID, "", 2, time.Time{})
	wantLost(t, s.ReleaseLease(ctx, a3), "second release")
	_, err = s.RenewLease(ctx, a3, t0.Add(4*time.Second), ttl)
	wantLost(t, err, "renew after release")
	b := ok(s.AcquireLease(ctx, r.ID, "B", t0.Add(4*time.Second), ttl))(t)
	if b.Epoch != 3 {
		t.Fatalf("acquired after release %+v, want epoch 3", b)
	}

	// Missing runs and invalid requests.
	if _, err := s.AcquireLease(ctx, "missing", "A", t0, ttl); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("acquire on a missing run: %v", err)
	}
	if _, err := s.RenewLease(ctx, store.Lease{RunID: "missing", Owner: "A", Epoch: 1}, t0, ttl); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("renew on a missing run: %v", err)
	}
	if err := s.ReleaseLease(ctx, store.Lease{RunID: "missing", Owner: "A", Epoch: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("release on a missing run: %v", err)
	}
	if _, err := s.GetLease(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lease of a missing run: %v", err)
	}
	if _, err := s.AcquireLease(ctx, r.ID, "", t0, ttl); !errors.Is(err, store.ErrInvalidLease) {
		t.Errorf("empty owner: %v", err)
	}
	if _, err := s.AcquireLease(ctx, r.ID, "A", t0, 0); !errors.Is(err, store.ErrInvalidLease) {
		t.Errorf("zero ttl: %v", err)
	}
	if _, err := s.ClaimRuns(ctx, "A", t0, -time.Second, store.ClaimFilter{}, 1); !errors.Is(err, store.ErrInvalidLease) {
		t.Errorf("negative ttl: %v", err)
	}
}

// testLeaseTakeover: A's lease expires (A crashed, or stalled); B, on s2,
// takes the run over; A can neither renew nor commit any more.
func testLeaseTakeover(t *testing.T, s1, s2 store.Store) {
	r := newRun(t, s1)
	a := ok(s1.AcquireLease(ctx, r.ID, "A", t0, ttl))(t)
	ok(s1.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Lease: a.Ref(), Events: []store.Event{{Type: "a"}}}))(t)

	_, err := s2.AcquireLease(ctx, r.ID, "B", t0.Add(ttl-time.Nanosecond), ttl)
	wantHeld(t, err, "A", t0.Add(ttl))
	if got := ok(s2.ClaimRuns(ctx, "B", t0.Add(ttl-time.Nanosecond), ttl, store.ClaimFilter{}, 10))(t); len(got) != 0 {
		t.Fatalf("claimed an unexpired lease: %+v", got)
	}
	// Expired but not taken over: A may still renew and commit.
	a = ok(s1.RenewLease(ctx, a, t0.Add(ttl+time.Second), ttl))(t)
	ok(s1.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev + 1, Lease: a.Ref(), Events: []store.Event{{Type: "a"}}}))(t)

	later := a.Expires
	b := ok(s2.AcquireLease(ctx, r.ID, "B", later, ttl))(t)
	if b.Epoch != a.Epoch+1 {
		t.Fatalf("took over at epoch %d, had %d", b.Epoch, a.Epoch)
	}
	_, err = s1.RenewLease(ctx, a, later, ttl)
	wantLost(t, err, "renew after takeover")
	_, err = s1.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev + 2, Lease: a.Ref(), Events: []store.Event{{Type: "stale"}}})
	wantLost(t, err, "commit after takeover")
	ok(s2.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev + 2, Lease: b.Ref(), Events: []store.Event{{Type: "b"}}}))(t)
	if got := ok(s1.GetRun(ctx, r.ID))(t); got.Rev != r.Rev+3 {
		t.Errorf("run %+v", got)
	}
	for _, e := range ok(s1.Events(ctx, r.ID, 0, 0))(t) {
		if e.Type == "stale" {
			t.Errorf("the stale commit wrote an event")
		}
	}
	// A crashed holder's lease is claimed by ClaimRuns too.
	if got := ok(s1.ClaimRuns(ctx, "C", b.Expires, ttl, store.ClaimFilter{}, 10))(t); len(got) != 1 || got[0].RunID != r.ID || got[0].Epoch != b.Epoch+1 {
		t.Fatalf("claim after expiry: %+v", got)
	}
}

// testLeaseFencedCommit: a commit under a stale epoch is refused and
// changes nothing; unfenced commits still work.
func testLeaseFencedCommit(t *testing.T, s store.Store) {
	r := newRun(t, s)
	old := ok(s.AcquireLease(ctx, r.ID, "A", t0, ttl))(t)
	cur := ok(s.AcquireLease(ctx, r.ID, "A", t0, ttl))(t)
	openPause(t, s, r, 1) // rev 2, unfenced
	now := time.Now().UTC()
	stale := store.Commit{RunID: r.ID, Rev: 2, EventSeq: 3, Lease: old.Ref(),
		Run:        store.RunUpdate{Status: store.StatusFailed, State: json.RawMessage(`{"cursor":9}`), Error: json.RawMessage(`{"message":"x"}`), FinishedAt: now},
		Steps:      []store.Step{{Key: "s", Visit: 1, StepID: "s", Status: "succeeded", Attempts: 1, StartedAt: now, FinishedAt: now}},
		Attempts:   []store.Attempt{{Key: "s", Visit: 1, Attempt: 1, Status: "succeeded", StartedAt: now, FinishedAt: now}},
		Events:     []store.Event{{Type: "stale"}},
		ClosePause: &store.PauseClose{Seq: 1, Status: store.PauseAnswered, Answer: json.RawMessage(`1`)},
		Answer:     &store.Answer{PauseSeq: 1, StepKey: "q", Value: json.RawMessage(`1`)},
		SetTimers:  []store.Timer{{Key: "t", WakeAt: now}},
	}
	before := ok(s.GetRun(ctx, r.ID))(t)
	for _, c := range []store.Commit{stale,
		func() store.Commit { c := stale; c.EventSeq = 0; return c }(),
		func() store.Commit { c := stale; c.Lease = &store.LeaseRef{Owner: "B", Epoch: cur.Epoch}; return c }(),
		func() store.Commit { c := stale; c.Lease = &store.LeaseRef{Owner: "A", Epoch: cur.Epoch + 1}; return c }(),
	} {
		_, err := s.Commit(ctx, c)
		wantLost(t, err, fmt.Sprintf("commit under %+v", *c.Lease))
		after := ok(s.GetRun(ctx, r.ID))(t)
		if after.Rev != before.Rev || after.EventSeq != before.EventSeq || after.Status != before.Status || string(after.State) != string(before.State) || len(after.Error) != 0 {
			t.Fatalf("a refused commit changed the run: %+v", after)
		}
		if steps := ok(s.Steps(ctx, r.ID))(t); len(steps) != 0 {
			t.Fatalf("a refused commit recorded steps")
		}
		if atts := ok(s.Attempts(ctx, r.ID))(t); len(atts) != 0 {
			t.Fatalf("a refused commit recorded attempts")
		}
		if ps := ok(s.OpenPauses(ctx, r.ID))(t); len(ps) != 1 {
			t.Fatalf("a refused commit closed the pause")
		}
		if as := ok(s.Answers(ctx, r.ID))(t); len(as) != 0 {
			t.Fatalf("a refused commit recorded an answer")
		}
		if ts := ok(s.Timers(ctx, r.ID))(t); len(ts) != 0 {
			t.Fatalf("a refused commit set a timer")
		}
	}
	// The current holder commits it.
	c := stale
	c.Lease = cur.Ref()
	ok(s.Commit(ctx, c))(t)
	if got := ok(s.GetRun(ctx, r.ID))(t); got.Rev != 3 || got.Status != store.StatusFailed {
		t.Fatalf("fenced commit by the holder: %+v", got)
	}
	// A released lease fences too; no lease does not.
	if err := s.ReleaseLease(ctx, cur); err != nil {
		t.Fatal(err)
	}
	_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 3, Lease: cur.Ref()})
	wantLost(t, err, "commit after release")
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 3, Events: []store.Event{{Type: "unfenced"}}}))(t)
	if _, err := s.Commit(ctx, store.Commit{RunID: "missing", Rev: 1, Lease: cur.Ref()}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("fenced commit to a missing run: %v", err)
	}
}

// testLeaseFencedGroup: concurrent commits (sharing transactions where the
// backend groups them), half under stale epochs: those alone are refused.
func testLeaseFencedGroup(t *testing.T, s store.Store) {
	const n = 24
	runs := make([]store.Run, n)
	leases := make([]store.Lease, n)
	for i := range runs {
		runs[i] = newRun(t, s)
		leases[i] = ok(s.AcquireLease(ctx, runs[i].ID, "A", t0, ttl))(t)
		if i%2 == 1 { // superseded by B
			ok(s.AcquireLease(ctx, runs[i].ID, "B", t0.Add(ttl), ttl))(t)
		}
	}
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Commit(ctx, store.Commit{RunID: runs[i].ID, Rev: int64(1 + round), EventSeq: int64(1 + round), Lease: leases[i].Ref(),
					Run: store.RunUpdate{State: json.RawMessage(fmt.Sprintf(`{"round":%d}`, round))}, Events: []store.Event{{Type: "x"}}})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if i%2 == 0 && err != nil {
				t.Fatalf("round %d: holder's commit to run %d: %v", round, i, err)
			}
			if i%2 == 1 {
				wantLost(t, err, fmt.Sprintf("round %d: stale commit to run %d", round, i))
			}
		}
	}
	for i, r := range runs {
		got := ok(s.GetRun(ctx, r.ID))(t)
		if i%2 == 0 && (got.Rev != 4 || got.EventSeq != 4) || i%2 == 1 && (got.Rev != 1 || got.EventSeq != 1) {
			t.Errorf("run %d: rev %d, event seq %d", i, got.Rev, got.EventSeq)
		}
	}
}

// testLeaseRace: claimants race for the lease of one run, on two stores
// (or one twice); exactly one wins each round.
func testLeaseRace(t *testing.T, s1, s2 store.Store) {
	const claimants = 8
	for round := 0; round < 10; round++ {
		r := newRun(t, s1)
		now := t0.Add(time.Duration(round) * time.Minute)
		var wg sync.WaitGroup
		wins := make([]store.Lease, claimants)
		errs := make([]error, claimants)
		start := make(chan struct{})
		for i := 0; i < claimants; i++ {
			s := s1
			if i%2 == 1 {
				s = s2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				wins[i], errs[i] = s.AcquireLease(ctx, r.ID, fmt.Sprintf("owner-%d", i), now, ttl)
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: both %d and %d acquired the lease", round, winner, i)
				}
				winner = i
			case !errors.Is(err, store.ErrLeaseHeld):
				t.Fatalf("round %d: claimant %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody acquired the lease", round)
		}
		if wins[winner].Epoch != 1 {
			t.Fatalf("round %d: epoch %d", round, wins[winner].Epoch)
		}
		wantLease(t, s2, r.ID, fmt.Sprintf("owner-%d", winner), 1, now.Add(ttl))
		for i, err := range errs {
			var held *store.LeaseHeldError
			if i != winner && (!errors.As(err, &held) || held.Owner != wins[winner].Owner) {
				t.Fatalf("round %d: claimant %d told %v", round, i, err)
			}
		}
	}
}

func testClaimRuns(t *testing.T, s store.Store) {
	mk := func(status, workflow string) string {
		return newRun(t, s, func(r *store.Run) { r.Status = status; r.Workflow = workflow }).ID
	}
	pending := mk(store.StatusPending, "wf")
	running := mk(store.StatusRunning, "wf")
	other := mk(store.StatusRunning, "other")
	waiting := mk(store.StatusWaiting, "wf")
	mk(store.StatusSucceeded, "wf")
	mk(store.StatusPaused, "wf")
	held := mk(store.StatusRunning, "wf")
	expired := mk(store.StatusRunning, "wf")
	h := ok(s.AcquireLease(ctx, held, "H", t0, time.Hour))(t)
	e := ok(s.AcquireLease(ctx, expired, "E", t0, time.Second))(t)
	now := t0.Add(time.Minute)

	if got := ok(s.ClaimRuns(ctx, "C", now, ttl, store.ClaimFilter{}, 0))(t); len(got) != 0 {
		t.Fatalf("limit 0 claimed %+v", got)
	}
	got := ok(s.ClaimRuns(ctx, "C", now, ttl, store.ClaimFilter{Workflow: "wf"}, 2))(t)
	if ids := leaseIDs(got); len(ids) != 2 || ids[pending] != 1 || ids[running] != 1 {
		t.Fatalf("first claim (oldest first) %+v", got)
	}
	for _, l := range got {
		if l.Owner != "C" || !l.Expires.Equal(now.Add(ttl)) {
			t.Fatalf("claimed %+v", l)
		}
		wantLease(t, s, l.RunID, "C", l.Epoch, now.Add(ttl))
	}
	got = ok(s.ClaimRuns(ctx, "D", now, ttl, store.ClaimFilter{Workflow: "wf"}, 10))(t)
	if len(got) != 1 || got[0].RunID != expired || got[0].Epoch != e.Epoch+1 {
		t.Fatalf("second claim %+v", got)
	}
	got = ok(s.ClaimRuns(ctx, "D", now, ttl, store.ClaimFilter{}, 10))(t)
	if len(got) != 1 || got[0].RunID != other {
		t.Fatalf("third claim %+v", got)
	}
	got = ok(s.ClaimRuns(ctx, "D", now, ttl, store.ClaimFilter{Status: []string{store.StatusWaiting, store.StatusRunning}}, 10))(t)
	if len(got) != 1 || got[0].RunID != waiting {
		t.Fatalf("claim of waiting runs %+v", got)
	}
	wantLease(t, s, held, "H", h.Epoch, h.Expires)
	// The claimed leases fence like acquired ones.
	_, err := s.Commit(ctx, store.Commit{RunID: expired, Rev: 1, Lease: e.Ref()})
	wantLost(t, err, "commit by the expired holder after a claim")
}

func leaseIDs(ls []store.Lease) map[string]int {
	m := map[string]int{}
	for _, l := range ls {
		m[l.RunID]++
	}
	return m
}

// testClaimRunsConcurrent: claimants on two stores claim many runs in
// small batches at once; every run goes to exactly one of them.
func testClaimRunsConcurrent(t *testing.T, s1, s2 store.Store) {
	const runs, claimants = 60, 6
	all := map[string]bool{}
	for i := 0; i < runs; i++ {
		all[newRun(t, s1).ID] = true
	}
	var wg sync.WaitGroup
	got := make([][]store.Lease, claimants)
	errs := make([]error, claimants)
	start := make(chan struct{})
	for i := 0; i < claimants; i++ {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				ls, err := s.ClaimRuns(ctx, fmt.Sprintf("claimant-%d", i), t0, ttl, store.ClaimFilter{}, 3)
				if err != nil {
					errs[i] = err
					return
				}
				if len(ls) == 0 {
					return
				}
				got[i] = append(got[i], ls...)
			}
		}()
	}
	close(start)
	wg.Wait()
	seen := map[string]string{}
	for i, ls := range got {
		if errs[i] != nil {
			t.Fatalf("claimant %d: %v", i, errs[i])
		}
		for _, l := range ls {
			if prev, dup := seen[l.RunID]; dup {
				t.Fatalf("run %s claimed by %s and %s", l.RunID, prev, l.Owner)
			}
			seen[l.RunID] = l.Owner
			if l.Epoch != 1 {
				t.Fatalf("claimed %+v", l)
			}
		}
	}
	if len(seen) != len(all) {
		var missing []string
		for id := range all {
			if _, ok := seen[id]; !ok {
				missing = append(missing, id)
			}
		}
		sort.Strings(missing)
		t.Fatalf("%d of %d runs claimed; missing %v", len(seen), len(all), missing)
	}
	for id, owner := range seen {
		if l := ok(s2.GetLease(ctx, id))(t); l.Owner != owner {
			t.Fatalf("run %s leased to %s, claimed by %s", id, l.Owner, owner)
		}
	}
}

// testLeaseModel: random sequences of acquisitions, renewals, releases,
// fenced commits and clock moves by three owners on one run agree with a
// model of the lease.
func testLeaseModel(t *testing.T, s store.Store) {
	owners := []string{"A", "B", "C"}
	rapid.Check(t, func(rt *rapid.T) {
		r := newRun(t, s)
		now := t0
		var holder string // "" when free
		var epoch int64
		var expires time.Time
		rev := r.Rev
		last := map[string]store.Lease{} // each owner's latest lease
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			o := rapid.SampledFrom(owners).Draw(rt, "owner")
			switch rapid.IntRange(0, 4).Draw(rt, "op") {
			case 0:
				now = now.Add(time.Duration(rapid.IntRange(0, 15).Draw(rt, "seconds")) * time.Second)
			case 1:
				l, err := s.AcquireLease(ctx, r.ID, o, now, ttl)
				free := holder == "" || holder == o || !now.Before(expires)
				if free != (err == nil) || err != nil && !errors.Is(err, store.ErrLeaseHeld) {
					rt.Fatalf("acquire by %s at %v (holder %q until %v): %v", o, now, holder, expires, err)
				}
				if err == nil {
					epoch++
					holder, expires = o, now.Add(ttl)
					if l.Epoch != epoch {
						rt.Fatalf("epoch %d, model %d", l.Epoch, epoch)
					}
					last[o] = l
				}
			case 2:
				l, have := last[o]
				if !have {
					continue
				}
				mine := holder == o && l.Epoch == epoch
				nl, err := s.RenewLease(ctx, l, now, ttl)
				if mine != (err == nil) || err != nil && !errors.Is(err, store.ErrLeaseLost) {
					rt.Fatalf("renew by %s epoch %d (holder %q epoch %d): %v", o, l.Epoch, holder, epoch, err)
				}
				if err == nil {
					expires = now.Add(ttl)
					last[o] = nl
				}
			case 3:
				l, have := last[o]
				if !have {
					continue
				}
				mine := holder == o && l.Epoch == epoch
				err := s.ReleaseLease(ctx, l)
				if mine != (err == nil) || err != nil && !errors.Is(err, store.ErrLeaseLost) {
					rt.Fatalf("release by %s epoch %d (holder %q epoch %d): %v", o, l.Epoch, holder, epoch, err)
				}
				if err == nil {
					holder = ""
				}
			case 4:
				l, have := last[o]
				if !have {
					continue
				}
				mine := holder == o && l.Epoch == epoch
				_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: rev, Lease: l.Ref(), Events: []store.Event{{Type: "x"}}})
				if mine != (err == nil) || err != nil && !errors.Is(err, store.ErrLeaseLost) {
					rt.Fatalf("commit by %s epoch %d (holder %q epoch %d): %v", o, l.Epoch, holder, epoch, err)
				}
				if err == nil {
					rev++
				}
			}
			got := ok(s.GetLease(ctx, r.ID))(t)
			if got.Owner != holder || got.Epoch != epoch || holder != "" && !got.Expires.Equal(expires) {
				rt.Fatalf("lease %+v, model holder %q epoch %d until %v", got, holder, epoch, expires)
			}
		}
	})
}

// testLeaseCommitVsTakeover: the holder commits as fast as it can while,
// on the other store, a claimant takes the expired lease over, reads the
// run and commits at the revision it read. No commit of the old holder
// may land after the takeover: the new holder's commit never conflicts,
// and every commit the old holder was told succeeded is in the run.
func testLeaseCommitVsTakeover(t *testing.T, s1, s2 store.Store) {
	for round := 0; round < 5; round++ {
		r := newRun(t, s1)
		a := ok(s1.AcquireLease(ctx, r.ID, "A", t0, ttl))(t)
		var wg sync.WaitGroup
		var done int64
		var aErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			rev := r.Rev
			for {
				_, err := s1.Commit(ctx, store.Commit{RunID: r.ID, Rev: rev, Lease: a.Ref(), Events: []store.Event{{Type: "a"}}})
				if errors.Is(err, store.ErrLeaseLost) {
					return
				}
				if err != nil {
					aErr = err
					return
				}
				rev++
				done++
				// A driver works between commits. Without a pause, on
				// SQLite, a process committing back to back starves
				// another process's writer beyond its busy timeout.
				time.Sleep(time.Millisecond)
			}
		}()
		time.Sleep(time.Duration(round) * 5 * time.Millisecond)
		b := ok(s2.AcquireLease(ctx, r.ID, "B", t0.Add(ttl), ttl))(t)
		cur := ok(s2.GetRun(ctx, r.ID))(t)
		if _, err := s2.Commit(ctx, store.Commit{RunID: r.ID, Rev: cur.Rev, Lease: b.Ref(), Events: []store.Event{{Type: "b"}}}); err != nil {
			t.Fatalf("round %d: the new holder's commit: %v", round, err)
		}
		wg.Wait() // the old holder's next commit is refused
		if aErr != nil {
			t.Fatalf("round %d: old holder: %v", round, aErr)
		}
		got := ok(s1.GetRun(ctx, r.ID))(t)
		if got.Rev != r.Rev+done+1 {
			t.Fatalf("round %d: rev %d after %d commits of the old holder and one of the new", round, got.Rev, done)
		}
	}
}

// testLeaseInWrites: CreateRun (Run.Lease) and Commit (Commit.Acquire)
// take the lease in the transaction that makes the run runnable; a write
// that fails takes nothing, and a lease held by another fails the write.
func testLeaseInWrites(t *testing.T, s store.Store) {
	v := seedVersion(t, s)
	bad := store.Run{ID: fmt.Sprintf("run-%d", runCounter.Add(1)), Workflow: "wf", Version: v, Status: store.StatusRunning, Lease: &store.Lease{Expires: t0}}
	if _, err := s.CreateRun(ctx, bad, nil); !errors.Is(err, store.ErrInvalidLease) {
		t.Fatalf("create with an ownerless lease: %v", err)
	}
	if _, err := s.GetRun(ctx, bad.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused create left the run: %v", err)
	}
	r := store.Run{ID: fmt.Sprintf("run-%d", runCounter.Add(1)), Workflow: "wf", Version: v, Status: store.StatusPending, Lease: &store.Lease{Owner: "A", Epoch: 7, Expires: t0.Add(ttl)}}
	res := ok(s.CreateRun(ctx, r, []store.Event{{Type: "run.created"}}))(t)
	if res.Lease != (store.Lease{RunID: r.ID, Owner: "A", Epoch: 1, Expires: t0.Add(ttl)}) {
		t.Fatalf("created with lease %+v", res.Lease)
	}
	wantLease(t, s, r.ID, "A", 1, t0.Add(ttl))
	if got := ok(s.ClaimRuns(ctx, "B", t0, ttl, store.ClaimFilter{}, 10))(t); len(got) != 0 {
		t.Fatalf("claimed a run created leased: %+v", got)
	}
	a := res.Lease
	if res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 1, Lease: a.Ref()}))(t); res.Lease != (store.Lease{}) {
		t.Fatalf("a commit without Acquire reported lease %+v", res.Lease)
	}

	// Acquire while A holds it: refused, nothing written.
	_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2, Acquire: &store.LeaseRequest{Owner: "B", Now: t0, TTL: ttl},
		Run: store.RunUpdate{Status: store.StatusRunning}, Events: []store.Event{{Type: "x"}}})
	wantHeld(t, err, "A", t0.Add(ttl))
	if got := ok(s.GetRun(ctx, r.ID))(t); got.Rev != 2 || got.Status != store.StatusPending || got.EventSeq != 1 {
		t.Fatalf("a refused acquiring commit changed the run: %+v", got)
	}
	// A conflicting commit acquires nothing.
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 1, Acquire: &store.LeaseRequest{Owner: "B", Now: t0.Add(ttl), TTL: ttl}})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale acquiring commit: %v", err)
	}
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2, EventSeq: 1, Acquire: &store.LeaseRequest{Owner: "B", Now: t0.Add(ttl), TTL: ttl},
		ClosePause: &store.PauseClose{Seq: 9, Status: store.PauseAnswered}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("acquiring commit closing a missing pause: %v", err)
	}
	wantLease(t, s, r.ID, "A", 1, t0.Add(ttl))

	// After expiry B acquires it with its commit; A is fenced off.
	for _, seq := range []int64{0, 1} {
		res = ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 2 + seq, EventSeq: seq, Acquire: &store.LeaseRequest{Owner: "B", Now: t0.Add(ttl), TTL: ttl},
			Run: store.RunUpdate{Status: store.StatusRunning}, Events: []store.Event{{Type: "run.resumed"}}}))(t)
		if want := (store.Lease{RunID: r.ID, Owner: "B", Epoch: 2 + seq, Expires: t0.Add(2 * ttl), TookOver: seq == 0}); res.Lease != want || res.Rev != 3+seq {
			t.Fatalf("acquiring commit: %+v, want lease %+v", res, want)
		}
	}
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 4, Lease: a.Ref()})
	wantLost(t, err, "commit by the holder an acquiring commit superseded")
	// Fenced and acquiring: the holder starts a new holding.
	b := res.Lease
	res = ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 4, Lease: b.Ref(), Acquire: &store.LeaseRequest{Owner: "B", Now: t0.Add(ttl), TTL: ttl}}))(t)
	if res.Lease.Epoch != 4 {
		t.Fatalf("re-acquiring commit: %+v", res)
	}
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 5, Lease: b.Ref(), Acquire: &store.LeaseRequest{Owner: "B", Now: t0.Add(ttl), TTL: ttl}})
	wantLost(t, err, "acquiring commit under a superseded epoch")
	if _, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: 5, Acquire: &store.LeaseRequest{Owner: "", Now: t0, TTL: ttl}}); !errors.Is(err, store.ErrInvalidLease) {
		t.Fatalf("acquiring commit without an owner: %v", err)
	}
	wantLease(t, s, r.ID, "B", 4, t0.Add(2*ttl))
}

// testLeaseTookOver: an acquisition says whether it took the lease from
// another owner that never released it (a holder that stopped).
func testLeaseTookOver(t *testing.T, s store.Store) {
	r := newRun(t, s)
	a := ok(s.AcquireLease(ctx, r.ID, "A", t0, ttl))(t)
	if a.TookOver {
		t.Fatalf("first acquisition took over: %+v", a)
	}
	if a2 := ok(s.AcquireLease(ctx, r.ID, "A", t0, ttl))(t); a2.TookOver {
		t.Fatalf("the same owner took over from itself: %+v", a2)
	} else {
		a = a2
	}
	b := ok(s.AcquireLease(ctx, r.ID, "B", a.Expires, ttl))(t)
	if !b.TookOver {
		t.Fatalf("acquired an expired, unreleased lease without taking over: %+v", b)
	}
	if err := s.ReleaseLease(ctx, b); err != nil {
		t.Fatal(err)
	}
	if c := ok(s.AcquireLease(ctx, r.ID, "C", b.Expires, ttl))(t); c.TookOver {
		t.Fatalf("a released lease was taken over: %+v", c)
	} else {
		b = c
	}
	// Claims say it too; and Commit.Acquire.
	got := ok(s.ClaimRuns(ctx, "D", b.Expires, ttl, store.ClaimFilter{}, 10))(t)
	if len(got) != 1 || !got[0].TookOver {
		t.Fatalf("claim of an expired lease %+v", got)
	}
	if err := s.ReleaseLease(ctx, got[0]); err != nil {
		t.Fatal(err)
	}
	got = ok(s.ClaimRuns(ctx, "E", b.Expires, ttl, store.ClaimFilter{}, 10))(t)
	if len(got) != 1 || got[0].TookOver {
		t.Fatalf("claim of a released lease %+v", got)
	}
	res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Acquire: &store.LeaseRequest{Owner: "F", Now: got[0].Expires, TTL: ttl}}))(t)
	if !res.Lease.TookOver || res.Lease.Owner != "F" {
		t.Fatalf("commit's acquisition %+v", res.Lease)
	}
}

// testTakeOverLease: a holding named exactly is taken, expired or not;
// any other is not.
func testTakeOverLease(t *testing.T, s store.Store) {
	r := newRun(t, s)
	a := ok(s.AcquireLease(ctx, r.ID, "A", t0, time.Hour))(t)
	stale := a
	stale.Epoch--
	_, err := s.TakeOverLease(ctx, stale, "B", t0, ttl)
	wantLost(t, err, "take over from a holding that is not the run's")
	other := a
	other.Owner = "Z"
	_, err = s.TakeOverLease(ctx, other, "B", t0, ttl)
	wantLost(t, err, "take over from another owner")
	b := ok(s.TakeOverLease(ctx, a, "B", t0, ttl))(t)
	if !b.TookOver || b.Owner != "B" || b.Epoch != a.Epoch+1 || !b.Expires.Equal(t0.Add(ttl)) {
		t.Fatalf("took over %+v", b)
	}
	wantLease(t, s, r.ID, "B", b.Epoch, t0.Add(ttl))
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Lease: a.Ref()})
	wantLost(t, err, "commit by the holder taken over")
	_, err = s.TakeOverLease(ctx, a, "C", t0, ttl)
	wantLost(t, err, "second take over from the same holding")
	if _, err := s.TakeOverLease(ctx, store.Lease{RunID: "missing", Owner: "A", Epoch: 1}, "B", t0, ttl); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("take over on a missing run: %v", err)
	}
	if _, err := s.TakeOverLease(ctx, b, "", t0, ttl); !errors.Is(err, store.ErrInvalidLease) {
		t.Errorf("empty owner: %v", err)
	}
}

// testClaimReady: a ready claim takes the runs a driver has work for.
func testClaimReady(t *testing.T, s store.Store) {
	now := t0.Add(time.Minute)
	mk := func(status string, timers ...time.Time) string {
		r := newRun(t, s, func(r *store.Run) { r.Status = status })
		if len(timers) > 0 {
			c := store.Commit{RunID: r.ID, Rev: r.Rev}
			for i, at := range timers {
				c.SetTimers = append(c.SetTimers, store.Timer{Key: fmt.Sprintf("k%d", i), WakeAt: at})
			}
			ok(s.Commit(ctx, c))(t)
		}
		return r.ID
	}
	want := map[string]bool{
		mk(store.StatusPending):                                            true,
		mk(store.StatusRunning):                                            true,
		mk(store.StatusRunning, now.Add(time.Second)):                      false, // parked on a sleep
		mk(store.StatusRunning, now):                                       true,  // its sleep is due
		mk(store.StatusRunning, now.Add(-time.Second), now.Add(time.Hour)): true,  // one of its wake-ups is due
		mk(store.StatusWaiting):                                            false,
		mk(store.StatusWaiting, now.Add(time.Hour)):                        false,
		mk(store.StatusWaiting, now.Add(-time.Second)):                     true, // a timeout or deadline to fire
		mk(store.StatusPaused, now.Add(-time.Second)):                      false,
		mk(store.StatusSucceeded, now.Add(-time.Second)):                   true, // a stale wake-up to clear
		mk(store.StatusSucceeded):                                          false,
		mk(store.StatusFailed):                                             false,
	}
	held := mk(store.StatusRunning)
	ok(s.AcquireLease(ctx, held, "H", now, time.Hour))(t)
	got := ok(s.ClaimRuns(ctx, "C", now, ttl, store.ClaimFilter{Ready: true}, 100))(t)
	ids := leaseIDs(got)
	for id, ready := range want {
		if (ids[id] == 1) != ready {
			t.Errorf("run %s: claimed %d times, want ready=%v", id, ids[id], ready)
		}
	}
	if ids[held] != 0 {
		t.Errorf("claimed a run leased to another owner")
	}
	if again := ok(s.ClaimRuns(ctx, "D", now, ttl, store.ClaimFilter{Ready: true}, 100))(t); len(again) != 0 {
		t.Errorf("claimed leased runs again: %+v", again)
	}
}

// testLeaseReleaseInCommit: a commit releases the lease it is fenced by,
// or acquires, in its own transaction; refused or failed, it releases
// nothing.
func testLeaseReleaseInCommit(t *testing.T, s store.Store) {
	r := newRun(t, s)
	a := ok(s.AcquireLease(ctx, r.ID, "A", t0, ttl))(t)
	if _, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Release: true}); !errors.Is(err, store.ErrInvalidLease) {
		t.Fatalf("release without a lease: %v", err)
	}
	stale := a
	stale.Epoch--
	_, err := s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Lease: stale.Ref(), Release: true})
	wantLost(t, err, "release by a stale epoch")
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev + 5, Lease: a.Ref(), Release: true})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale revision: %v", err)
	}
	wantLease(t, s, r.ID, "A", a.Epoch, a.Expires)
	ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev, Lease: a.Ref(), Release: true,
		Run: store.RunUpdate{Status: store.StatusWaiting}, Events: []store.Event{{Type: "paused"}}}))(t)
	wantLease(t, s, r.ID, "", a.Epoch, time.Time{})
	_, err = s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev + 1, Lease: a.Ref()})
	wantLost(t, err, "commit after the release")
	// Acquired and released in one commit: free, at a new epoch.
	res := ok(s.Commit(ctx, store.Commit{RunID: r.ID, Rev: r.Rev + 1, Acquire: &store.LeaseRequest{Owner: "B", Now: t0, TTL: ttl}, Release: true,
		Events: []store.Event{{Type: "answered and paused again"}}}))(t)
	if res.Lease.Owner != "B" || res.Lease.Epoch != a.Epoch+1 {
		t.Fatalf("acquired %+v", res.Lease)
	}
	wantLease(t, s, r.ID, "", a.Epoch+1, time.Time{})
}

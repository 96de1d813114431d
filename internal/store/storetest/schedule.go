package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// scheduleTests are the schedule cases on one store (part of Run); they
// run on the stores that implement store.ScheduleStore.
var scheduleTests = []struct {
	name string
	fn   func(*testing.T, store.Store)
}{
	{"SchedulesSyncClaimPause", testSchedules},
	{"WebhookDeliveriesReplayWindow", testDeliveries},
	{"ScheduleFiringsBounded", testFiringsBounded},
}

func scheduleStore(t *testing.T, s store.Store) store.ScheduleStore {
	ss, ok := s.(store.ScheduleStore)
	if !ok {
		t.Skip("the store keeps no schedules")
	}
	return ss
}

func testSchedules(t *testing.T, s store.Store) {
	ss := scheduleStore(t, s)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	a := store.Schedule{Key: "wf#0", Workflow: "wf", Trigger: 0, Spec: `{"every":"1m"}`, NextFire: t0}
	b := store.Schedule{Key: "wf#1", Workflow: "wf", Trigger: 1, Spec: `{"every":"1h"}`, NextFire: t0.Add(time.Hour)}
	if err := ss.SyncSchedules(ctx, "wf", []store.Schedule{a, b}); err != nil {
		t.Fatal(err)
	}
	if err := ss.ClaimFiring(ctx, a.Key, t0, t0.Add(time.Minute), []time.Time{t0}); err != nil {
		t.Fatal(err)
	}
	// The same instant again: the schedule has moved on.
	if err := ss.ClaimFiring(ctx, a.Key, t0, t0.Add(time.Minute), []time.Time{t0}); !errors.Is(err, store.ErrFiringTaken) {
		t.Fatalf("second claim: %v, want ErrFiringTaken", err)
	}
	if err := ss.RecordFiringRun(ctx, a.Key, t0, "run-1"); err != nil {
		t.Fatal(err)
	}
	// Syncing the same spec keeps the state; a changed one starts afresh;
	// one left out is removed.
	a2 := a
	a2.NextFire = t0.Add(24 * time.Hour)
	if err := ss.SyncSchedules(ctx, "wf", []store.Schedule{a2}); err != nil {
		t.Fatal(err)
	}
	list, err := ss.ListSchedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != a.Key || !list[0].NextFire.Equal(t0.Add(time.Minute)) || !list[0].LastFired.Equal(t0) || list[0].LastRunID != "run-1" {
		t.Fatalf("after a sync of the same spec: %+v", list)
	}
	f, err := ss.Firings(ctx, a.Key, 10)
	if err != nil || len(f) != 1 || f[0].RunID != "run-1" || !f[0].At.Equal(t0) {
		t.Fatalf("firings = %+v, %v", f, err)
	}
	a2.Spec = `{"every":"2m"}`
	if err := ss.SyncSchedules(ctx, "wf", []store.Schedule{a2}); err != nil {
		t.Fatal(err)
	}
	if list, _ = ss.ListSchedules(ctx); len(list) != 1 || !list[0].NextFire.Equal(a2.NextFire) || !list[0].LastFired.IsZero() {
		t.Fatalf("after a changed spec: %+v", list)
	}
	if f, err := ss.Firings(ctx, a.Key, 10); err != nil || len(f) != 0 {
		t.Fatalf("firings of a changed schedule: %+v, %v; want none", f, err)
	}
	// Paused: no claim; resumed at a new instant.
	if err := ss.SetSchedulePaused(ctx, a.Key, true, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := ss.ClaimFiring(ctx, a.Key, a2.NextFire, a2.NextFire.Add(time.Minute), []time.Time{a2.NextFire}); !errors.Is(err, store.ErrFiringTaken) {
		t.Fatalf("claim of a paused schedule: %v", err)
	}
	later := a2.NextFire.Add(time.Hour)
	if err := ss.SetSchedulePaused(ctx, a.Key, false, later); err != nil {
		t.Fatal(err)
	}
	if list, _ = ss.ListSchedules(ctx); len(list) != 1 || list[0].Paused || !list[0].NextFire.Equal(later) {
		t.Fatalf("after resume: %+v", list)
	}
	if err := ss.SetSchedulePaused(ctx, "nope#0", true, time.Time{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pause of no schedule: %v", err)
	}
	if err := ss.SyncSchedules(ctx, "wf", nil); err != nil {
		t.Fatal(err)
	}
	if list, _ = ss.ListSchedules(ctx); len(list) != 0 {
		t.Fatalf("after removing: %+v", list)
	}
}

// testFiringsBounded claims more firings than a store keeps: the newest
// MaxFirings stay.
func testFiringsBounded(t *testing.T, s store.Store) {
	ss := scheduleStore(t, s)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	if err := ss.SyncSchedules(ctx, "busy", []store.Schedule{{Key: "busy#0", Workflow: "busy", Spec: "x", NextFire: t0}}); err != nil {
		t.Fatal(err)
	}
	next := t0
	total := store.MaxFirings + 100
	for done := 0; done < total; done += 100 {
		at := make([]time.Time, 100)
		for i := range at {
			at[i] = t0.Add(time.Duration(done+i) * time.Second)
		}
		after := at[99].Add(time.Second)
		if err := ss.ClaimFiring(ctx, "busy#0", next, after, at); err != nil {
			t.Fatal(err)
		}
		next = after
	}
	f, err := ss.Firings(ctx, "busy#0", 0)
	if err != nil {
		t.Fatal(err)
	}
	oldest := t0.Add(time.Duration(total-store.MaxFirings) * time.Second)
	if len(f) != store.MaxFirings || !f[len(f)-1].At.Equal(oldest) {
		t.Fatalf("%d firings kept, oldest %v; want %d from %s", len(f), f[len(f)-1].At, store.MaxFirings, oldest)
	}
}

func testDeliveries(t *testing.T, s store.Store) {
	ss := scheduleStore(t, s)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		hook, id string
		at       time.Time
		seen     bool
	}{
		{"intake", "d1", t0, false},
		{"intake", "d1", t0.Add(time.Hour), true},
		{"other", "d1", t0.Add(time.Hour), false},
		{"intake", "d1", t0.Add(25 * time.Hour), false}, // past the window
	} {
		seen, err := ss.SeenDelivery(ctx, tc.hook, tc.id, tc.at, 24*time.Hour)
		if err != nil || seen != tc.seen {
			t.Fatalf("%s %s at %s: seen %v, %v; want %v", tc.hook, tc.id, tc.at, seen, err, tc.seen)
		}
	}
}

// testScheduleClaimRace has claimants on two stores race for the same
// instants: each instant is claimed exactly once.
func testScheduleClaimRace(t *testing.T, a, b store.Store) {
	sa, sb := scheduleStore(t, a), scheduleStore(t, b)
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	if err := sa.SyncSchedules(ctx, "race", []store.Schedule{{Key: "race#0", Workflow: "race", Spec: "x", NextFire: t0}}); err != nil {
		t.Fatal(err)
	}
	const instants, claimants = 20, 4
	var mu sync.Mutex
	won := map[time.Time]int{}
	var wg sync.WaitGroup
	for c := range claimants {
		ss := sa
		if c%2 == 1 {
			ss = sb
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range instants {
				at := t0.Add(time.Duration(i) * time.Second)
				err := ss.ClaimFiring(ctx, "race#0", at, at.Add(time.Second), []time.Time{at})
				if err == nil {
					mu.Lock()
					won[at]++
					mu.Unlock()
				} else if !errors.Is(err, store.ErrFiringTaken) && !errors.Is(err, store.ErrUnavailable) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	for at, n := range won {
		if n != 1 {
			t.Errorf("instant %s claimed %d times", at, n)
		}
	}
	f, err := sa.Firings(ctx, "race#0", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(f) != len(won) {
		t.Fatalf("%d firings recorded, %d claims won", len(f), len(won))
	}
}

package service

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/postgres/pgtest"
)

func scheduledWorkflow(name, schedule string) string {
	return "version: 1\nname: " + name + "\ninputs:\n  who: {type: string}\nsteps:\n  - id: a\n    uses: log\n    with: {message: hi}\n" +
		"triggers:\n  - schedule: " + schedule + "\n"
}

func openScheduleService(t *testing.T, home string, clk *clock) *Service {
	t.Helper()
	return openScheduleServiceOn(t, home, "", clk)
}

// openScheduleServiceOn opens a service on db ("": the home's SQLite).
func openScheduleServiceOn(t *testing.T, home, db string, clk *clock) *Service {
	t.Helper()
	svc, err := Open(context.Background(), Options{Home: home, Database: db, Durability: "normal", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	// The loop's own tick never comes: the test fires by the fake clock.
	stop, err := svc.StartScheduler(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(); svc.Close(context.Background()) })
	return svc
}

func save(t *testing.T, svc *Service, content string) {
	t.Helper()
	if _, err := svc.SaveWorkflow(context.Background(), SaveRequest{Content: content, Overwrite: true}); err != nil {
		t.Fatal(err)
	}
}

// An every: 2s schedule fires 3 times in 7.5 s of the fake clock, each
// firing a run of the workflow with the schedule's inputs, and stops when
// the workflow is deleted.
func TestEveryScheduleFiresAndStopsWhenDeleted(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	svc := openScheduleService(t, t.TempDir(), clk)
	save(t, svc, scheduledWorkflow("tick", "{every: 2s, inputs: {who: clock}}"))
	list, err := svc.ListSchedules(ctx)
	if err != nil || len(list) != 1 || list[0].Key != "tick#0" || !list[0].NextFire.Equal(clk.Now().Add(2*time.Second)) {
		t.Fatalf("schedules after save: %+v, %v", list, err)
	}
	var fired []Firing
	for range 30 { // 30 × 250ms = 7.5s
		clk.add(250 * time.Millisecond)
		f, err := svc.FireDueSchedules(ctx)
		if err != nil {
			t.Fatal(err)
		}
		fired = append(fired, f...)
	}
	if len(fired) < 3 || len(fired) > 4 {
		t.Fatalf("%d firings in 7.5s, want 3–4: %+v", len(fired), fired)
	}
	for _, f := range fired {
		if f.RunID == "" {
			t.Fatalf("firing without a run: %+v", f)
		}
		if st, err := svc.Wait(ctx, f.RunID, 10*time.Second); err != nil || st != "succeeded" {
			t.Fatalf("run %s: %s %v", f.RunID, st, err)
		}
		v, err := svc.GetRun(ctx, f.RunID)
		if err != nil || v.Workflow != "tick" || fmt.Sprint(v.Inputs["who"]) != "clock" {
			t.Fatalf("run %s: %+v %v", f.RunID, v, err)
		}
	}
	if list, _ = svc.ListSchedules(ctx); list[0].LastRunID != fired[len(fired)-1].RunID {
		t.Fatalf("last run recorded %q, want %q", list[0].LastRunID, fired[len(fired)-1].RunID)
	}
	if _, err := svc.DeleteWorkflow(ctx, "tick", false, ""); err != nil {
		t.Fatal(err)
	}
	if list, _ = svc.ListSchedules(ctx); len(list) != 0 {
		t.Fatalf("schedules after delete: %+v", list)
	}
	for range 10 {
		clk.add(time.Second)
		if f, err := svc.FireDueSchedules(ctx); err != nil || len(f) != 0 {
			t.Fatalf("fired after delete: %+v %v", f, err)
		}
	}
}

// After a restart 6h05m later, an every: 10m schedule follows catch_up:
// none fires nothing (its latest instant is 5m late), last fires once
// for the latest instant, all fires each of the 36 missed instants.
func TestScheduleCatchUpAfterRestart(t *testing.T) {
	ctx := context.Background()
	for policy, want := range map[string]int{"none": 0, "last": 1, "all": 36} {
		t.Run(policy, func(t *testing.T) {
			home := t.TempDir()
			t0 := time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)
			clk := &clock{t: t0}
			first, err := Open(ctx, Options{Home: home, Durability: "normal", Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			stop, err := first.StartScheduler(time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			save(t, first, scheduledWorkflow("batch", "{every: 10m, catch_up: "+policy+", inputs: {who: night}}"))
			stop()
			first.Close(ctx)

			clk.add(6*time.Hour + 5*time.Minute)
			svc := openScheduleService(t, home, clk)
			fired, err := svc.FireDueSchedules(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(fired) != want {
				t.Fatalf("%d firings, want %d", len(fired), want)
			}
			if policy == "last" && !fired[0].At.Equal(t0.Add(6*time.Hour)) {
				t.Fatalf("fired for %s, want the latest instant %s", fired[0].At, t0.Add(6*time.Hour))
			}
			list, _ := svc.ListSchedules(ctx)
			if len(list) != 1 || !list[0].NextFire.Equal(t0.Add(6*time.Hour+10*time.Minute)) {
				t.Fatalf("next fire after catching up: %+v", list)
			}
			if again, _ := svc.FireDueSchedules(ctx); len(again) != 0 {
				t.Fatalf("fired again at the same time: %+v", again)
			}
		})
	}
}

// Two services on one home's SQLite file (two processes on one home) or
// on one PostgreSQL database (replicas) fire each instant of a schedule
// exactly once between them.
func TestTwoReplicasNeverFireAnInstantTwice(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		home := t.TempDir()
		testReplicasFireOnce(t, home, home, "")
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv("STEPWISE_TEST_DATABASE_URL") == "" {
			t.Skip("STEPWISE_TEST_DATABASE_URL is not set")
		}
		testReplicasFireOnce(t, t.TempDir(), t.TempDir(), pgtest.Schema(t))
	})
}

func testReplicasFireOnce(t *testing.T, homeA, homeB, db string) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	a := openScheduleServiceOn(t, homeA, db, clk)
	b := openScheduleServiceOn(t, homeB, db, clk)
	save(t, a, scheduledWorkflow("both", "{every: 1s, inputs: {who: pair}}"))
	if err := b.SyncSchedules(ctx, "both"); err != nil { // b's periodic sync: keeps a's state
		t.Fatal(err)
	}
	count := map[time.Time]int{}
	var mu sync.Mutex
	for range 20 {
		clk.add(time.Second)
		var wg sync.WaitGroup
		for _, svc := range []*Service{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, err := svc.FireDueSchedules(ctx)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				for _, x := range f {
					if x.RunID == "" {
						t.Errorf("firing without a run: %+v", x)
					}
					count[x.At]++
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	if len(count) != 20 {
		t.Fatalf("%d instants fired, want 20", len(count))
	}
	for at, n := range count {
		if n != 1 {
			t.Fatalf("instant %s fired %d times", at, n)
		}
	}
}

// A cron schedule in Europe/Paris saved before the spring change fires
// at 09:00 Paris time on both sides of it.
func TestCronScheduleAcrossDST(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 28, 10, 0, 0, 0, paris)}
	svc := openScheduleService(t, t.TempDir(), clk)
	save(t, svc, scheduledWorkflow("morning", `{cron: "0 9 * * *", timezone: Europe/Paris, inputs: {who: paris}}`))
	for _, want := range []time.Time{time.Date(2026, 3, 29, 9, 0, 0, 0, paris), time.Date(2026, 3, 30, 9, 0, 0, 0, paris)} {
		list, _ := svc.ListSchedules(ctx)
		if len(list) != 1 || !list[0].NextFire.Equal(want) {
			t.Fatalf("next fire %+v, want %s", list, want)
		}
		clk.set(want.Add(time.Second))
		f, err := svc.FireDueSchedules(ctx)
		if err != nil || len(f) != 1 || !f[0].At.Equal(want) {
			t.Fatalf("firing at %s: %+v %v", want, f, err)
		}
	}
}

// A paused schedule does not fire; resumed, it fires from its next
// instant after now.
func TestSchedulePauseResume(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	svc := openScheduleService(t, t.TempDir(), clk)
	save(t, svc, scheduledWorkflow("held", "{every: 1m, inputs: {who: x}}"))
	if _, err := svc.PauseSchedule(ctx, "held#0", true); err != nil {
		t.Fatal(err)
	}
	clk.add(5 * time.Minute)
	if f, _ := svc.FireDueSchedules(ctx); len(f) != 0 {
		t.Fatalf("a paused schedule fired: %+v", f)
	}
	info, err := svc.PauseSchedule(ctx, "held#0", false)
	if err != nil || info.Paused || !info.NextFire.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("resumed: %+v %v", info, err)
	}
	if _, err := svc.PauseSchedule(ctx, "nope#0", true); errorCode(err) != CodeScheduleNotFound {
		t.Fatalf("pause of no schedule: %v", err)
	}
}

// The scheduler's own loop fires what is due at each tick, and Close
// stops it.
func TestSchedulerLoopFires(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	svc, err := Open(ctx, Options{Home: t.TempDir(), Durability: "normal", Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(ctx)
	if _, err := svc.StartScheduler(5 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	save(t, svc, scheduledWorkflow("looped", "{every: 1h, inputs: {who: loop}}"))
	clk.add(time.Hour)
	eventually(t, "the loop fires the due schedule", func() bool {
		list, err := svc.ListSchedules(ctx)
		return err == nil && len(list) == 1 && list[0].LastRunID != ""
	})
	runs, _, err := svc.ListRuns(ctx, RunFilter{Workflow: "looped"})
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs of the schedule: %d, %v; want 1", len(runs), err)
	}
}

// Renaming a workflow moves its schedules to the new name at once;
// changing its schedule starts it afresh.
func TestScheduleFollowsRenameAndEdit(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	svc := openScheduleService(t, t.TempDir(), clk)
	save(t, svc, scheduledWorkflow("before", "{every: 1h, inputs: {who: x}}"))
	if _, err := svc.RenameWorkflow(ctx, "before", "after", ""); err != nil {
		t.Fatal(err)
	}
	list, err := svc.ListSchedules(ctx)
	if err != nil || len(list) != 1 || list[0].Key != "after#0" || list[0].Workflow != "after" {
		t.Fatalf("after rename: %+v %v", list, err)
	}
	clk.add(10 * time.Minute)
	save(t, svc, scheduledWorkflow("after", "{every: 2h, inputs: {who: x}}"))
	if list, _ = svc.ListSchedules(ctx); len(list) != 1 || list[0].Every != "2h" || !list[0].NextFire.Equal(clk.Now().Add(2*time.Hour)) {
		t.Fatalf("after edit: %+v", list)
	}
}

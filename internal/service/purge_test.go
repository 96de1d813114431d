package service

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// clock is a settable clock the engine and the retention policy share.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// purgeLibrary writes the workflows of the purge tests into a home's
// library: quick finishes at once, broken fails, parent runs kid as a
// sub-workflow, ask waits for a person.
func purgeLibrary(t *testing.T, home string) {
	t.Helper()
	lib := filepath.Join(home, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string]string{
		"quick":  "version: 1\nname: quick\nsteps:\n  - id: a\n    uses: noop\n",
		"broken": "version: 1\nname: broken\nsteps:\n  - id: a\n    uses: noop\n    with: {fail: boom}\n",
		"kid":    "version: 1\nname: kid\nsteps:\n  - id: k\n    uses: noop\n",
		"parent": "version: 1\nname: parent\nsteps:\n  - id: sub\n    workflow: kid\n  - id: after\n    uses: noop\n",
		"ask":    "version: 1\nname: ask\nsteps:\n  - id: q\n    ask: {prompt: Name?}\n",
	} {
		if err := os.WriteFile(filepath.Join(lib, name+".yaml"), []byte(def), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func openPurgeService(t *testing.T, home string, opts Options) *Service {
	t.Helper()
	opts.Home, opts.Durability = home, "normal"
	svc, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc
}

// start runs a library workflow until it finishes or waits.
func start(t *testing.T, svc *Service, name, want string) string {
	t.Helper()
	ctx := context.Background()
	l, err := svc.LoadWorkflow(name)
	if err != nil {
		t.Fatal(err)
	}
	id, err := svc.StartRun(ctx, l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.Wait(ctx, id, 30*time.Second)
	if err != nil || st != want {
		t.Fatalf("run %s of %s: %s %v, want %s", id, name, st, err, want)
	}
	return id
}

func gone(t *testing.T, svc *Service, id string) bool {
	t.Helper()
	_, err := svc.GetRun(context.Background(), id)
	if err == nil {
		return false
	}
	if engine.CodeOf(err) != engine.CodeRunNotFound {
		t.Fatalf("get run %s: %v", id, err)
	}
	return true
}

func TestPurgeRuns(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	purgeLibrary(t, home)
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	svc := openPurgeService(t, home, Options{Now: clk.Now})

	oldQuick := start(t, svc, "quick", store.StatusSucceeded)
	oldBroken := start(t, svc, "broken", store.StatusFailed)
	oldParent := start(t, svc, "parent", store.StatusSucceeded)
	v, err := svc.GetRun(ctx, oldParent)
	if err != nil || len(v.Children) != 1 {
		t.Fatalf("parent run: %+v %v", v, err)
	}
	oldKid := strings.Fields(v.Children[0])[0]
	waiting := start(t, svc, "ask", store.StatusWaiting)
	clk.add(40 * 24 * time.Hour)
	recent := start(t, svc, "quick", store.StatusSucceeded)

	for _, f := range []PurgeFilter{{Status: []string{store.StatusWaiting}}, {Status: []string{"done"}}, {OlderThan: -time.Hour}} {
		res, err := svc.PurgeRuns(ctx, f)
		if engine.CodeOf(err) != CodeFilterInvalid || res != (store.PurgeResult{}) {
			t.Errorf("filter %+v: %+v %v", f, res, err)
		}
	}

	// Finished more than 30 days ago: the old quick, broken and parent
	// runs, the parent's child with it.
	dry, err := svc.PurgeRuns(ctx, PurgeFilter{OlderThan: 30 * 24 * time.Hour, DryRun: true})
	if err != nil || dry.Runs != 4 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	if gone(t, svc, oldQuick) {
		t.Fatal("a dry run deleted")
	}
	res, err := svc.PurgeRuns(ctx, PurgeFilter{OlderThan: 30 * 24 * time.Hour})
	if err != nil || res != dry {
		t.Fatalf("purge: %+v %v, dry run said %+v", res, err, dry)
	}
	// quick's version stays (the recent run uses it); broken's, parent's
	// and kid's go.
	if res.Versions != 3 || res.Steps < 5 || res.Events < 10 {
		t.Errorf("counts %+v", res)
	}
	for _, id := range []string{oldQuick, oldBroken, oldParent, oldKid} {
		if !gone(t, svc, id) {
			t.Errorf("run %s was not purged", id)
		}
		if _, err := svc.Events(ctx, id, 0, 0); engine.CodeOf(err) != engine.CodeRunNotFound {
			t.Errorf("events of purged run %s: %v", id, err)
		}
	}
	for _, id := range []string{waiting, recent} {
		if gone(t, svc, id) {
			t.Errorf("run %s was purged", id)
		}
	}
	if res, err := svc.PurgeRuns(ctx, PurgeFilter{OlderThan: 30 * 24 * time.Hour}); err != nil || res != (store.PurgeResult{}) {
		t.Fatalf("second purge: %+v %v", res, err)
	}

	// Once canceled, the waiting run can go; a workflow whose versions
	// were purged runs again.
	if err := svc.Cancel(ctx, waiting, "done with it", false); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Wait(ctx, waiting, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if res, err := svc.PurgeRuns(ctx, PurgeFilter{Workflow: "ask", Status: []string{store.StatusCanceled}}); err != nil || res.Runs != 1 || res.Versions != 1 {
		t.Fatalf("purge of the canceled run: %+v %v", res, err)
	}
	again := start(t, svc, "parent", store.StatusSucceeded)
	if gone(t, svc, again) || gone(t, svc, recent) {
		t.Fatal("runs after the purge are missing")
	}
}

// syncBuffer is a log destination the retention goroutine writes to while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// eventually polls cond for up to 30s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
	}
}

func TestRetentionAppliedPeriodically(t *testing.T) {
	home := t.TempDir()
	purgeLibrary(t, home)
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	logs := &syncBuffer{}
	svc := openPurgeService(t, home, Options{Now: clk.Now, Retention: 30 * 24 * time.Hour, MaxRuns: 2,
		RetentionEvery: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	waiting := start(t, svc, "ask", store.StatusWaiting)
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, start(t, svc, "quick", store.StatusSucceeded))
		clk.add(time.Minute)
	}
	// At most 2 finished runs: the newest two stay.
	eventually(t, "the two oldest runs purged by max runs", func() bool { return gone(t, svc, ids[0]) && gone(t, svc, ids[1]) })
	if gone(t, svc, ids[2]) || gone(t, svc, ids[3]) {
		t.Fatal("the newest runs were purged")
	}
	if !strings.Contains(logs.String(), "retention: purged finished runs") {
		t.Errorf("nothing logged:\n%s", logs)
	}
	// Past the retention, the rest go; the waiting run never does.
	clk.add(31 * 24 * time.Hour)
	eventually(t, "the runs older than the retention purged", func() bool { return gone(t, svc, ids[2]) && gone(t, svc, ids[3]) })
	if gone(t, svc, waiting) {
		t.Fatal("a waiting run was purged")
	}
	// Close stops the goroutine: it returns, and the store is not used
	// after.
	done := make(chan error, 1)
	go func() { done <- svc.Close(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// The policy applies once as the service opens, before any tick.
func TestRetentionAppliedAtOpen(t *testing.T) {
	home := t.TempDir()
	purgeLibrary(t, home)
	clk := &clock{t: time.Date(2026, 2, 1, 9, 0, 0, 0, time.UTC)}
	first := openPurgeService(t, home, Options{Now: clk.Now})
	old := start(t, first, "quick", store.StatusSucceeded)
	clk.add(2 * time.Hour)
	young := start(t, first, "quick", store.StatusSucceeded)
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.add(30 * time.Minute)
	svc := openPurgeService(t, home, Options{Now: clk.Now, Retention: time.Hour, RetentionEvery: time.Hour})
	eventually(t, "the old run purged at open", func() bool { return gone(t, svc, old) })
	if gone(t, svc, young) {
		t.Fatal("a run younger than the retention was purged")
	}
	// Applied by hand, the policy finds nothing more.
	if res, err := svc.ApplyRetention(context.Background()); err != nil || res != (store.PurgeResult{}) {
		t.Fatalf("apply: %+v %v", res, err)
	}
}

func TestRetentionRejectsNegativeLimitsAndIsOffByDefault(t *testing.T) {
	for _, o := range []Options{{Retention: -time.Hour}, {MaxRuns: -1}} {
		o.Home = t.TempDir()
		if svc, err := Open(context.Background(), o); err == nil {
			svc.Close(context.Background())
			t.Errorf("options %+v accepted", o)
		}
	}
	home := t.TempDir()
	purgeLibrary(t, home)
	svc := openPurgeService(t, home, Options{})
	id := start(t, svc, "quick", store.StatusSucceeded)
	if svc.stopRetention != nil {
		t.Error("a retention goroutine runs without a policy")
	}
	if res, err := svc.ApplyRetention(context.Background()); err != nil || res != (store.PurgeResult{}) || gone(t, svc, id) {
		t.Fatalf("apply without a policy: %+v %v", res, err)
	}
}

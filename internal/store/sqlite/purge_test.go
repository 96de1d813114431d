package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "purge.db"), Options{Durability: Normal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// finished creates a finished top-level run (with n sub-workflow runs) of
// workflow wf, finished at at.
func finished(t *testing.T, s *Store, id, wf string, at time.Time, children int) {
	t.Helper()
	ctx := context.Background()
	if err := s.PutVersion(ctx, store.Version{Version: "v", Name: "n", Definition: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	mk := func(id, parent string) {
		if _, err := s.CreateRun(ctx, store.Run{ID: id, Workflow: wf, Version: "v", Status: store.StatusRunning, ParentID: parent, CreatedAt: at},
			[]store.Event{{Type: "run.started"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, store.Commit{RunID: id, Rev: 1, Run: store.RunUpdate{Status: store.StatusSucceeded, FinishedAt: at}}); err != nil {
			t.Fatal(err)
		}
	}
	mk(id, "")
	for i := 0; i < children; i++ {
		mk(fmt.Sprintf("%s.%d", id, i), id)
	}
}

// A purge larger than a batch commits batch after batch and still counts
// and spares exactly.
func TestPurgeInBatches(t *testing.T) {
	s := openTemp(t)
	s.purgeBatch = 3
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		finished(t, s, fmt.Sprintf("r%02d", i), "wf", base.Add(time.Duration(i)*time.Minute), i%3)
	}
	ctx := context.Background()
	// 10 roots with 0+1+2+0+1+2+0+1+2+0 = 9 children; keep the newest 2
	// roots (r08 with 2 children, r09 with none).
	dry, err := s.PurgeRuns(ctx, store.PurgeFilter{Keep: 2, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.PurgeRuns(ctx, store.PurgeFilter{Keep: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 8+7 || res.Events != 15 || res.Versions != 0 || res != dry {
		t.Fatalf("purge %+v, dry run %+v", res, dry)
	}
	left, _, err := s.ListRuns(ctx, store.RunFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range left {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, " ") != "r09 r08.1 r08.0 r08" {
		t.Fatalf("left %v", ids)
	}
	// The last runs go in a batch of their own, with the version.
	res, err = s.PurgeRuns(ctx, store.PurgeFilter{})
	if err != nil || res.Runs != 4 || res.Versions != 1 {
		t.Fatalf("purge of the rest: %+v %v", res, err)
	}
}

func TestPurgeStopsWhenCanceled(t *testing.T) {
	s := openTemp(t)
	finished(t, s, "r", "wf", time.Now(), 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := s.PurgeRuns(ctx, store.PurgeFilter{})
	if !errors.Is(err, context.Canceled) || res != (store.PurgeResult{}) {
		t.Fatalf("canceled purge: %+v %v", res, err)
	}
	if _, err := s.GetRun(context.Background(), "r"); err != nil {
		t.Fatalf("a canceled purge deleted: %v", err)
	}
}

// The purge's selection reads top-level runs through the finish-time
// indexes in order: no sort of all finished runs per batch, no scan of the
// whole table.
func TestPurgeSelectionUsesIndexes(t *testing.T) {
	s := openTemp(t)
	for _, c := range []struct {
		f     store.PurgeFilter
		index string
	}{
		{store.PurgeFilter{}, "runs_root_finished"},
		{store.PurgeFilter{FinishedBefore: time.Now()}, "runs_root_finished"},
		{store.PurgeFilter{Keep: 10}, "runs_root_finished"},
		{store.PurgeFilter{Workflow: "w", FinishedBefore: time.Now(), Status: []string{store.StatusFailed}}, "runs_root_workflow_finished"},
		{store.PurgeFilter{Workflow: "w", Keep: 10}, "runs_root_workflow_finished"},
	} {
		sel, args := purgeSelection(c.f, 100)
		rows, err := s.r.Query("EXPLAIN QUERY PLAN "+sel+"SELECT id FROM tree", args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		if !strings.Contains(text, "USING INDEX "+c.index) || strings.Contains(text, "TEMP B-TREE") || strings.Contains(text, "SCAN runs\n") || strings.HasSuffix(text, "SCAN runs") {
			t.Errorf("filter %+v: plan\n%s", c.f, text)
		}
	}
}

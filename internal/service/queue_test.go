package service

import (
	"context"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

const queueFlow = `version: 1
name: one-at-a-time
inputs:
  customer: {type: string}
concurrency: {limit: 1, key: '${{ inputs.customer }}'}
steps:
  - id: go
    ask: {prompt: "Go?", type: boolean}
`

// A run behind a held slot shows queued with its place, is listed by the
// status filter, waits (AwaitBrief) while queued, and leaves the queue
// when canceled.
func TestQueuedRunView(t *testing.T) {
	ctx := context.Background()
	s := serviceWith(t, "one-at-a-time", []byte(queueFlow))
	first, _ := startPaused(t, s, "one-at-a-time", map[string]any{"customer": "acme"})
	l, err := s.LoadWorkflow("one-at-a-time")
	if err != nil {
		t.Fatal(err)
	}
	var queued []string
	for range 2 {
		id, err := s.StartRun(ctx, l, map[string]any{"customer": "acme"}, false)
		if err != nil {
			t.Fatal(err)
		}
		queued = append(queued, id)
	}
	for i, id := range queued {
		v, err := s.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status != store.StatusQueued || v.Queue == nil || v.Queue.Key != "acme" || v.Queue.Limit != 1 || v.Queue.Ahead != i {
			t.Fatalf("view of queued run %d: %+v %+v", i, v, v.Queue)
		}
	}
	runs, _, err := s.ListRuns(ctx, store.RunFilter{Status: []string{store.StatusQueued}})
	if err != nil || len(runs) != 2 {
		t.Fatalf("queued runs listed: %d %v", len(runs), err)
	}
	if v, _ := s.GetRun(ctx, first); v.Queue != nil {
		t.Fatalf("a waiting run shows a queue: %+v", v.Queue)
	}
	if err := s.Cancel(ctx, queued[0], "", false); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetRun(ctx, queued[1]); v.Queue == nil || v.Queue.Ahead != 0 {
		t.Fatalf("after a cancel ahead of it: %+v", v.Queue)
	}
	// The first run finishes (its answer): the next one starts and pauses;
	// AwaitBrief followed it through queued.
	fv, err := s.GetRunBrief(ctx, first)
	if err != nil || fv.Pause == nil {
		t.Fatalf("first run's pause: %v %+v", err, fv)
	}
	if _, err := s.ContinueFromAgent(ctx, fv.Pause.Token, true); err != nil {
		t.Fatal(err)
	}
	v, err := s.AwaitBrief(ctx, queued[1], 10*time.Second, nil, nil)
	if err != nil || v.Status != store.StatusWaiting || v.Pause == nil {
		t.Fatalf("the next run after the first finished: %v %+v", err, v)
	}
}

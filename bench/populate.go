package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/sqlite"
)

// populateWorkflow is what the stored runs ran: three steps, so that a
// run_get has a few step rows to read and show.
const populateWorkflow = `version: 1
name: populate
inputs:
  who: {type: string, default: bench}
steps:
  - {id: first, uses: noop}
  - {id: second, uses: noop}
  - {id: third, uses: noop}
`

// populate stores n finished runs in home, in this process, before any
// server opens it. Driving 100,000 runs through the engine would take
// minutes of commits that say nothing about reading them, so one run is
// driven for real and its records (the run row, its steps, its events)
// are then written n times under new ids through the store's own
// CreateRun, one transaction each, with creation times a millisecond
// apart: the rows are byte for byte what the engine writes. Every tenth
// copy is marked failed, so that a status filter has something to skip.
// It returns the ids and how long the copies took.
func populate(ctx context.Context, home string, n int) ([]string, time.Duration, error) {
	svc, err := service.Open(ctx, service.Options{Home: home, Durability: sqlite.Normal})
	if err != nil {
		return nil, 0, err
	}
	defer svc.Close(ctx)
	l, err := svc.Parse([]byte(populateWorkflow))
	if err != nil {
		return nil, 0, err
	}
	id, err := svc.StartRun(ctx, l, nil, false)
	if err != nil {
		return nil, 0, err
	}
	if st, err := svc.Wait(ctx, id, 0); err != nil || st != store.StatusSucceeded {
		return nil, 0, fmt.Errorf("template run %s: %s %v", id, st, err)
	}
	run, err := svc.Store.GetRun(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	steps, err := svc.Store.Steps(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	events, err := svc.Store.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, n)
	t0 := time.Now()
	first := t0.Add(-time.Duration(n) * time.Millisecond)
	for i := range ids {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, 0, err
		}
		r := run
		r.ID = u.String()
		r.CreatedAt = first.Add(time.Duration(i) * time.Millisecond)
		r.FinishedAt = r.CreatedAt.Add(run.FinishedAt.Sub(run.CreatedAt))
		if i%10 == 9 {
			r.Status, r.Outputs = store.StatusFailed, nil
			r.Error = []byte(`{"message":"copied as failed by the benchmark","step_id":"third"}`)
		}
		for j := range steps {
			steps[j].RunID = r.ID
		}
		for j := range events {
			events[j].RunID = r.ID
		}
		if _, err := svc.Store.CreateRun(ctx, r, events, steps...); err != nil {
			return nil, 0, err
		}
		ids[i] = r.ID
	}
	return ids, time.Since(t0), nil
}

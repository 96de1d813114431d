package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// queueOf names a limited run's queue.
type queueOf struct{ workflow, key string }

// AdmitQueued implements store.Store (see store/queue.go): under the
// store's one lock, each queue admits its oldest queued runs while fewer
// than its limit are active.
func (s *Store) AdmitQueued(_ context.Context, r store.AdmitRequest) ([]store.Admitted, error) {
	if err := store.CheckAdmit(r); err != nil {
		return nil, err
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	queued := map[queueOf][]*run{}
	active := map[queueOf]int{}
	for _, x := range s.runs {
		if x.row.ConcurrencyLimit == 0 {
			continue
		}
		q := queueOf{x.row.Workflow, x.row.ConcurrencyKey}
		if !r.All && q != (queueOf{r.Workflow, r.Key}) {
			continue
		}
		switch {
		case x.row.Status == store.StatusQueued:
			queued[q] = append(queued[q], x)
		case slices.Contains(store.ActiveStatuses, x.row.Status):
			active[q]++
		}
	}
	queues := make([]queueOf, 0, len(queued))
	for q := range queued {
		queues = append(queues, q)
	}
	slices.SortFunc(queues, func(a, b queueOf) int { return cmp.Or(cmp.Compare(a.workflow, b.workflow), cmp.Compare(a.key, b.key)) })
	if len(queues) > store.MaxQueues {
		queues = queues[:store.MaxQueues]
	}
	now, expires := time.Now(), r.Now.Add(r.TTL).UTC()
	var out []store.Admitted
	for _, q := range queues {
		runs := queued[q]
		slices.SortFunc(runs, queueOrder)
		limit := runs[0].row.ConcurrencyLimit
		for _, x := range runs[:max(0, min(len(runs), limit-active[q]))] {
			prev := x.lease.Owner
			x.row.Status, x.row.UpdatedAt = store.StatusRunning, now
			x.row.Rev++
			x.lease = store.Lease{RunID: x.row.ID, Owner: r.Owner, Epoch: x.lease.Epoch + 1, Expires: expires}
			seqs := appendEvents(x, []store.Event{{Type: store.EventRunStarted, At: r.Now}}, now)
			l := x.lease
			l.TookOver = prev != "" && prev != r.Owner
			out = append(out, store.Admitted{Lease: l, EventSeq: seqs[0]})
		}
	}
	return out, nil
}

// queueOrder is creation order, then id.
func queueOrder(a, b *run) int {
	return cmp.Or(a.row.CreatedAt.Compare(b.row.CreatedAt), cmp.Compare(a.row.ID, b.row.ID))
}

// QueuePosition implements store.Store.
func (s *Store) QueuePosition(_ context.Context, runID string) (int, error) {
	if err := s.lock(); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	x, ok := s.runs[runID]
	if !ok || x.row.Status != store.StatusQueued {
		return 0, fmt.Errorf("queue position of %s: %w", runID, store.ErrNotFound)
	}
	n := 0
	for _, y := range s.runs {
		if y.row.Status == store.StatusQueued && y.row.ConcurrencyLimit > 0 && y.row.Workflow == x.row.Workflow &&
			y.row.ConcurrencyKey == x.row.ConcurrencyKey && queueOrder(y, x) < 0 {
			n++
		}
	}
	return n, nil
}

package memory

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Snapshot is everything a store holds about some runs: what a stateless
// server seals into the state a client keeps. Leases are not kept: an
// imported run is free for whichever process drives it next.
type Snapshot struct {
	Versions []store.Version `json:"versions"`
	Runs     []RunRecords    `json:"runs"`
}

// RunRecords are one run's row and history.
type RunRecords struct {
	Run      store.Run       `json:"run"`
	Epoch    int64           `json:"epoch,omitempty"`
	Steps    []store.Step    `json:"steps,omitempty"`
	Attempts []store.Attempt `json:"attempts,omitempty"`
	Events   []store.Event   `json:"events,omitempty"`
	Pauses   []store.Pause   `json:"pauses,omitempty"`
	Answers  []store.Answer  `json:"answers,omitempty"`
	Timers   []store.Timer   `json:"timers,omitempty"`
}

// Export returns the store's records, runs in creation order.
func (s *Store) Export() (Snapshot, error) {
	if err := s.lock(); err != nil {
		return Snapshot{}, err
	}
	defer s.mu.Unlock()
	var snap Snapshot
	for _, v := range s.versions {
		snap.Versions = append(snap.Versions, v)
	}
	slices.SortFunc(snap.Versions, func(a, b store.Version) int { return cmp.Compare(a.Version, b.Version) })
	for _, x := range s.runs {
		rows := slices.Clone(x.steps)
		slices.SortFunc(rows, func(a, b stepRow) int { return cmp.Compare(a.ord, b.ord) })
		rec := RunRecords{Run: x.row, Epoch: x.lease.Epoch, Attempts: slices.Clone(x.attempts),
			Events: slices.Clone(x.events), Pauses: slices.Clone(x.pauses), Answers: slices.Clone(x.answers)}
		for _, r := range rows {
			rec.Steps = append(rec.Steps, r.step)
		}
		for k, at := range x.timers {
			rec.Timers = append(rec.Timers, store.Timer{RunID: x.row.ID, Key: k, WakeAt: at})
		}
		slices.SortFunc(rec.Timers, func(a, b store.Timer) int { return cmp.Compare(a.Key, b.Key) })
		snap.Runs = append(snap.Runs, rec)
	}
	slices.SortFunc(snap.Runs, func(a, b RunRecords) int {
		return cmp.Or(a.Run.CreatedAt.Compare(b.Run.CreatedAt), cmp.Compare(a.Run.ID, b.Run.ID))
	})
	return snap, nil
}

// Import adds a snapshot's records to the store: its versions (existing
// ones kept) and its runs, which must be new (store.ErrExists) and of a
// version the snapshot or the store holds (store.ErrNotFound). A run's
// records must be its own; nothing is imported on error.
func (s *Store) Import(snap Snapshot) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	versions := map[string]bool{}
	for _, v := range snap.Versions {
		versions[v.Version] = true
	}
	seen := map[string]bool{}
	for _, rec := range snap.Runs {
		id := rec.Run.ID
		if _, ok := s.runs[id]; ok || seen[id] || id == "" {
			return fmt.Errorf("import run %q: %w", id, store.ErrExists)
		}
		seen[id] = true
		if _, ok := s.versions[rec.Run.Version]; !ok && !versions[rec.Run.Version] {
			return fmt.Errorf("import run %s: version %s: %w", id, rec.Run.Version, store.ErrNotFound)
		}
		if err := rec.check(); err != nil {
			return fmt.Errorf("import run %s: %w", id, err)
		}
	}
	for _, v := range snap.Versions {
		if _, ok := s.versions[v.Version]; !ok {
			s.versions[v.Version] = v
		}
	}
	for _, rec := range snap.Runs {
		x := &run{row: rec.Run, lease: store.Lease{RunID: rec.Run.ID, Epoch: rec.Epoch}, attempts: slices.Clone(rec.Attempts),
			events: slices.Clone(rec.Events), pauses: slices.Clone(rec.Pauses), answers: slices.Clone(rec.Answers), timers: map[string]time.Time{}}
		x.row.Lease = nil
		for _, st := range rec.Steps {
			s.nextOrd++
			x.steps = append(x.steps, stepRow{ord: s.nextOrd, step: st})
		}
		for _, a := range rec.Answers {
			s.answerID = max(s.answerID, a.ID)
		}
		for _, t := range rec.Timers {
			x.timers[t.Key] = t.WakeAt
		}
		s.runs[rec.Run.ID] = x
	}
	return nil
}

// check reports records that are not the run's or out of order.
func (rec RunRecords) check() error {
	id := rec.Run.ID
	for _, st := range rec.Steps {
		if st.RunID != id {
			return fmt.Errorf("step %s of another run", st.Key)
		}
	}
	for i, e := range rec.Events {
		if e.RunID != id || e.Seq != int64(i+1) {
			return fmt.Errorf("event %d out of sequence", e.Seq)
		}
	}
	if int64(len(rec.Events)) != rec.Run.EventSeq {
		return fmt.Errorf("%d events for an event sequence of %d", len(rec.Events), rec.Run.EventSeq)
	}
	for _, p := range rec.Pauses {
		if p.RunID != id {
			return fmt.Errorf("pause %d of another run", p.Seq)
		}
	}
	for _, a := range rec.Answers {
		if a.RunID != id {
			return fmt.Errorf("answer %d of another run", a.ID)
		}
	}
	return nil
}

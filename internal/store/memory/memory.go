// Package memory is a store.Store kept in the process's memory, for one
// short use: a stateless server (service/stateless.go) imports a client's
// run into a fresh one, lets the engine drive it, and exports what the
// engine wrote (Export, Import). Nothing survives Close; every method is
// safe for concurrent use and each is atomic, as the store's contract asks.
package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/store"
)

// Store is the in-memory store.
type Store struct {
	mu       sync.Mutex
	closed   bool
	versions map[string]store.Version
	runs     map[string]*run
	nextOrd  int64
	answerID int64
}

var _ store.Store = (*Store)(nil)

// run is a run's row with everything that belongs to it.
type run struct {
	row      store.Run
	lease    store.Lease // Owner "" when free; Epoch kept
	steps    []stepRow
	attempts []store.Attempt
	events   []store.Event
	pauses   []store.Pause
	answers  []store.Answer
	timers   map[string]time.Time
}

// stepRow is a step with the order it was first recorded in.
type stepRow struct {
	ord  int64
	step store.Step
}

// New returns an empty store.
func New() *Store {
	return &Store{versions: map[string]store.Version{}, runs: map[string]*run{}}
}

func (s *Store) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("memory store: closed: %w", store.ErrUnavailable)
	}
	return nil
}

// PutVersion implements store.Store.
func (s *Store) PutVersion(_ context.Context, v store.Version) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, ok := s.versions[v.Version]; ok {
		return nil
	}
	if v.CreatedAt.IsZero() {
		v.CreatedAt = time.Now()
	}
	v.Definition = slices.Clone(v.Definition)
	s.versions[v.Version] = v
	return nil
}

// GetVersion implements store.Store.
func (s *Store) GetVersion(_ context.Context, version string) (store.Version, error) {
	if err := s.lock(); err != nil {
		return store.Version{}, err
	}
	defer s.mu.Unlock()
	v, ok := s.versions[version]
	if !ok {
		return store.Version{}, fmt.Errorf("version %s: %w", version, store.ErrNotFound)
	}
	return v, nil
}

// ListVersions implements store.Store.
func (s *Store) ListVersions(_ context.Context, name string, limit int) ([]store.Version, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Version
	for _, v := range s.versions {
		if v.Name == name {
			v.Definition = nil
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b store.Version) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out[:min(len(out), min(max(limit, 1), 1000))], nil
}

// CreateRun implements store.Store.
func (s *Store) CreateRun(_ context.Context, r store.Run, events []store.Event, steps ...store.Step) (store.CommitResult, error) {
	var res store.CommitResult
	lease, err := store.CreateLease(r)
	if err != nil {
		return res, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	if err := store.CheckQueued(r); err != nil {
		return res, fmt.Errorf("create run %s: %w", r.ID, err)
	}
	if err := s.lock(); err != nil {
		return res, err
	}
	defer s.mu.Unlock()
	if _, ok := s.runs[r.ID]; ok {
		return res, fmt.Errorf("create run %s: %w", r.ID, store.ErrExists)
	}
	if _, ok := s.versions[r.Version]; !ok {
		return res, fmt.Errorf("create run %s: version %s is not recorded: %w", r.ID, r.Version, store.ErrNotFound)
	}
	now := time.Now()
	if r.CreatedAt.IsZero() {
		r.CreatedAt = now
	}
	r.UpdatedAt, r.Rev, r.EventSeq, r.Lease = now, 1, 0, nil
	x := &run{row: r, timers: map[string]time.Time{}}
	if lease.Owner != "" {
		x.lease = lease
	}
	s.upsertSteps(x, r.ID, steps)
	res.EventSeqs = appendEvents(x, events, now)
	res.Rev, res.Lease = 1, lease
	s.runs[r.ID] = x
	return res, nil
}

// GetRun implements store.Store.
func (s *Store) GetRun(_ context.Context, id string) (store.Run, error) {
	if err := s.lock(); err != nil {
		return store.Run{}, err
	}
	defer s.mu.Unlock()
	x, ok := s.runs[id]
	if !ok {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return x.row, nil
}

// ListRuns implements store.Store: newest first, the cursor an offset.
func (s *Store) ListRuns(_ context.Context, f store.RunFilter) ([]store.Run, string, error) {
	if err := s.lock(); err != nil {
		return nil, "", err
	}
	defer s.mu.Unlock()
	limit := f.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 1000)
	from := 0
	if f.Cursor != "" {
		if _, err := fmt.Sscanf(f.Cursor, "m%d", &from); err != nil || from < 0 {
			return nil, "", store.ErrBadCursor
		}
	}
	var all []store.Run
	for _, x := range s.runs {
		r := x.row
		if (f.Workflow != "" && r.Workflow != f.Workflow) || (len(f.Status) > 0 && !slices.Contains(f.Status, r.Status)) ||
			r.ParentID != f.ParentID || (!f.CreatedAfter.IsZero() && !r.CreatedAt.After(f.CreatedAfter)) ||
			(!f.CreatedBefore.IsZero() && !r.CreatedAt.Before(f.CreatedBefore)) ||
			(f.Search != "" && !hasPrefix(r.ID, f.Search) && !hasPrefix(r.Workflow, f.Search)) {
			continue
		}
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b store.Run) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	if from >= len(all) {
		return nil, "", nil
	}
	page := all[from:min(len(all), from+limit)]
	next := ""
	if from+limit < len(all) {
		next = fmt.Sprintf("m%d", from+limit)
	}
	return page, next, nil
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

// RunIDsByStatus implements store.Store.
func (s *Store) RunIDsByStatus(_ context.Context, statuses ...string) ([]string, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var ids []string
	for id, x := range s.runs {
		if slices.Contains(statuses, x.row.Status) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// WorkflowStats implements store.Store.
func (s *Store) WorkflowStats(_ context.Context, workflow string) (store.WorkflowStats, error) {
	if err := s.lock(); err != nil {
		return store.WorkflowStats{}, err
	}
	defer s.mu.Unlock()
	var st store.WorkflowStats
	var total time.Duration
	finished := 0
	for _, x := range s.runs {
		r := x.row
		if r.Workflow != workflow || r.ParentID != "" {
			continue
		}
		st.Runs++
		switch r.Status {
		case store.StatusSucceeded:
			st.Succeeded++
		case store.StatusFailed:
			st.Failed++
		case store.StatusCanceled:
			st.Canceled++
		default:
			st.Active++
		}
		if !r.FinishedAt.IsZero() {
			finished++
			total += r.FinishedAt.Sub(r.CreatedAt)
		}
		if r.CreatedAt.After(st.LastRunAt) {
			st.LastRunAt = r.CreatedAt
		}
	}
	if finished > 0 {
		st.MeanDuration = total / time.Duration(finished)
	}
	return st, nil
}

// Ping implements store.Store.
func (s *Store) Ping(context.Context) error {
	if err := s.lock(); err != nil {
		return err
	}
	s.mu.Unlock()
	return nil
}

// Commit implements store.Store: every check first, then every write.
func (s *Store) Commit(_ context.Context, c store.Commit) (store.CommitResult, error) {
	var res store.CommitResult
	if err := store.CheckCommitLease(c); err != nil {
		return res, fmt.Errorf("commit run %s: %w", c.RunID, err)
	}
	if err := s.lock(); err != nil {
		return res, err
	}
	defer s.mu.Unlock()
	fail := func(err error) (store.CommitResult, error) {
		return store.CommitResult{}, fmt.Errorf("commit run %s: %w", c.RunID, err)
	}
	x, ok := s.runs[c.RunID]
	if !ok {
		return fail(store.ErrNotFound)
	}
	now := time.Now()
	if c.Lease != nil && (x.lease.Owner != c.Lease.Owner || x.lease.Epoch != c.Lease.Epoch) {
		return fail(store.ErrLeaseLost)
	}
	lease := x.lease
	if a := c.Acquire; a != nil {
		other := lease.Owner != "" && lease.Owner != a.Owner
		if other && lease.Expires.After(a.Now) {
			return fail(&store.LeaseHeldError{RunID: c.RunID, Owner: lease.Owner, Expires: lease.Expires})
		}
		lease = store.Lease{RunID: c.RunID, Owner: a.Owner, Epoch: lease.Epoch + 1, Expires: a.Now.Add(a.TTL).UTC(), TookOver: other}
		res.Lease = lease
	}
	if x.row.Rev != c.Rev {
		return fail(store.ErrConflict)
	}
	closeAt := -1
	if p := c.ClosePause; p != nil {
		i := slices.IndexFunc(x.pauses, func(q store.Pause) bool { return q.Seq == p.Seq })
		if i < 0 {
			return fail(fmt.Errorf("pause %d: %w", p.Seq, store.ErrNotFound))
		}
		if x.pauses[i].Status != store.PauseOpen {
			return fail(store.ErrPauseClosed)
		}
		closeAt = i
	}
	if p := c.OpenPause; p != nil && slices.ContainsFunc(x.pauses, func(q store.Pause) bool { return q.Seq == p.Seq }) {
		return fail(fmt.Errorf("open pause %d: %w", p.Seq, store.ErrExists))
	}
	// Everything checked: write.
	if c.Release {
		lease.Owner, lease.Expires, lease.TookOver = "", time.Time{}, false
	}
	x.lease = lease
	u := c.Run
	r := &x.row
	if u.Status != "" {
		r.Status = u.Status
	}
	if len(u.State) > 0 {
		r.State = clone(u.State)
	}
	if len(u.Inputs) > 0 {
		r.Inputs = clone(u.Inputs)
	}
	if u.Reopen {
		r.Outputs, r.Error, r.FinishedAt = nil, nil, time.Time{}
	} else {
		if len(u.Outputs) > 0 {
			r.Outputs = clone(u.Outputs)
		}
		if len(u.Error) > 0 {
			r.Error = clone(u.Error)
		}
		if !u.FinishedAt.IsZero() {
			r.FinishedAt = u.FinishedAt
		}
	}
	r.Rev++
	r.UpdatedAt = now
	res.Rev = r.Rev
	if closeAt >= 0 {
		p := c.ClosePause
		at := p.At
		if at.IsZero() {
			at = now
		}
		q := &x.pauses[closeAt]
		q.Status, q.Answer, q.AnsweredAt = p.Status, clone(p.Answer), at
	}
	for _, seq := range c.CancelPauses {
		for i := range x.pauses {
			if q := &x.pauses[i]; q.Seq == seq && q.Status == store.PauseOpen {
				q.Status, q.AnsweredAt = store.PauseCanceled, now
			}
		}
	}
	if a := c.Answer; a != nil {
		s.answerID++
		at := a.At
		if at.IsZero() {
			at = now
		}
		x.answers = append(x.answers, store.Answer{ID: s.answerID, RunID: c.RunID, PauseSeq: a.PauseSeq, StepKey: a.StepKey, Value: clone(a.Value), At: at})
		res.AnswerID = s.answerID
	}
	s.upsertSteps(x, c.RunID, c.Steps)
	for _, a := range c.Attempts {
		a.RunID = c.RunID
		if i := slices.IndexFunc(x.attempts, func(b store.Attempt) bool {
			return b.Key == a.Key && b.Visit == a.Visit && b.Attempt == a.Attempt
		}); i >= 0 {
			x.attempts[i] = a
		} else {
			x.attempts = append(x.attempts, a)
		}
	}
	if p := c.OpenPause; p != nil {
		q := *p
		q.RunID, q.Status, q.Answer, q.AnsweredAt = c.RunID, store.PauseOpen, nil, time.Time{}
		q.Request = clone(q.Request)
		if q.CreatedAt.IsZero() {
			q.CreatedAt = now
		}
		x.pauses = append(x.pauses, q)
	}
	for _, k := range c.ClearTimers {
		delete(x.timers, k)
	}
	for _, t := range c.SetTimers {
		x.timers[t.Key] = t.WakeAt
	}
	res.EventSeqs = appendEvents(x, c.Events, now)
	return res, nil
}

func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

func (s *Store) upsertSteps(x *run, runID string, steps []store.Step) {
	for _, st := range steps {
		st.RunID = runID
		st.Output, st.Answer = clone(st.Output), clone(st.Answer)
		if i := slices.IndexFunc(x.steps, func(r stepRow) bool { return r.step.Key == st.Key && r.step.Visit == st.Visit }); i >= 0 {
			x.steps[i].step = st
			continue
		}
		s.nextOrd++
		x.steps = append(x.steps, stepRow{ord: s.nextOrd, step: st})
	}
}

func appendEvents(x *run, events []store.Event, now time.Time) []int64 {
	if len(events) == 0 {
		return nil
	}
	seqs := make([]int64, len(events))
	for i, e := range events {
		x.row.EventSeq++
		e.RunID, e.Seq, e.Data = x.row.ID, x.row.EventSeq, clone(e.Data)
		if e.At.IsZero() {
			e.At = now
		}
		x.events = append(x.events, e)
		seqs[i] = e.Seq
	}
	return seqs
}

// AcquireLease implements store.Store.
func (s *Store) AcquireLease(_ context.Context, runID, owner string, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return store.Lease{}, err
	}
	if err := s.lock(); err != nil {
		return store.Lease{}, err
	}
	defer s.mu.Unlock()
	x, ok := s.runs[runID]
	if !ok {
		return store.Lease{}, fmt.Errorf("acquire lease on run %s: %w", runID, store.ErrNotFound)
	}
	other := x.lease.Owner != "" && x.lease.Owner != owner
	if other && x.lease.Expires.After(now) {
		return store.Lease{}, fmt.Errorf("acquire lease on run %s: %w", runID, &store.LeaseHeldError{RunID: runID, Owner: x.lease.Owner, Expires: x.lease.Expires})
	}
	x.lease = store.Lease{RunID: runID, Owner: owner, Epoch: x.lease.Epoch + 1, Expires: now.Add(ttl).UTC()}
	l := x.lease
	l.TookOver = other
	return l, nil
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(_ context.Context, l store.Lease, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(l.Owner, ttl); err != nil {
		return store.Lease{}, err
	}
	if err := s.lock(); err != nil {
		return store.Lease{}, err
	}
	defer s.mu.Unlock()
	x, err := s.held(l)
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease on run %s: %w", l.RunID, err)
	}
	x.lease.Expires = now.Add(ttl).UTC()
	l.Expires = x.lease.Expires
	return l, nil
}

// held is the run whose lease l still is.
func (s *Store) held(l store.Lease) (*run, error) {
	x, ok := s.runs[l.RunID]
	if !ok {
		return nil, store.ErrNotFound
	}
	if x.lease.Owner == "" || x.lease.Owner != l.Owner || x.lease.Epoch != l.Epoch {
		return nil, store.ErrLeaseLost
	}
	return x, nil
}

// ReleaseLease implements store.Store.
func (s *Store) ReleaseLease(_ context.Context, l store.Lease) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	x, err := s.held(l)
	if err != nil {
		return fmt.Errorf("release lease on run %s: %w", l.RunID, err)
	}
	x.lease.Owner, x.lease.Expires = "", time.Time{}
	return nil
}

// GetLease implements store.Store.
func (s *Store) GetLease(_ context.Context, runID string) (store.Lease, error) {
	if err := s.lock(); err != nil {
		return store.Lease{}, err
	}
	defer s.mu.Unlock()
	x, ok := s.runs[runID]
	if !ok {
		return store.Lease{}, fmt.Errorf("lease of run %s: %w", runID, store.ErrNotFound)
	}
	return store.Lease{RunID: runID, Owner: x.lease.Owner, Epoch: x.lease.Epoch, Expires: x.lease.Expires}, nil
}

// ClaimRuns implements store.Store.
func (s *Store) ClaimRuns(_ context.Context, owner string, now time.Time, ttl time.Duration, f store.ClaimFilter, limit int) ([]store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var picked []*run
	for _, x := range s.runs {
		r := x.row
		if f.Workflow != "" && r.Workflow != f.Workflow {
			continue
		}
		if x.lease.Owner != "" && x.lease.Expires.After(now) {
			continue
		}
		if f.Ready {
			if r.Status == store.StatusPaused {
				continue
			}
			due, later := false, false
			for _, at := range x.timers {
				if at.After(now) {
					later = true
				} else {
					due = true
				}
			}
			active := r.Status == store.StatusPending || r.Status == store.StatusRunning
			if !due && !(active && !later) {
				continue
			}
		} else if !slices.Contains(f.Statuses(), r.Status) {
			continue
		}
		picked = append(picked, x)
	}
	slices.SortFunc(picked, func(a, b *run) int {
		return cmp.Or(a.row.CreatedAt.Compare(b.row.CreatedAt), cmp.Compare(a.row.ID, b.row.ID))
	})
	picked = picked[:min(len(picked), limit)]
	out := make([]store.Lease, 0, len(picked))
	for _, x := range picked {
		took := x.lease.Owner != "" && x.lease.Owner != owner
		x.lease = store.Lease{RunID: x.row.ID, Owner: owner, Epoch: x.lease.Epoch + 1, Expires: now.Add(ttl).UTC()}
		l := x.lease
		l.TookOver = took
		out = append(out, l)
	}
	return out, nil
}

// TakeOverLease implements store.Store.
func (s *Store) TakeOverLease(_ context.Context, from store.Lease, owner string, now time.Time, ttl time.Duration) (store.Lease, error) {
	if err := store.CheckLeaseRequest(owner, ttl); err != nil {
		return store.Lease{}, err
	}
	if err := s.lock(); err != nil {
		return store.Lease{}, err
	}
	defer s.mu.Unlock()
	x, err := s.held(from)
	if err != nil {
		return store.Lease{}, fmt.Errorf("take over the lease on run %s: %w", from.RunID, err)
	}
	x.lease = store.Lease{RunID: from.RunID, Owner: owner, Epoch: x.lease.Epoch + 1, Expires: now.Add(ttl).UTC()}
	l := x.lease
	l.TookOver = true
	return l, nil
}

// get runs fn on the run's records under the lock.
func get[T any](s *Store, runID string, fn func(x *run) T) (T, error) {
	var zero T
	if err := s.lock(); err != nil {
		return zero, err
	}
	defer s.mu.Unlock()
	x, ok := s.runs[runID]
	if !ok {
		return zero, nil
	}
	return fn(x), nil
}

// Steps implements store.Store.
func (s *Store) Steps(_ context.Context, runID string) ([]store.Step, error) {
	return get(s, runID, func(x *run) []store.Step {
		rows := slices.Clone(x.steps)
		slices.SortFunc(rows, func(a, b stepRow) int { return cmp.Compare(a.ord, b.ord) })
		out := make([]store.Step, len(rows))
		for i, r := range rows {
			out[i] = r.step
		}
		return out
	})
}

// Attempts implements store.Store.
func (s *Store) Attempts(_ context.Context, runID string) ([]store.Attempt, error) {
	return get(s, runID, func(x *run) []store.Attempt {
		out := slices.Clone(x.attempts)
		slices.SortStableFunc(out, func(a, b store.Attempt) int {
			return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Visit, b.Visit), cmp.Compare(a.Attempt, b.Attempt))
		})
		return out
	})
}

// Events implements store.Store.
func (s *Store) Events(_ context.Context, runID string, after int64, limit int) ([]store.Event, error) {
	return get(s, runID, func(x *run) []store.Event {
		var out []store.Event
		for _, e := range x.events {
			if e.Seq > after && (limit <= 0 || len(out) < limit) {
				out = append(out, e)
			}
		}
		return out
	})
}

// GetPause implements store.Store.
func (s *Store) GetPause(_ context.Context, runID string, seq int64) (store.Pause, error) {
	p, err := get(s, runID, func(x *run) *store.Pause {
		if i := slices.IndexFunc(x.pauses, func(p store.Pause) bool { return p.Seq == seq }); i >= 0 {
			p := x.pauses[i]
			return &p
		}
		return nil
	})
	if err != nil {
		return store.Pause{}, err
	}
	if p == nil {
		return store.Pause{}, fmt.Errorf("pause %s/%d: %w", runID, seq, store.ErrNotFound)
	}
	return *p, nil
}

// OpenPauses implements store.Store.
func (s *Store) OpenPauses(_ context.Context, runID string) ([]store.Pause, error) {
	return get(s, runID, func(x *run) []store.Pause {
		var out []store.Pause
		for _, p := range x.pauses {
			if p.Status == store.PauseOpen {
				out = append(out, p)
			}
		}
		return out
	})
}

// Answers implements store.Store.
func (s *Store) Answers(_ context.Context, runID string) ([]store.Answer, error) {
	return get(s, runID, func(x *run) []store.Answer { return slices.Clone(x.answers) })
}

// timers lists the timers selected by keep, earliest first.
func (s *Store) timers(keep func(x *run, at time.Time) bool) ([]store.Timer, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	var out []store.Timer
	for id, x := range s.runs {
		for k, at := range x.timers {
			if keep(x, at) {
				out = append(out, store.Timer{RunID: id, Key: k, WakeAt: at})
			}
		}
	}
	slices.SortFunc(out, func(a, b store.Timer) int {
		return cmp.Or(a.WakeAt.Compare(b.WakeAt), cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
}

// DueTimers implements store.Store.
func (s *Store) DueTimers(_ context.Context, now time.Time, limit int) ([]store.Timer, error) {
	out, err := s.timers(func(x *run, at time.Time) bool { return x.row.Status != store.StatusPaused && !at.After(now) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// Timers implements store.Store.
func (s *Store) Timers(_ context.Context, runID string) ([]store.Timer, error) {
	return s.timers(func(x *run, _ time.Time) bool { return x.row.ID == runID })
}

// NextTimer implements store.Store.
func (s *Store) NextTimer(context.Context) (store.Timer, bool, error) {
	out, err := s.timers(func(x *run, _ time.Time) bool { return x.row.Status != store.StatusPaused })
	if err != nil || len(out) == 0 {
		return store.Timer{}, false, err
	}
	return out[0], true, nil
}

// PurgeRuns implements store.Store, atomically (one batch).
func (s *Store) PurgeRuns(_ context.Context, f store.PurgeFilter) (store.PurgeResult, error) {
	var res store.PurgeResult
	if err := f.Validate(); err != nil {
		return res, err
	}
	if err := s.lock(); err != nil {
		return res, err
	}
	defer s.mu.Unlock()
	children := map[string][]*run{}
	for _, x := range s.runs {
		if x.row.ParentID != "" {
			children[x.row.ParentID] = append(children[x.row.ParentID], x)
		}
	}
	tree := func(root *run) []*run {
		out := []*run{root}
		for i := 0; i < len(out); i++ {
			out = append(out, children[out[i].row.ID]...)
		}
		return out
	}
	var roots []*run
	for _, x := range s.runs {
		r := x.row
		if r.ParentID != "" || !slices.Contains(f.Statuses(), r.Status) || (f.Workflow != "" && r.Workflow != f.Workflow) ||
			(!f.FinishedBefore.IsZero() && !r.FinishedAt.Before(f.FinishedBefore)) {
			continue
		}
		roots = append(roots, x)
	}
	slices.SortFunc(roots, func(a, b *run) int {
		return cmp.Or(b.row.FinishedAt.Compare(a.row.FinishedAt), cmp.Compare(b.row.ID, a.row.ID))
	})
	roots = roots[min(f.Keep, len(roots)):]
	var gone []*run
	for _, root := range roots {
		t := tree(root)
		if slices.ContainsFunc(t, func(x *run) bool { return !store.Finished(x.row.Status) }) {
			continue
		}
		gone = append(gone, t...)
	}
	for _, x := range gone {
		res.Runs++
		res.Steps += len(x.steps)
		res.Attempts += len(x.attempts)
		res.Events += len(x.events)
		res.Pauses += len(x.pauses)
		res.Answers += len(x.answers)
		res.Timers += len(x.timers)
	}
	used := map[string]bool{}
	for _, x := range s.runs {
		if !slices.Contains(gone, x) {
			used[x.row.Version] = true
		}
	}
	for _, x := range gone {
		if !used[x.row.Version] {
			used[x.row.Version] = true // counted once
			if _, ok := s.versions[x.row.Version]; ok {
				res.Versions++
				if !f.DryRun {
					delete(s.versions, x.row.Version)
				}
			}
		}
	}
	if !f.DryRun {
		for _, x := range gone {
			delete(s.runs, x.row.ID)
		}
	}
	return res, nil
}

// Close implements store.Store: the records are dropped.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed, s.runs, s.versions = true, nil, nil
	return nil
}

package store

import (
	"context"
	"errors"
	"time"
)

// Schedule is one schedule trigger of a library workflow as the store
// keeps it: when it fires next, whether it is paused, and its last
// firing. Key names it (workflow and trigger index); Spec is the
// trigger's canonical text, so that a changed trigger starts afresh.
type Schedule struct {
	Key       string
	Workflow  string
	Trigger   int
	Spec      string
	NextFire  time.Time
	Paused    bool
	LastFired time.Time
	LastRunID string
}

// Firing is one instant a schedule fired at, and the run it started (""
// until the run is recorded).
type Firing struct {
	Key   string
	At    time.Time
	RunID string
}

// MaxFirings bounds the firings a store keeps of one schedule: the
// newest stay.
const MaxFirings = 1000

// ErrFiringTaken is ClaimFiring's answer when the schedule moved on
// meanwhile (another replica fired it, it was paused, changed or
// removed): the caller fires nothing.
var ErrFiringTaken = errors.New("the schedule's firing was taken")

// ScheduleStore keeps schedules, their firings and the delivery ids of
// webhooks. SQLite and PostgreSQL stores implement it.
type ScheduleStore interface {
	// SyncSchedules makes workflow's schedules those given: a schedule
	// whose key and spec are kept keeps its state (next fire, paused,
	// last firing); a new or changed one is inserted as given; the
	// workflow's others are removed (nil: all of them).
	SyncSchedules(ctx context.Context, workflow string, s []Schedule) error
	// ListSchedules returns every schedule, by workflow and trigger.
	ListSchedules(ctx context.Context) ([]Schedule, error)
	// ClaimFiring moves the schedule's next fire from expected to next
	// and records a firing at each of the instants at (at most 100) in
	// one transaction, only if it is unpaused and still expects that fire
	// (ErrFiringTaken otherwise, writing nothing): of replicas claiming
	// the same instant, one wins. at may be empty (instants skipped).
	ClaimFiring(ctx context.Context, key string, expected, next time.Time, at []time.Time) error
	// The store keeps the newest MaxFirings firings of each schedule, and
	// drops a schedule's firings when it changes or is removed.
	//
	// RecordFiringRun records the run a firing started.
	RecordFiringRun(ctx context.Context, key string, at time.Time, runID string) error
	// Firings returns the schedule's latest firings, newest first (limit
	// at most 1000).
	Firings(ctx context.Context, key string, limit int) ([]Firing, error)
	// SetSchedulePaused pauses or resumes a schedule; resuming sets its
	// next fire to next (ErrNotFound: no such schedule).
	SetSchedulePaused(ctx context.Context, key string, paused bool, next time.Time) error
	// SeenDelivery records a webhook delivery id at now and reports
	// whether it was already recorded within window (a replay); older
	// ids are forgotten.
	SeenDelivery(ctx context.Context, hook, id string, now time.Time, window time.Duration) (bool, error)
}

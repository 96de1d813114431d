package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// Error codes of schedules.
const (
	// CodeScheduleNotFound: no schedule has that key.
	CodeScheduleNotFound = "SCHEDULE_NOT_FOUND"
	// CodeSchedulesUnsupported: the store keeps no schedules.
	CodeSchedulesUnsupported = "SCHEDULES_UNSUPPORTED"
)

// scheduleGrace is how late an instant may be found and still be on
// time: later, it was missed (the server was down) and catch_up decides.
const scheduleGrace = time.Minute

// maxScheduleSteps bounds the instants walked to catch up one schedule;
// past it the schedule jumps to its next instant after now.
const maxScheduleSteps = 100_000

// ScheduleInfo is one schedule of a library workflow, as surfaces list it.
type ScheduleInfo struct {
	// Key names the schedule: workflow#index of the trigger.
	Key      string `json:"key"`
	Workflow string `json:"workflow"`
	Trigger  int    `json:"trigger"`
	Cron     string `json:"cron,omitempty"`
	Timezone string `json:"timezone,omitempty"`
	Every    string `json:"every,omitempty"`
	CatchUp  string `json:"catch_up"`
	// NextFire is when it fires next (while not paused).
	NextFire  time.Time  `json:"next_fire"`
	Paused    bool       `json:"paused"`
	LastFired *time.Time `json:"last_fired,omitempty"`
	LastRunID string     `json:"last_run_id,omitempty"`
}

// scheduleKey names trigger i of workflow.
func scheduleKey(workflow string, i int) string { return workflow + "#" + strconv.Itoa(i) }

func (s *Service) scheduleStore() (store.ScheduleStore, error) {
	ss, ok := s.Store.(store.ScheduleStore)
	if !ok {
		return nil, &engine.Error{Code: CodeSchedulesUnsupported, Category: engine.CategoryInternal,
			Message: "this store keeps no schedules", Suggestion: "use the SQLite or PostgreSQL store"}
	}
	return ss, nil
}

// specOf is a schedule's canonical text: what SyncSchedules compares.
func specOf(sc *workflow.Schedule) string {
	b, _ := json.Marshal(sc) // plain data: never fails
	return string(b)
}

// SyncSchedules makes the store's schedules of the library workflow name
// its triggers: unchanged ones keep their state, new or changed ones
// start from now, and those of a workflow deleted (or renamed away, or
// invalid now) are removed.
func (s *Service) SyncSchedules(ctx context.Context, name string) error {
	ss, err := s.scheduleStore()
	if err != nil {
		return err
	}
	var scheds []store.Schedule
	l, err := s.LoadLibraryWorkflow(name)
	var ee *engine.Error
	switch {
	case err == nil:
		now := s.now()
		for i, t := range l.Workflow.Triggers {
			if t == nil || t.Schedule == nil {
				continue
			}
			clock, err := t.Schedule.Clock()
			if err != nil {
				continue // the library holds only valid workflows; skip rather than stop the others
			}
			scheds = append(scheds, store.Schedule{Key: scheduleKey(name, i), Workflow: name, Trigger: i,
				Spec: specOf(t.Schedule), NextFire: clock.Next(now)})
		}
	case errors.As(err, &ee) && (ee.Code == CodeNotFound || ee.Code == engine.CodeWorkflowInvalid || ee.Code == CodeUnsafeName):
		// No such saved workflow (any more): no schedules.
	default:
		return err
	}
	return ss.SyncSchedules(ctx, name, scheds)
}

// SyncAllSchedules syncs the schedules of every library workflow and
// removes those of workflows no longer in the library.
func (s *Service) SyncAllSchedules(ctx context.Context) error {
	ss, err := s.scheduleStore()
	if err != nil {
		return err
	}
	names, err := s.Library.Names(library.Saved)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	var errs []error
	for _, n := range names {
		known[n] = true
		errs = append(errs, s.SyncSchedules(ctx, n))
	}
	list, err := ss.ListSchedules(ctx)
	if err != nil {
		return err
	}
	for _, sc := range list {
		if !known[sc.Workflow] {
			known[sc.Workflow] = true
			errs = append(errs, ss.SyncSchedules(ctx, sc.Workflow, nil))
		}
	}
	return errors.Join(errs...)
}

// ListSchedules lists every schedule with its next fire time.
func (s *Service) ListSchedules(ctx context.Context) ([]ScheduleInfo, error) {
	ss, err := s.scheduleStore()
	if err != nil {
		return nil, err
	}
	list, err := ss.ListSchedules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ScheduleInfo, 0, len(list))
	for _, sc := range list {
		var spec workflow.Schedule
		_ = json.Unmarshal([]byte(sc.Spec), &spec) // written by specOf
		info := ScheduleInfo{Key: sc.Key, Workflow: sc.Workflow, Trigger: sc.Trigger, Cron: spec.Cron, Timezone: spec.Timezone,
			Every: spec.Every, CatchUp: spec.Policy(), NextFire: sc.NextFire, Paused: sc.Paused, LastRunID: sc.LastRunID}
		if !sc.LastFired.IsZero() {
			t := sc.LastFired
			info.LastFired = &t
		}
		out = append(out, info)
	}
	return out, nil
}

// PauseSchedule pauses (or resumes) the schedule of that key; a resumed
// schedule fires next at its first instant after now (the instants while
// paused are skipped).
func (s *Service) PauseSchedule(ctx context.Context, key string, paused bool) (ScheduleInfo, error) {
	ss, err := s.scheduleStore()
	if err != nil {
		return ScheduleInfo{}, err
	}
	list, err := s.ListSchedules(ctx)
	if err != nil {
		return ScheduleInfo{}, err
	}
	for _, info := range list {
		if info.Key != key {
			continue
		}
		spec := workflow.Schedule{Cron: info.Cron, Timezone: info.Timezone, Every: info.Every}
		clock, err := spec.Clock()
		if err != nil {
			return ScheduleInfo{}, err
		}
		next := clock.Next(s.now())
		if err := ss.SetSchedulePaused(ctx, key, paused, next); err != nil {
			break
		}
		info.Paused = paused
		if !paused {
			info.NextFire = next
		}
		return info, nil
	}
	keys := make([]string, 0, len(list))
	for _, info := range list {
		keys = append(keys, info.Key)
	}
	msg := fmt.Sprintf("no schedule %q", key)
	if len(keys) > 0 {
		msg += " (there are " + strings.Join(keys, ", ") + ")"
	}
	return ScheduleInfo{}, &engine.Error{Code: CodeScheduleNotFound, Category: engine.CategoryNotFound, Name: key, Message: msg,
		Suggestion: "list the schedules and use a key from the list (workflow#index)"}
}

// Firing is one run a schedule started (FireDueSchedules).
type Firing struct {
	Key   string    `json:"key"`
	At    time.Time `json:"at"`
	RunID string    `json:"run_id,omitempty"`
	Error string    `json:"error,omitempty"`
}

// FireDueSchedules fires every unpaused schedule due at the service's
// clock once: it claims the schedule's instants in the store (of replicas
// doing the same, one wins each instant), applies its catch_up policy to
// the instants missed, and starts a run of the library workflow for each
// instant it fires, recording the run. It returns the firings it made.
func (s *Service) FireDueSchedules(ctx context.Context) ([]Firing, error) {
	ss, err := s.scheduleStore()
	if err != nil {
		return nil, err
	}
	list, err := ss.ListSchedules(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []Firing
	var errs []error
	for _, sc := range list {
		if sc.Paused || sc.NextFire.After(now) {
			continue
		}
		var spec workflow.Schedule
		if err := json.Unmarshal([]byte(sc.Spec), &spec); err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", sc.Key, err))
			continue
		}
		clock, err := spec.Clock()
		if err != nil {
			errs = append(errs, fmt.Errorf("schedule %s: %w", sc.Key, err))
			continue
		}
		fire, next := dueInstants(clock, sc.NextFire, now, spec.Policy())
		if err := ss.ClaimFiring(ctx, sc.Key, sc.NextFire, next, fire); err != nil {
			if !errors.Is(err, store.ErrFiringTaken) {
				errs = append(errs, err)
			}
			continue // another replica fired it, or it changed meanwhile
		}
		if skipped := len(fire) == 0; skipped {
			s.log.Info("schedule skipped missed instants", "schedule", sc.Key, "catch_up", spec.Policy(), "next_fire", next)
		}
		for _, at := range fire {
			f := Firing{Key: sc.Key, At: at}
			runID, err := s.fireSchedule(ctx, sc.Workflow, spec.Inputs)
			if err != nil {
				f.Error = err.Error()
				s.log.Error("schedule firing did not start a run", "schedule", sc.Key, "at", at, "error", err)
			} else {
				f.RunID = runID
				if err := ss.RecordFiringRun(ctx, sc.Key, at, runID); err != nil {
					errs = append(errs, err)
				}
				s.log.Info("schedule fired", "schedule", sc.Key, "at", at, "run", runID)
			}
			out = append(out, f)
		}
	}
	return out, errors.Join(errs...)
}

// fireSchedule starts a run of the saved workflow with the inputs.
func (s *Service) fireSchedule(ctx context.Context, name string, inputs map[string]any) (string, error) {
	l, err := s.LoadLibraryWorkflow(name)
	if err != nil {
		return "", err
	}
	in := make(map[string]any, len(inputs))
	for k, v := range inputs {
		in[k] = v
	}
	return s.StartRun(ctx, l, in, false)
}

// dueInstants walks a due schedule's instants from next (at or before
// now) and returns those to fire under the catch-up policy and the first
// instant after now. The latest due instant is on time when found within
// scheduleGrace; earlier ones (and a late latest one) were missed.
func dueInstants(clock workflow.Clock, next, now time.Time, policy string) ([]time.Time, time.Time) {
	var due []time.Time // the latest MaxCatchUp due instants
	t := next
	for steps := 0; !t.After(now); steps++ {
		if steps == maxScheduleSteps {
			t = clock.Next(now)
			break
		}
		if len(due) == workflow.MaxCatchUp {
			due = append(due[:0], due[1:]...)
		}
		due = append(due, t)
		t = clock.Next(t)
	}
	if len(due) == 0 {
		return nil, t
	}
	latest := due[len(due)-1]
	onTime := now.Sub(latest) <= scheduleGrace
	switch policy {
	case workflow.CatchUpAll:
		return due, t
	case workflow.CatchUpNone:
		if onTime {
			return []time.Time{latest}, t
		}
		return nil, t
	}
	return []time.Time{latest}, t
}

// StartScheduler syncs every library workflow's schedules, keeps them in
// step with the library (OnLibraryChange, and a full sync every minute
// for files changed behind the service's back), and fires due schedules
// every tick (default 1s) until stop (or Close) is called.
func (s *Service) StartScheduler(tick time.Duration) (stop func(), err error) {
	if _, err := s.scheduleStore(); err != nil {
		return nil, err
	}
	if tick <= 0 {
		tick = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	// At once: a saved, renamed or deleted workflow's schedules change
	// before the save returns (or, from another replica, when told).
	s.OnLibraryChange(func(name string) {
		if ctx.Err() != nil {
			return
		}
		sctx, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		var err error
		if name == "" {
			err = s.SyncAllSchedules(sctx)
		} else {
			err = s.SyncSchedules(sctx, name)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Error("sync schedules", "workflow", name, "error", err)
		}
	})
	if err := s.SyncAllSchedules(ctx); err != nil {
		s.log.Error("sync schedules", "error", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		lastSync := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if time.Since(lastSync) > time.Minute {
					lastSync = time.Now()
					if err := s.SyncAllSchedules(ctx); err != nil && ctx.Err() == nil {
						s.log.Error("sync schedules", "error", err)
					}
				}
				if _, err := s.FireDueSchedules(ctx); err != nil && ctx.Err() == nil {
					s.log.Error("fire schedules", "error", err)
				}
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	s.scheduler.mu.Lock()
	s.scheduler.stops = append(s.scheduler.stops, stop)
	s.scheduler.mu.Unlock()
	return stop, nil
}

// schedulerState holds the stops of the schedulers started, for Close.
type schedulerState struct {
	mu    sync.Mutex
	stops []func()
}

// stopScheduler stops every scheduler started (Close).
func (s *Service) stopScheduler() {
	s.scheduler.mu.Lock()
	stops := s.scheduler.stops
	s.scheduler.stops = nil
	s.scheduler.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

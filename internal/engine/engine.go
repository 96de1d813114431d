// Package engine is stepwise's run state machine: it starts runs, executes
// their steps, pauses for people and agents, continues with their answers,
// and survives crashes. Every completed step is committed to the store in
// one transaction together with its events and the run's new position, so
// execution is at-least-once (a crash mid-step re-runs the step) and
// recording is exactly-once.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/cache"
	"stepwise.dev/stepwise/internal/schema"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/token"
	"stepwise.dev/stepwise/internal/workflow"
)

// Config wires an engine.
type Config struct {
	Store   store.Store
	Actions *action.Registry
	// Key is the server key: tokens are signed and secrets sealed with
	// keys derived from it.
	Key []byte
	// TokenTTL is how long a pause's token stays valid (default 24h).
	TokenTTL time.Duration
	// LookupEnv reads the environment (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// EnvHint, when LookupEnv is restricted to some variables, says how
	// the variable of a $NAME reference that reads as unset is allowed ("":
	// nothing to add); nil adds nothing.
	EnvHint func(name string) string
	// Logger receives the engine's logs (default: discard). Secrets are
	// masked per run before anything reaches it.
	Logger *slog.Logger
	// ActionOutput receives actions' free-form output (default: discard).
	ActionOutput io.Writer
	// MaxParallelRuns bounds how many runs execute steps at once
	// (default 64).
	MaxParallelRuns int
	// ShutdownGrace is how long Close waits for in-flight steps before
	// interrupting them (default 5s).
	ShutdownGrace time.Duration
	// Now returns the time (default time.Now).
	Now func() time.Time
	// MaxRecoveries is how often a step is run again after the process
	// ended while it ran (default 3): when a process ends while the step
	// runs once more, the next recovery fails the step with STEP_CRASHED
	// instead of running it (recover.go).
	MaxRecoveries int
	// Workflows finds the workflows that `workflow:` steps call, by name;
	// dir is the directory of the calling workflow's file, when it was run
	// from a file. Without it, sub-workflow steps fail.
	Workflows func(ctx context.Context, name, dir string) (*WorkflowDef, error)
	// LeaseTTL is how long a run's lease lasts without a heartbeat
	// (default 15s; lease.go): a crashed process's runs move on after it.
	LeaseTTL time.Duration
	// CommitObserver, when set, is told how long each commit of a step's
	// results took in the store (success or not): the metrics' commit
	// latency. Called on the driver's goroutine: it must be quick.
	CommitObserver func(time.Duration)
}

// WorkflowDef is a validated workflow ready to run.
type WorkflowDef struct {
	Workflow   *workflow.Workflow
	Version    string
	Definition []byte
	// Dir is the directory of the file it came from ("" for the library
	// or inline definitions): its own sub-workflows are looked up there.
	Dir string
}

// Engine executes runs.
type Engine struct {
	store     store.Store
	onCommit  func(time.Duration)
	actions   *action.Registry
	signer    *token.Signer
	sealer    *secret.Sealer
	tokenTTL  time.Duration
	lookupEnv func(string) (string, bool)
	envHint   func(name string) string
	log       *slog.Logger
	output    io.Writer
	now       func() time.Time
	grace     time.Duration
	bus       *bus
	workflows func(ctx context.Context, name, dir string) (*WorkflowDef, error)
	// maxRecoveries: see Config.MaxRecoveries.
	maxRecoveries int
	// startedWall is when this engine started by the wall clock (that of
	// the store's UpdatedAt); startedAt by e.now. A run still running that
	// no commit touched since is one a previous process was driving.
	startedWall, startedAt time.Time

	defs    *lru[*workflow.Workflow] // parsed definitions by version (lru.go)
	schemas *lru[*schema.Schema]     // compiled output schemas by version and step

	sem chan struct{}

	mu       sync.Mutex
	active   map[string]*driver // runs being driven in this process
	stopping bool
	wg       sync.WaitGroup
	// stepCtx is canceled when the shutdown grace period is over.
	stepCtx    context.Context
	cancelStep context.CancelFunc

	// warm keeps the state of runs that just stopped at a pause (warm.go).
	warm warmRuns

	timerOnce sync.Once
	timerWake chan struct{}
	timerDone chan struct{}

	// owner is the id the engine holds run leases under, nonce its
	// random part (lease.go); leases are those it holds (guarded by mu).
	owner, nonce string
	leaseTTL     time.Duration
	leases       map[string]*heldLease
	// claiming: Recover was called; the timer loop claims ready runs of
	// the whole store instead of waking only due timers (timer.go).
	claiming      atomic.Bool
	claimNow      atomic.Bool // claim at once, not at the next poll (wakeClaims)
	admitNow      atomic.Bool // admit queued runs at once (wantAdmission)
	queues        atomic.Bool // a limited run was admitted (or asked to be) here
	admittedAt    time.Time   // the timer loop's last admission (its own)
	heartbeatStop chan struct{}
	heartbeatDone chan struct{}
	closeLeases   sync.Once
	// remote follows other processes' changes to runs (runfeed.go; nil
	// until Recover, or when the store tells none).
	remote atomic.Pointer[remoteRuns]
	// mine: runs this engine was asked to drive (started, continued,
	// resumed…), the most recent maxMine: before Recover, the timer loop
	// wakes only theirs, so that a one-shot command does not drive other
	// processes' runs.
	mine *cache.LRU[string, struct{}]
	// retrying: runs whose lease another live process holds, with a look
	// again armed for when it expires (notHeld).
	retrying map[string]bool
}

type driver struct {
	again  bool // another drive was requested while this one ran
	cancel context.CancelFunc
}

// New builds an engine. It does not resume anything; call Recover.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("engine: no store")
	}
	if len(cfg.Key) != token.KeySize {
		return nil, fmt.Errorf("engine: the server key must be %d bytes, not %d", token.KeySize, len(cfg.Key))
	}
	sealer, err := secret.NewSealer(cfg.Key)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		store:     cfg.Store,
		onCommit:  cfg.CommitObserver,
		actions:   cfg.Actions,
		signer:    token.NewSigner(cfg.Key),
		sealer:    sealer,
		tokenTTL:  cfg.TokenTTL,
		lookupEnv: cfg.LookupEnv,
		envHint:   cfg.EnvHint,
		log:       cfg.Logger,
		output:    cfg.ActionOutput,
		now:       cfg.Now,
		grace:     cfg.ShutdownGrace,
		workflows: cfg.Workflows,
		bus:       newBus(),
		defs:      newLRU[*workflow.Workflow](maxDefinitions),
		schemas:   newLRU[*schema.Schema](maxSchemas),
		active:    map[string]*driver{},
		leases:    map[string]*heldLease{},
		retrying:  map[string]bool{},
		mine:      cache.New[string, struct{}](maxMine),
		leaseTTL:  cfg.LeaseTTL,
	}
	if e.leaseTTL <= 0 {
		e.leaseTTL = defaultLeaseTTL
	}
	e.owner, e.nonce = newOwner()
	liveEngines.Lock()
	liveEngines.m[e.nonce] = true
	liveEngines.Unlock()
	if e.actions == nil {
		e.actions = action.Builtins()
	}
	if e.tokenTTL <= 0 {
		e.tokenTTL = 24 * time.Hour
	}
	if e.lookupEnv == nil {
		e.lookupEnv = os.LookupEnv
	}
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if e.output == nil {
		e.output = io.Discard
	}
	if e.now == nil {
		e.now = time.Now
	}
	// The wall clock alone (no monotonic reading): compared with the
	// times the store writes.
	e.startedWall, e.startedAt = time.Now().Round(0), e.now()
	e.maxRecoveries = cfg.MaxRecoveries
	if e.maxRecoveries <= 0 {
		e.maxRecoveries = defaultMaxRecoveries
	}
	if e.grace <= 0 {
		e.grace = 5 * time.Second
	}
	n := cfg.MaxParallelRuns
	if n <= 0 {
		n = 64
	}
	e.sem = make(chan struct{}, n)
	e.stepCtx, e.cancelStep = context.WithCancel(context.Background())
	e.timerWake = make(chan struct{}, 1)
	e.timerDone = make(chan struct{})
	e.heartbeatStop = make(chan struct{})
	e.heartbeatDone = make(chan struct{})
	go e.heartbeat()
	e.startTimers(e.stepCtx)
	return e, nil
}

// Subscribe returns events of one run (or of all runs when runID is "")
// as they happen. Call the returned function to stop.
func (e *Engine) Subscribe(runID string) (<-chan Event, func()) {
	if runID == "" {
		return e.bus.subscribe(runID, 1024)
	}
	// A run's subscriber (a caller waiting for it) needs its latest events;
	// a buffer of a thousand costs 120 KB per wait.
	return e.bus.subscribe(runID, 64)
}

// Consume calls fn with each event of a subscription, in order, until ctx
// is done or the subscription closes.
func Consume(ctx context.Context, events <-chan Event, fn func(Event)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			fn(ev)
		}
	}
}

// SubscribeWanting subscribes to the events of every run, like
// SubscribeBuffered("", n), for a subscriber that wants only some runs'
// events and says which with interest (called under the events' lock:
// quick, and calling no engine method): of the runs other processes
// change, only those are read and forwarded to this process for it
// (runfeed.go).
func (e *Engine) SubscribeWanting(n int, interest func(runID string) bool) (<-chan Event, func()) {
	return e.bus.subscribeAs("", max(n, 1), interest)
}

// SubscribeBuffered is Subscribe with a buffer of n events: a subscriber
// that falls further behind loses the oldest.
func (e *Engine) SubscribeBuffered(runID string, n int) (<-chan Event, func()) {
	return e.bus.subscribe(runID, max(n, 1))
}

// Recover resumes the runs left running: those whose lease is free or
// expired, and those held by a holder known to be gone (lease.go), are
// claimed and driven here (their in-flight step runs again, unless the
// process ended while it ran more than MaxRecoveries times: recover.go);
// runs another live process drives are left to it. From then on the
// engine keeps claiming ready runs of the whole store (timer.go): runs
// orphaned by a process that ended, continued elsewhere, or due.
func (e *Engine) Recover(ctx context.Context) (int, error) {
	ids, err := e.store.RunIDsByStatus(ctx, store.StatusRunning, store.StatusPending)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		// Runs whose lease is free or expired are the claims' below (as
		// many as there are free slots); those of a holder known to be
		// gone are taken over now rather than after their TTL.
		l, err := e.store.GetLease(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return n, err
		}
		if l.Owner == "" || l.Owner == e.owner || l.Expired(e.now()) || !holderGone(l.Owner) {
			continue
		}
		if _, err := e.hold(ctx, id, false); err != nil {
			if !errors.Is(err, store.ErrLeaseHeld) && !errors.Is(err, store.ErrNotFound) {
				return n, err
			}
			continue
		}
		e.schedule(id)
		n++
	}
	e.claiming.Store(true)
	e.listenRuns()
	for {
		k := e.claim()
		n += k
		if k < claimBatch {
			break
		}
	}
	return n, nil
}

// schedule makes sure a driver advances the run. At most one driver per
// run runs in this process; a request while one runs makes it go again.
func (e *Engine) schedule(runID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return
	}
	e.mine.Add(runID, struct{}{})
	if d, ok := e.active[runID]; ok {
		d.again = true
		return
	}
	ctx, d := e.registerLocked(runID)
	go e.runDriver(ctx, runID, d, nil, false)
}

// registerLocked makes a new driver the run's, counted by the wait group;
// the caller holds e.mu and starts it.
func (e *Engine) registerLocked(runID string) (context.Context, *driver) {
	ctx, cancel := context.WithCancel(e.stepCtx)
	d := &driver{cancel: cancel}
	e.active[runID] = d
	e.wg.Add(1)
	return ctx, d
}

// handOff is the driver of a run reserved by a Continue that hands it the
// run's state (with the answer queued in its pipeline): registered as the
// run's driver, counted by the engine's wait group, holding a slot of the
// semaphore, so that it starts at once.
type handOff struct {
	e     *Engine
	runID string
	d     *driver
	ctx   context.Context
}

// reserveDriver reserves the driver of a run for a hand-off; nil when a
// driver is active, the engine stops or every slot is taken (the Continue
// then commits its answer itself and schedules the run).
func (e *Engine) reserveDriver(runID string) *handOff {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return nil
	}
	if _, ok := e.active[runID]; ok {
		return nil
	}
	select {
	case e.sem <- struct{}{}:
	default:
		return nil
	}
	ctx, d := e.registerLocked(runID)
	return &handOff{e: e, runID: runID, d: d, ctx: ctx}
}

// abandon gives the reservation up: no driver is started.
func (h *handOff) abandon() {
	e := h.e
	e.mu.Lock()
	if d, ok := e.active[h.runID]; ok && d == h.d {
		delete(e.active, h.runID)
	}
	e.mu.Unlock()
	h.d.cancel()
	<-e.sem
	e.wg.Done()
}

// start runs the reserved driver, from first (nil: loaded from the store).
func (h *handOff) start(first *runState) {
	go h.e.runDriver(h.ctx, h.runID, h.d, first, true)
}

// runDriver drives runID until nobody asks for more. It owns d and one
// count of the wait group. The first drive starts from from when it is not
// nil; slotHeld says its semaphore slot is taken already (a hand-off).
func (e *Engine) runDriver(ctx context.Context, runID string, d *driver, from *runState, slotHeld bool) {
	defer e.wg.Done()
	defer func() { d.cancel() }()
	// What actions keep open for this run (connections) lives as long
	// as this driver: closed before wg.Done, so Close waits for it.
	scope := action.NewScope()
	defer func() {
		if err := scope.Close(); err != nil {
			e.log.Warn("close the run's action resources", "run_id", runID, "err", err)
		}
	}()
	for {
		if !slotHeld {
			e.sem <- struct{}{}
		}
		// A hand-off (from) holds the lease already; should it have been
		// lost since, the driver's first commit is refused (fence) and the
		// Continue tries again.
		if _, err := e.hold(ctx, runID, from != nil); err != nil && from == nil {
			<-e.sem
			e.retire(runID)
			e.notHeld(runID, err)
			return
		}
		e.drive(ctx, runID, scope, from)
		from, slotHeld = nil, false
		<-e.sem
		e.mu.Lock()
		if d.again && !e.stopping {
			d.again = false
			if ctx.Err() != nil {
				// Interrupted, then scheduled again (a cancel that hands
				// the run to its compensations): drive with a fresh context.
				d.cancel()
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(e.stepCtx)
				d.cancel = cancel
			}
			e.mu.Unlock()
			continue
		}
		e.mu.Unlock()
		e.retire(runID)
		return
	}
}

// retire ends the driver of a run: it is no longer active, and its lease
// is released. Both happen under one lock, so that a driver started after
// it does not use the lease being released (it acquires a new one).
func (e *Engine) retire(runID string) {
	e.mu.Lock()
	delete(e.active, runID)
	h, ok := e.leases[runID]
	delete(e.leases, runID)
	e.mu.Unlock()
	if ok && !h.pending {
		e.releaseLease(h.lease)
	}
}

// interrupt stops the driver of a run, if any (cancel).
func (e *Engine) interrupt(runID string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.active[runID]; ok {
		d.cancel()
	}
}

func (e *Engine) isStopping() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopping
}

// Close stops taking work, lets in-flight steps finish for the grace
// period, then interrupts them. Runs stay resumable: an interrupted step
// runs again on the next Recover.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.stopping = true
	e.mu.Unlock()
	done := make(chan struct{})
	go func() {
		e.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(e.grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		e.cancelStep()
		<-done
	case <-ctx.Done():
		e.cancelStep()
		<-done
	}
	e.cancelStep()
	<-e.timerDone
	e.stopRemote()
	e.closeLeases.Do(func() {
		close(e.heartbeatStop)
		<-e.heartbeatDone
		e.releaseAll()
		liveEngines.Lock()
		delete(liveEngines.m, e.nonce)
		liveEngines.Unlock()
	})
	return nil
}

// Wait blocks until the run is no longer queued, pending or running (it
// waits, finished or was canceled), or ctx ends. It returns the run's
// status.
func (e *Engine) Wait(ctx context.Context, runID string) (string, error) {
	events, stop := e.Subscribe(runID)
	defer stop()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		run, err := e.store.GetRun(ctx, runID)
		if err != nil {
			return "", notFound(runID, err)
		}
		if !inProgress(run.Status) {
			return run.Status, nil
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return run.Status, ctx.Err()
			case ev, ok := <-events:
				if !ok {
					break wait
				}
				if !inProgress(ev.Status) {
					break wait // re-read to confirm
				}
			case <-tick.C: // the driver may live in another process
				break wait
			}
		}
	}
}

// inProgress reports whether a run in status goes on by itself.
func inProgress(status string) bool {
	return status == store.StatusRunning || status == store.StatusPending || status == store.StatusQueued
}

func notFound(runID string, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return &Error{Code: CodeRunNotFound, Category: CategoryNotFound, Message: "no run " + runID, RunID: runID, Err: err,
			Suggestion: "list the runs and use a run id from the list"}
	}
	return err
}

// Definition returns the workflow a version pinned.
func (e *Engine) Definition(ctx context.Context, version string) (*workflow.Workflow, error) {
	return e.definition(ctx, version)
}

// storeCommit is the store's Commit of a step's results, timed for
// Config.CommitObserver.
func (e *Engine) storeCommit(ctx context.Context, c store.Commit) (store.CommitResult, error) {
	if e.onCommit == nil {
		return e.store.Commit(ctx, c)
	}
	t := time.Now()
	res, err := e.store.Commit(ctx, c)
	e.onCommit(time.Since(t))
	return res, err
}

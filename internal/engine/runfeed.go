package engine

import (
	"context"
	"sync"

	"stepwise.dev/stepwise/internal/cache"
	"stepwise.dev/stepwise/internal/store"
)

// RunFeed is implemented by stores shared between processes that tell
// each other about the runs they change (store/postgres: LISTEN/NOTIFY).
// A store without one is polled: the claim loop every claimPoll, a Wait
// every half second.
type RunFeed interface {
	// ListenRuns calls fn with the id of each run another process
	// changed, and whether the change may have made it ready to drive
	// (created, answered, resumed), until stop is called; fn("", true)
	// says that notices may have been lost.
	ListenRuns(ctx context.Context, fn func(runID string, ready bool)) (stop func(), err error)
}

// maxRemoteRuns bounds how many runs the engine remembers the last event
// it published of (remote.seen): runs of other processes that someone
// here watches, and runs it drives.
const maxRemoteRuns = 4096

// remoteRuns forwards what other processes record to this process: a
// notice wakes the claim loop (a run made ready elsewhere is claimed at
// once, not at the next poll), and a watched run's new events are read
// from the store and published on the bus, so that waits, progress and
// subscriptions work whichever process drives the run.
type remoteRuns struct {
	stop func()
	seen *cache.LRU[string, int64] // run id → last event seq published here

	mu      sync.Mutex
	pending map[string]bool
	kick    chan struct{}
	done    chan struct{}
}

// listenRuns starts following other processes' changes, when the store
// tells them (once; Recover calls it).
func (e *Engine) listenRuns() {
	feed, ok := e.store.(RunFeed)
	if !ok || e.remote.Load() != nil {
		return
	}
	r := &remoteRuns{seen: cache.New[string, int64](maxRemoteRuns), pending: map[string]bool{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	stop, err := feed.ListenRuns(e.stepCtx, func(runID string, ready bool) {
		if ready && e.claiming.Load() {
			e.wakeClaims()
		}
		if runID == "" || (!e.bus.watched(runID) && !e.driving(runID)) {
			return
		}
		r.mu.Lock()
		r.pending[runID] = true
		r.mu.Unlock()
		select {
		case r.kick <- struct{}{}:
		default:
		}
	})
	if err != nil {
		e.log.Warn("listen to other processes' runs (they are polled instead)", "err", err)
		return
	}
	r.stop = stop
	e.remote.Store(r)
	go e.forwardLoop(r)
}

// forwardLoop publishes the new events of the runs other processes
// changed, until the engine closes.
func (e *Engine) forwardLoop(r *remoteRuns) {
	defer close(r.done)
	for {
		select {
		case <-e.stepCtx.Done():
			return
		case <-r.kick:
		}
		r.mu.Lock()
		ids := make([]string, 0, len(r.pending))
		for id := range r.pending {
			ids = append(ids, id)
		}
		clear(r.pending)
		r.mu.Unlock()
		for _, id := range ids {
			e.forward(r, id)
		}
	}
}

// forward publishes the events of a run recorded since the last one
// published here (for a run not seen yet, its latest few).
//
// A run driven here that another process canceled, finished or paused
// (held) has its driver interrupted, as a cancel in this process does:
// its step in flight stops now rather than when it ends (its commit would
// be refused anyway).
func (e *Engine) forward(r *remoteRuns, runID string) {
	ctx := e.stepCtx
	run, err := e.store.GetRun(ctx, runID)
	if err != nil {
		return
	}
	if (store.Finished(run.Status) || run.Status == store.StatusPaused) && e.driving(runID) {
		e.log.Info("the run was stopped by another process; its driver here stops", "run_id", runID, "status", run.Status)
		e.interrupt(runID)
	}
	if !e.bus.watched(runID) {
		return
	}
	after, ok := r.seen.Get(runID)
	if !ok {
		after = max(run.EventSeq-64, 0)
	}
	if run.EventSeq <= after {
		return
	}
	evs, err := e.store.Events(ctx, runID, after, 0)
	if err != nil || len(evs) == 0 {
		return
	}
	out := make([]Event, 0, len(evs))
	for _, ev := range evs {
		out = append(out, Event{RunID: runID, Seq: ev.Seq, Type: ev.Type, StepID: ev.StepID, Data: ev.Data, At: ev.At, Status: run.Status})
	}
	// A run that moved on since the read above ends with a newer status:
	// the next notice publishes what follows.
	r.seen.Add(runID, evs[len(evs)-1].Seq)
	e.bus.publish(out...)
}

// sawLocal records the last event this process published of a run, so
// that a notice from another process forwards only what came after.
func (e *Engine) sawLocal(runID string, seqs []int64) {
	r := e.remote.Load()
	if r == nil || len(seqs) == 0 {
		return
	}
	last := seqs[len(seqs)-1]
	if prev, ok := r.seen.Get(runID); !ok || prev < last {
		r.seen.Add(runID, last)
	}
}

// stopRemote stops following other processes (Close).
func (e *Engine) stopRemote() {
	r := e.remote.Load()
	if r == nil {
		return
	}
	r.stop()
	<-r.done
}

// driving reports whether a driver of the run is active here.
func (e *Engine) driving(runID string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.active[runID]
	return ok
}

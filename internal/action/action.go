// Package action defines the executable kinds of automated steps: the
// Action interface, the Registry that names them, and the built-in actions.
// The engine renders a step's `with` and calls Run; actions never see
// templates, and get an idempotency key so that the at-least-once execution
// of a step (a crash re-runs it) can be made safe by the callee.
package action

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"stepwise.dev/stepwise/code"
)

// Safety tiers of an action.
const (
	ReadOnly    = code.ReadOnly
	Mutating    = code.Mutating
	Destructive = code.Destructive
)

// Call is one invocation of an action.
type Call struct {
	// Input is the step's rendered `with`.
	Input map[string]any
	// IdempotencyKey names one execution of the step (run/step, with
	// #visit for a repeated visit and /repeat-N for a repeat's N-th poll;
	// nested steps use their instance key). It is the same for every retry
	// of that execution and for a re-execution after a crash, so a callee
	// can recognize a repeated request.
	IdempotencyKey string
	// Attempt counts the tries of this execution, from 1 (retries).
	Attempt int
	// Logger receives the action's log lines (already tied to the run and
	// step, and masking secrets).
	Logger *slog.Logger
	// Output receives free-form text output (progress, command output); it
	// is never stdout of the server. An action that writes several streams
	// at once (a command's stdout and stderr) writes each through its own
	// StreamOf(Output).
	Output io.Writer
	// Scope keeps what the action may reuse in later steps of the same run
	// (connections) and is closed when the engine's driver for the run
	// exits. It may be nil (a call outside a driver).
	Scope *Scope
}

// Streams is implemented by an Output that keeps state between writes
// (the engine's holds back the end of a piece of a long line that a secret
// could continue in the next piece): Stream returns a writer for one of
// several streams written at once, so that a piece of one is never taken
// for the continuation of another's.
type Streams interface {
	Stream() io.Writer
}

// StreamOf returns a writer for one stream of w: w's Stream when w is a
// Streams, else w itself.
func StreamOf(w io.Writer) io.Writer {
	if s, ok := w.(Streams); ok {
		return s.Stream()
	}
	return w
}

// Action is an executable kind of automated step.
type Action interface {
	// Name is the name steps use in `uses:`.
	Name() string
	// Description says what it does, for people and agents.
	Description() string
	// Safety is ReadOnly, Mutating or Destructive.
	Safety() string
	// Run executes the action. The context carries the step's timeout and
	// the run's cancellation.
	Run(ctx context.Context, call Call) (any, error)
}

// Pure is implemented by actions that have no effect outside the engine and
// compute their output from their input alone (noop, transform). The engine
// may start the step after a pure one before the pure one's record is
// durable: a crash in between re-runs it, and nobody can tell.
type Pure interface {
	Pure() bool
}

// IsPure reports whether a says it is pure.
func IsPure(a Action) bool {
	p, ok := a.(Pure)
	return ok && p.Pure()
}

// Error is an action failure with a flag saying whether trying again may
// help (network errors, 5xx) — retries use it.
type Error struct {
	Err       error
	Retryable bool
	// RetryAfter is how long the callee asked to wait before trying again
	// (an HTTP Retry-After); the engine waits at least that long, within
	// the step's max_backoff. Zero when the callee said nothing.
	RetryAfter time.Duration
	// HTTPStatus is the status of an HTTP response the action did not
	// expect (0: no response, or not HTTP).
	HTTPStatus int
	// ResponseBody is the start of that response's body (at most 512
	// bytes), with the request's secrets masked.
	ResponseBody string
	// Code is the stable code of a failure a caller can act on
	// (NETWORK_NOT_ALLOWED, SHELL_NOT_ALLOWED); "" for most failures.
	Code string
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether err is marked as retryable.
func Retryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// Registry names actions. It is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	actions map[string]Action
	schemas schemaCache
	// gen counts registrations and removals, so that what is derived
	// from the registry (a search index) knows when to rebuild.
	gen uint64
}

// NewRegistry returns a registry holding the given actions.
func NewRegistry(actions ...Action) *Registry {
	r := &Registry{actions: map[string]Action{}}
	for _, a := range actions {
		r.actions[a.Name()] = a
	}
	return r
}

// Builtins returns a registry with the built-in actions.
func Builtins() *Registry {
	return NewRegistry(Log{}, Transform{}, Noop{}, HTTP{})
}

// Register adds (or replaces) an action.
func (r *Registry) Register(a Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions[a.Name()] = a
	r.schemas.drop(a.Name())
	r.gen++
}

// Unregister removes an action (a catalog disabled or removed).
func (r *Registry) Unregister(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.actions, name)
	r.schemas.drop(name)
	r.gen++
}

// Generation changes whenever an action is registered, replaced or
// removed.
func (r *Registry) Generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// Infos describes every registered action, sorted by name.
func (r *Registry) Infos() []Info {
	var out []Info
	for _, n := range r.Names() {
		if a, ok := r.Get(n); ok {
			out = append(out, InfoOf(a))
		}
	}
	return out
}

// Get returns the named action.
func (r *Registry) Get(name string) (Action, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.actions[name]
	return a, ok
}

// Names lists the registered names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.actions))
	for n := range r.actions {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// HasAction lets the registry act as a workflow.Resolver for actions.
func (r *Registry) HasAction(name string) (bool, []string) {
	if _, ok := r.Get(name); ok {
		return true, nil
	}
	return false, r.Names()
}

func inputError(action, format string, args ...any) error {
	return &Error{Err: fmt.Errorf("%s: %s", action, fmt.Sprintf(format, args...))}
}

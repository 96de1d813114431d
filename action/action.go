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
)

// Safety tiers of an action.
const (
	ReadOnly    = "read-only"
	Mutating    = "mutating"
	Destructive = "destructive"
)

// Call is one invocation of an action.
type Call struct {
	// Input is the step's rendered `with`.
	Input map[string]any
	// IdempotencyKey is run/step/attempt: the same for re-executions of
	// the same attempt after a crash.
	IdempotencyKey string
	// Logger receives the action's log lines (already tied to the run and
	// step, and masking secrets).
	Logger *slog.Logger
	// Output receives free-form text output (progress, command output); it
	// is never stdout of the server.
	Output io.Writer
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

// Error is an action failure with a flag saying whether trying again may
// help (network errors, 5xx) — retries use it.
type Error struct {
	Err       error
	Retryable bool
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
	return NewRegistry(Log{}, Transform{}, Noop{})
}

// Register adds (or replaces) an action.
func (r *Registry) Register(a Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.actions[a.Name()] = a
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

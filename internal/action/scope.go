package action

import (
	"errors"
	"io"
	"sync"
)

// Scope holds what actions keep open while the engine drives one run —
// connections worth reusing from one step to the next — and closes it when
// that driver exits: the run waits, finishes, fails, is interrupted, or the
// engine stops. A run that continues later gets a new scope, so nothing
// stays open while a run waits for a person.
//
// A nil *Scope is valid and holds nothing: an action called outside a
// driver opens what it needs for the one call.
type Scope struct {
	mu     sync.Mutex
	values map[any]io.Closer
	order  []any // creation order; Close goes in reverse
	closed bool
}

// NewScope returns an empty scope.
func NewScope() *Scope { return &Scope{values: map[any]io.Closer{}} }

// Value returns the value stored under key, creating it with create the
// first time. Keys are compared like map keys; use an unexported type per
// action so that actions do not collide. create runs under the scope's
// lock: it should only allocate, not connect. ok is false when the scope is nil
// or already closed: the caller then must not keep anything open.
func (s *Scope) Value(key any, create func() io.Closer) (v io.Closer, ok bool) {
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	if v, ok := s.values[key]; ok {
		return v, true
	}
	v = create()
	s.values[key] = v
	s.order = append(s.order, key)
	return v, true
}

// Close closes every value, the newest first, and refuses new ones. It
// returns the values' errors joined. Closing twice is a no-op.
func (s *Scope) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	values, order := s.values, s.order
	s.values, s.order = nil, nil
	s.mu.Unlock()
	// Outside the lock: closing a connection may take seconds (a
	// subprocess given time to exit) and must not block Value callers,
	// which now get ok == false at once.
	var errs []error
	for i := len(order) - 1; i >= 0; i-- {
		if err := values[order[i]].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

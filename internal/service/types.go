package service

import (
	"context"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

// The types and functions of the engine and the store the surfaces (cli,
// mcpserver, web) need, named here so that service is their one facade:
// a surface imports service and code, never engine or store.

// Error is an error the caller can act on: a code, a category, a message
// and what to do next.
type Error = engine.Error

// RunError is the error a failed run records.
type RunError = engine.RunError

// Pause is an open pause of a run: a question for a person or a task for
// an agent.
type Pause = engine.Pause

// Question is a question as shown to the person answering it.
type Question = engine.Question

// ContinueResult is what continuing a run with an answer did.
type ContinueResult = engine.ContinueResult

// Refusal counts the refused answers of one open pause.
type Refusal = engine.Refusal

// Event is something that happened in a run, as published to subscribers.
type Event = engine.Event

// StoredEvent is an event as the store keeps it in a run's history.
type StoredEvent = store.Event

// RunFilter selects runs to list or purge.
type RunFilter = store.RunFilter

// PurgeResult is what a purge deleted (or, dry, would delete).
type PurgeResult = store.PurgeResult

// ErrConflict: the run changed concurrently (errors.Is).
var ErrConflict = store.ErrConflict

// CodeOf returns the error code of err (an *Error's), or "".
func CodeOf(err error) string { return engine.CodeOf(err) }

// Consume calls fn with each event of a subscription, in order, until ctx
// is done or the subscription closes.
func Consume(ctx context.Context, events <-chan Event, fn func(Event)) {
	engine.Consume(ctx, events, fn)
}

// Finished reports whether a run status is final.
func Finished(status string) bool { return store.Finished(status) }

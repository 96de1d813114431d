package engine

import (
	"context"
	"log/slog"
	"sync"
)

// lazyAttrs is a slog.Handler that hands its attributes to the inner
// handler only when something is logged. Every action call gets a logger
// naming its run and step, and most actions never log: slog's With would
// have the inner handler format the attributes up front, on every step.
type lazyAttrs struct {
	inner slog.Handler
	attrs []slog.Attr
	once  sync.Once
	with  slog.Handler
}

func (l *lazyAttrs) handler() slog.Handler {
	l.once.Do(func() { l.with = l.inner.WithAttrs(l.attrs) })
	return l.with
}

// Enabled implements slog.Handler: attributes do not change the level.
func (l *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return l.inner.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (l *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return l.handler().Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (l *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler { return l.handler().WithAttrs(attrs) }

// WithGroup implements slog.Handler.
func (l *lazyAttrs) WithGroup(name string) slog.Handler { return l.handler().WithGroup(name) }

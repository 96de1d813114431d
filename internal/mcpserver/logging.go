package mcpserver

//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but stays for clients of earlier protocols (issue 23)

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionLog is a slog.Handler that sends records to every connected
// session as MCP log notifications; each session's logging/setLevel
// decides what it receives (nothing until it sets a level). Records reach
// it already masked: the engine masks each run's secrets first. It is made
// before the server (the engine logs to it) and attached to it after.
// Sending happens on its own goroutine: a slow client never holds up a
// run, it loses log messages instead.
type SessionLog struct {
	q     *logQueue
	attrs []slog.Attr
	group string
}

type logQueue struct {
	srv  atomic.Pointer[Server]
	ch   chan *mcp.LoggingMessageParams
	once sync.Once
}

// NewSessionLog returns a handler that drops records until Attach.
func NewSessionLog() *SessionLog {
	return &SessionLog{q: &logQueue{ch: make(chan *mcp.LoggingMessageParams, 1024)}}
}

// Attach starts sending records to the sessions of s.
func (h *SessionLog) Attach(s *Server) {
	h.q.srv.Store(s)
	h.q.once.Do(func() {
		go func() {
			for p := range h.q.ch {
				for ss := range h.q.srv.Load().mcp.Sessions() {
					_ = ss.Log(context.Background(), p)
				}
			}
		}()
	})
}

// Enabled implements slog.Handler.
func (h *SessionLog) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (h *SessionLog) Handle(ctx context.Context, r slog.Record) error {
	data := map[string]any{"msg": r.Message}
	add := func(a slog.Attr) bool {
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		data[key] = a.Value.Resolve().Any()
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if h.q.srv.Load() == nil {
		return nil
	}
	select {
	case h.q.ch <- &mcp.LoggingMessageParams{Level: mcpLevel(r.Level), Logger: "stepwise", Data: data}:
	default: // the clients do not keep up: drop
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (h *SessionLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), attrs...)
	return &c
}

// WithGroup implements slog.Handler.
func (h *SessionLog) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}

func mcpLevel(l slog.Level) mcp.LoggingLevel {
	switch {
	case l >= slog.LevelError:
		return "error"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	default:
		return "debug"
	}
}

// TeeHandler sends every record to each handler that is enabled for it.
type TeeHandler []slog.Handler

// Enabled implements slog.Handler.
func (t TeeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range t {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

// Handle implements slog.Handler.
func (t TeeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range t {
		if h.Enabled(ctx, r.Level) {
			_ = h.Handle(ctx, r.Clone())
		}
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (t TeeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(TeeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

// WithGroup implements slog.Handler.
func (t TeeHandler) WithGroup(name string) slog.Handler {
	out := make(TeeHandler, len(t))
	for i, h := range t {
		out[i] = h.WithGroup(name)
	}
	return out
}

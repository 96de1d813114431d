package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// followLibrary notices library changes — saves through any surface
// (told at once) and edits of the files themselves (seen by polling every
// LibraryPoll) — and tells clients: resources/updated for
// stepwise://workflows and the changed stepwise://workflows/{name}, and
// the exposed wf_ tools re-synced (tools/list_changed).
func (s *Server) followLibrary(ctx context.Context) {
	kick := make(chan struct{}, 1)
	s.svc.OnLibraryChange(func(string) {
		select {
		case kick <- struct{}{}:
		default:
		}
	})
	poll := s.opts.LibraryPoll
	switch {
	case poll > 0:
	case s.svc.SharedLibrary():
		// No files to poll: changes through any replica are pushed
		// (service.OnLibraryChange); the poll is a safety net.
		poll = time.Minute
	default:
		poll = 2 * time.Second
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		s.checkLibrary(ctx)
	}
}

// checkLibrary compares the library with what was seen last and notifies
// the differences.
func (s *Server) checkLibrary(ctx context.Context) {
	s.syncCatalogs(ctx)
	ws, err := s.svc.ListWorkflows(ctx, "")
	if err != nil {
		s.log.Warn("follow the library", "error", err)
		return
	}
	now := make(map[string]string, len(ws))
	for _, w := range ws {
		now[w.Name] = w.Version
	}
	s.libMu.Lock()
	first := s.libSeen == nil
	var changed []string
	for name, v := range now {
		if s.libSeen[name] != v {
			changed = append(changed, name)
		}
	}
	for name := range s.libSeen {
		if _, ok := now[name]; !ok {
			changed = append(changed, name)
		}
	}
	s.libSeen = now
	s.libMu.Unlock()
	if s.opts.ExposeWorkflows {
		s.syncExposed(ws)
	}
	if first || len(changed) == 0 {
		return
	}
	s.updated(ctx, uriWorkflows)
	for _, name := range changed {
		s.updated(ctx, uriWorkflows+"/"+name)
	}
}

// updated sends resources/updated for uri when a session subscribed to it.
func (s *Server) updated(ctx context.Context, uri string) {
	if s.subs.watched(uri) {
		_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

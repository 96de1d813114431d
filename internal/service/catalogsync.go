package service

import (
	"net/http"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/catalog"
)

// catalogFetchTimeout bounds downloading a document imported from a URL.
const catalogFetchTimeout = 30 * time.Second

// catalogs keeps the action registry in step with the catalogs directory:
// the operations of every enabled catalog are registered, nothing else.
type catalogs struct {
	// mu serializes changes: a store write and the registry update after
	// it are one step for the other callers of this service.
	mu        sync.Mutex
	store     catalog.Backend
	rt        catalog.Runtime
	allowURLs bool
	// fetch downloads documents imported from URLs (allowURLs), through
	// the network policy.
	fetch *http.Client
	// actions are the registered action names by catalog.
	actions map[string][]string
	// seen are the catalogs' stamps as last synced, to notice changes
	// made by another process (the CLI next to a server, a replica).
	seen map[string]string
}

// openCatalogs registers the catalogs' operations; they and imports from
// URLs connect through transport (the network policy's).
func (s *Service) openCatalogs(opts Options, transport http.RoundTripper) {
	client := opts.CatalogHTTPClient
	if client == nil {
		client = &http.Client{Transport: transport}
	}
	s.catalogs = &catalogs{store: s.openCatalogStore(),
		rt: catalog.Runtime{Client: client, LookupEnv: workflowEnv(opts)}, allowURLs: opts.AllowCatalogURLs,
		fetch:   &http.Client{Timeout: catalogFetchTimeout, Transport: transport},
		actions: map[string][]string{}, seen: map[string]string{}}
	s.SyncCatalogs()
}

// SyncCatalogs brings the registry in step with the catalogs changed
// since the last sync (by another process: this one's changes apply at
// once). It reports whether anything changed. Unreadable catalogs are
// logged and their actions unregistered.
func (s *Service) SyncCatalogs() bool {
	cs := s.catalogs
	cs.mu.Lock()
	defer cs.mu.Unlock()
	stamps, err := cs.store.Stamps()
	if err != nil {
		s.log.Warn("catalogs", "error", err)
		return false
	}
	changed := false
	for name, st := range stamps {
		if old, ok := cs.seen[name]; ok && old == st {
			continue
		}
		changed = true
		cs.seen[name] = st
		c, err := cs.store.Get(name)
		if err != nil {
			s.log.Warn("catalog not loaded", "catalog", name, "error", err)
			s.dropCatalog(name)
			continue
		}
		s.applyCatalog(c)
	}
	for name := range cs.seen {
		if _, ok := stamps[name]; !ok {
			changed = true
			delete(cs.seen, name)
			s.dropCatalog(name)
		}
	}
	return changed
}

// applyCatalog registers an enabled catalog's actions in place of those
// it had; a disabled one's are unregistered. Called with mu held.
func (s *Service) applyCatalog(c *catalog.Catalog) {
	s.dropCatalog(c.Name)
	if !c.Enabled {
		return
	}
	acts := c.Actions(s.catalogs.rt)
	names := make([]string, len(acts))
	for i, a := range acts {
		s.Actions.Register(a)
		names[i] = a.Name()
	}
	s.catalogs.actions[c.Name] = names
	s.stamp(c.Name)
	s.forgetSummaries()
}

// dropCatalog unregisters a catalog's actions. Called with mu held.
func (s *Service) dropCatalog(name string) {
	for _, a := range s.catalogs.actions[name] {
		s.Actions.Unregister(a)
	}
	delete(s.catalogs.actions, name)
	s.stamp(name)
	s.forgetSummaries()
}

// stamp records the current stamp of a catalog this process wrote, so
// that the next sync does not read it again.
func (s *Service) stamp(name string) {
	st := s.catalogs.store.Stamp(name)
	if st == "" {
		delete(s.catalogs.seen, name)
		return
	}
	s.catalogs.seen[name] = st
}

// forgetSummaries drops the cached validation of library workflows: with
// actions gone or added, a workflow's validity may have changed.
func (s *Service) forgetSummaries() {
	s.summaries.mu.Lock()
	s.summaries.entries = nil
	s.summaries.mu.Unlock()
	// The search index shows validity, which depends on the actions.
	s.InvalidateSearch()
}

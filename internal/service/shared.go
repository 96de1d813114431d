package service

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/home"
	"stepwise.dev/stepwise/internal/library"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/store/postgres"
)

// What replicas on one PostgreSQL database share besides runs: the
// library, the server key, catalogs and secret pages live in the
// database, and a change feed tells the other replicas what changed. On
// SQLite all of it stays the home's files, and nothing here is used.

// changeFeed carries change notices to the other processes on the same
// database (postgres.Feed: LISTEN/NOTIFY).
type changeFeed interface {
	// Publish tells the others that name of topic changed.
	Publish(ctx context.Context, topic, name string) error
	// Listen calls fn with every notice the others publish, and with
	// ("", "") when some may have been lost; until stop is called.
	Listen(ctx context.Context, fn func(topic, name string)) (stop func(), err error)
}

// The topics of the change feed.
const (
	topicLibrary = "library"
	topicCatalog = "catalog"
)

// keyName is the name of the server key in the database.
const keyName = "server"

// shared is the database's part of a store that replicas share, nil for
// a store that is not (SQLite).
func shared(st store.Store) *postgres.Store {
	pg, _ := st.(*postgres.Store)
	return pg
}

// serverKey returns the server key: $STEPWISE_SECRET_KEY when set, else
// the database's when replicas share one (seeded with the home's key
// file when it has one, so that the tokens and secrets it sealed stay
// valid), else the home's key file.
func serverKey(ctx context.Context, h *home.Home, st store.Store) ([]byte, error) {
	pg := shared(st)
	if pg == nil || os.Getenv(home.EnvSecretKey) != "" {
		return h.Key()
	}
	candidate, err := h.ExistingKey()
	if errors.Is(err, fs.ErrNotExist) {
		candidate, err = home.NewKey()
	}
	if err != nil {
		return nil, err
	}
	key, err := pg.ServerKey(ctx, keyName, candidate)
	if err != nil {
		return nil, &DatabaseError{err}
	}
	return key, nil
}

// openLibrary returns the library: the database's when replicas share
// one, else the home's files. The first process on a new database brings
// its home's workflows and drafts into it (postgres.Library.Seed).
func openLibrary(h *home.Home, st store.Store, log *slog.Logger) (library.Backend, error) {
	files := library.Open(h, fileVersion)
	pg := shared(st)
	if pg == nil {
		return files, nil
	}
	lib := pg.Library(fileVersion)
	n, err := lib.Seed(files, "from "+h.Dir)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		log.Info("imported the home's workflows and drafts into the database's library", "home", h.Dir, "entries", n)
	}
	return lib, nil
}

// SharedLibrary reports whether the library lives in a database that
// other processes share: its changes through them are pushed (the change
// feed), and there are no files to poll.
func (s *Service) SharedLibrary() bool { return s.feed != nil }

// publish tells the other replicas that name of topic changed. A notice
// that cannot be sent is logged: they see the change at their next poll.
func (s *Service) publish(topic, name string) {
	if s.feed == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.feed.Publish(ctx, topic, name); err != nil {
		s.log.Warn("tell the other replicas of a change", "topic", topic, "name", name, "err", err)
	}
}

// listen starts taking the other replicas' notices, once: when the first
// watcher registers (a one-shot command has none, and opens no listening
// connection). A listener that cannot start is logged; the watchers'
// own poll remains.
func (s *Service) listen() {
	s.feedMu.Lock()
	defer s.feedMu.Unlock()
	if s.feed == nil || s.stopFeed != nil || s.feedClosed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stop, err := s.feed.Listen(ctx, func(topic, name string) {
		switch topic {
		case topicLibrary:
			s.notifyLibrary(name)
		case topicCatalog:
			s.catalogChanged(name)
		case "": // notices may have been lost: anything may have changed
			s.notifyLibrary("")
			s.catalogChanged("")
		}
	})
	if err != nil {
		s.log.Warn("listen to the other replicas' changes", "err", err)
		return
	}
	s.stopFeed = stop
}

// catalogChanged follows a catalog changed through another replica ("":
// any may have): the watchers re-sync the catalogs (SyncCatalogs) as they
// re-list the library.
func (s *Service) catalogChanged(string) { s.notifyLibrary("") }

// SecretPageStore keeps the one-time secret pages (mcpserver) where the
// replicas on one database share them: a page created through one opens,
// once, through any (postgres.SecretPages). Pauses are the engine's JSON.
type SecretPageStore interface {
	// Open records page id for the pause of token unless it has one,
	// and returns the pause's page id.
	Open(ctx context.Context, id, token string, pause []byte, expires time.Time) (string, error)
	// Page returns the pause of a page still open (ok false: none, used
	// or expired).
	Page(ctx context.Context, id string) (pause []byte, ok bool, err error)
	// Complete ends a page whose secret was given, remembered until until.
	Complete(ctx context.Context, id string, until time.Time) error
	// Close ends a page whose secret was not given.
	Close(ctx context.Context, id string) error
	// Given reports whether the page's secret was given, and whether
	// the page exists.
	Given(ctx context.Context, id string) (given, exists bool, err error)
}

// SecretPages returns the secret pages the replicas share, or nil when
// this process keeps its own (SQLite: one process serves a home's pages).
func (s *Service) SecretPages() SecretPageStore {
	if pg := shared(s.Store); pg != nil {
		return pg.SecretPages()
	}
	return nil
}

// openCatalogStore returns where catalogs are kept: the database's when
// replicas share one, else the home's catalogs directory. The first
// process on a new database brings its home's catalogs into it.
func (s *Service) openCatalogStore() catalog.Backend {
	files := catalog.NewStore(filepath.Join(s.Home.Dir, "catalogs"))
	pg := shared(s.Store)
	if pg == nil {
		return files
	}
	docs := pg.Catalogs()
	own := func() map[string][]byte {
		out := map[string][]byte{}
		cs, _ := files.List() // those that cannot be read stay behind
		for _, c := range cs {
			if doc, err := catalog.Encode(c); err == nil {
				out[c.Name] = doc
			}
		}
		return out
	}
	n, err := docs.Seed(context.Background(), own, "from "+s.Home.Dir)
	switch {
	case err != nil:
		s.log.Warn("import the home's catalogs into the database", "err", err)
	case n > 0:
		s.log.Info("imported the home's catalogs into the database", "home", s.Home.Dir, "catalogs", n)
	}
	return dbCatalogs{docs: docs}
}

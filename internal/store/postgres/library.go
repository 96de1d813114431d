package postgres

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"stepwise.dev/stepwise/internal/library"
)

// libraryLock is the key of the advisory lock library writes hold for
// their transaction: what the home's lock file is to the files, across
// every replica on the database.
const libraryLock int64 = 0x73746570_6c696272 // "steplibr"

// The locators the database's library shows in place of directories.
const (
	locatorWorkflows = "database:workflows"
	locatorDrafts    = "database:drafts"
	locatorPrevious  = "database:previous"
)

// Library is the workflow library kept in the database
// (library.Backend): what replicas on one database share. It has the
// files' semantics (librarytest), its writes serialized by an advisory
// lock and each one a transaction — a rename is atomic here.
type Library struct {
	pool    *pgxpool.Pool
	version func([]byte) string
	now     func() time.Time
}

var _ library.Backend = (*Library)(nil)

// Library returns the store's workflow library; version computes an
// entry's version from its content (as library.Options.Version).
func (s *Store) Library(version func([]byte) string) *Library {
	return &Library{pool: s.pool, version: version, now: time.Now}
}

// Dir is the locator entries of kind k are shown to live at.
func (l *Library) Dir(k library.Kind) string {
	if k == library.Draft {
		return locatorDrafts
	}
	return locatorWorkflows
}

// KeptIn is the locator previous versions are shown to be kept at.
func (l *Library) KeptIn() string { return locatorPrevious }

func (l *Library) file(k library.Kind, name, ext string, content []byte, modified int64) *library.File {
	return &library.File{Name: name, Kind: k, Path: l.Dir(k) + "/" + name + ext, Content: content,
		Version: l.version(content), Revision: library.Revision(content), ModTime: fromNanos(modified)}
}

// opTimeout bounds one operation of the library (whose interface, the
// files', takes no context): a database that stops answering fails it.
const opTimeout = 30 * time.Second

func opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), opTimeout)
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// row reads name's entry of kind k (nil when there is none).
func (l *Library) row(ctx context.Context, q querier, k library.Kind, name string) (*library.File, error) {
	var ext string
	var content []byte
	var modified int64
	err := q.QueryRow(ctx, `SELECT ext, content, modified FROM library_entries WHERE kind = $1 AND name = $2`, string(k), name).
		Scan(&ext, &content, &modified)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %q: %w", k, name, err)
	}
	return l.file(k, name, ext, content, modified), nil
}

// Get reads name's entry of kind k.
func (l *Library) Get(k library.Kind, name string) (*library.File, error) {
	if err := library.CheckName(name); err != nil {
		return nil, err
	}
	ctx, cancel := opContext()
	defer cancel()
	f, err := l.row(ctx, l.pool, k, name)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("%w: no %s %q", library.ErrNotFound, k, name)
	}
	return f, nil
}

// Entries lists the names of kind k, sorted, with their locators and
// revisions (Entry.Stamp).
func (l *Library) Entries(k library.Kind) ([]library.Entry, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := l.pool.Query(ctx, `SELECT name, ext, revision FROM library_entries WHERE kind = $1 ORDER BY name`, string(k))
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", k, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (library.Entry, error) {
		var name, ext, rev string
		err := r.Scan(&name, &ext, &rev)
		return library.Entry{Name: name, Path: l.Dir(k) + "/" + name + ext, Stamp: rev}, err
	})
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", k, err)
	}
	return out, nil
}

// Names lists the names of kind k, sorted.
func (l *Library) Names(k library.Kind) ([]string, error) {
	entries, err := l.Entries(k)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
	}
	return names, nil
}

// write runs fn in a transaction holding the library's lock.
func (l *Library) write(fn func(ctx context.Context, tx dbtx) error) error {
	ctx, cancel := opContext()
	defer cancel()
	return pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, libraryLock); err != nil {
			return fmt.Errorf("workflow library: lock: %w", err)
		}
		return fn(ctx, tx)
	})
}

// current is library.Library's: name's entry when the write may replace
// it, nil when there is none, or a *library.ConflictError.
func (l *Library) current(ctx context.Context, tx dbtx, k library.Kind, name string, o library.WriteOptions) (*library.File, error) {
	f, err := l.row(ctx, tx, k, name)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if o.ExpectedVersion != "" {
			return nil, &library.ConflictError{Name: name, Kind: k, Expected: o.ExpectedVersion}
		}
		return nil, nil
	}
	if o.Overwrite || (o.ExpectedVersion != "" && o.ExpectedVersion == f.Revision) {
		return f, nil
	}
	return nil, &library.ConflictError{Name: name, Kind: k, Current: f.Version, CurrentRevision: f.Revision, Expected: o.ExpectedVersion}
}

// keep records f as a previous version.
func (l *Library) keep(ctx context.Context, tx dbtx, f *library.File, at int64) error {
	ext := f.Path[len(l.Dir(f.Kind))+1+len(f.Name):]
	if _, err := tx.Exec(ctx, `INSERT INTO library_previous (kind, name, ext, content, kept_at) VALUES ($1, $2, $3, $4, $5)`,
		string(f.Kind), f.Name, ext, f.Content, at); err != nil {
		return fmt.Errorf("keep the previous %s %q: %w", f.Kind, f.Name, err)
	}
	return nil
}

func (l *Library) put(ctx context.Context, tx dbtx, k library.Kind, name, ext string, content []byte, at int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO library_entries (kind, name, ext, content, revision, modified) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (kind, name) DO UPDATE SET ext = EXCLUDED.ext, content = EXCLUDED.content, revision = EXCLUDED.revision, modified = EXCLUDED.modified`,
		string(k), name, ext, content, library.Revision(content), at)
	return err
}

// stamp is the time of a write: after the entry's last one, so that
// times of one name never go back when clocks of replicas differ.
func (l *Library) stamp(old *library.File) int64 {
	at := l.now().UnixNano()
	if old != nil && at <= old.ModTime.UnixNano() {
		at = old.ModTime.UnixNano() + 1
	}
	return at
}

// Save writes content as name's entry of kind k (see library.Library.Save).
func (l *Library) Save(k library.Kind, name, ext string, content []byte, o library.WriteOptions) (*library.File, error) {
	if err := library.CheckName(name); err != nil {
		return nil, err
	}
	if !slices.Contains([]string{".yaml", ".yml", ".json"}, ext) {
		return nil, fmt.Errorf("save %s %q: extension %q: want .yaml, .yml or .json", k, name, ext)
	}
	var out *library.File
	err := l.write(func(ctx context.Context, tx dbtx) error {
		old, err := l.current(ctx, tx, k, name, o)
		if err != nil {
			return err
		}
		at := l.stamp(old)
		if old != nil {
			if err := l.keep(ctx, tx, old, at); err != nil {
				return err
			}
		}
		if err := l.put(ctx, tx, k, name, ext, content, at); err != nil {
			return fmt.Errorf("save %s %q: %w", k, name, err)
		}
		out = l.file(k, name, ext, content, at)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Delete removes name's entry of kind k — when expectedVersion is given,
// only at that revision — and keeps it as a previous version.
func (l *Library) Delete(k library.Kind, name, expectedVersion string) (*library.File, error) {
	if err := library.CheckName(name); err != nil {
		return nil, err
	}
	var out *library.File
	err := l.write(func(ctx context.Context, tx dbtx) error {
		f, err := l.current(ctx, tx, k, name, library.WriteOptions{ExpectedVersion: expectedVersion, Overwrite: expectedVersion == ""})
		if err != nil {
			return err
		}
		if f == nil {
			return fmt.Errorf("%w: no %s %q", library.ErrNotFound, k, name)
		}
		if err := l.keep(ctx, tx, f, l.stamp(f)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM library_entries WHERE kind = $1 AND name = $2`, string(k), name); err != nil {
			return fmt.Errorf("delete %s %q: %w", k, name, err)
		}
		out = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Rename moves saved workflow name to newName — when expectedVersion is
// given, only at that revision — with the content rewrite returns, in
// one transaction.
func (l *Library) Rename(name, newName, expectedVersion string, rewrite func([]byte) ([]byte, error)) (*library.File, error) {
	if err := library.CheckName(name); err != nil {
		return nil, err
	}
	if err := library.CheckName(newName); err != nil {
		return nil, err
	}
	var out *library.File
	err := l.write(func(ctx context.Context, tx dbtx) error {
		f, err := l.current(ctx, tx, library.Saved, name, library.WriteOptions{ExpectedVersion: expectedVersion, Overwrite: expectedVersion == ""})
		if err != nil {
			return err
		}
		if f == nil {
			return fmt.Errorf("%w: no %s %q", library.ErrNotFound, library.Saved, name)
		}
		if cur, err := l.row(ctx, tx, library.Saved, newName); err != nil {
			return err
		} else if cur != nil {
			return &library.ConflictError{Name: newName, Kind: library.Saved, Current: cur.Version, CurrentRevision: cur.Revision}
		}
		content, err := rewrite(f.Content)
		if err != nil {
			return fmt.Errorf("rename %q to %q: %w", name, newName, err)
		}
		ext := f.Path[len(l.Dir(library.Saved))+1+len(name):]
		at := l.stamp(f)
		if err := l.keep(ctx, tx, f, at); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM library_entries WHERE kind = $1 AND name = $2`, string(library.Saved), name); err != nil {
			return fmt.Errorf("rename %q to %q: %w", name, newName, err)
		}
		if err := l.put(ctx, tx, library.Saved, newName, ext, content, at); err != nil {
			return fmt.Errorf("rename %q to %q: %w", name, newName, err)
		}
		out = l.file(library.Saved, newName, ext, content, at)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Previous lists the kept previous versions of name of kind k, oldest
// first.
func (l *Library) Previous(k library.Kind, name string) ([]library.File, error) {
	if err := library.CheckName(name); err != nil {
		return nil, err
	}
	ctx, cancel := opContext()
	defer cancel()
	rows, err := l.pool.Query(ctx, `SELECT id, ext, content, kept_at FROM library_previous WHERE kind = $1 AND name = $2 ORDER BY id`, string(k), name)
	if err != nil {
		return nil, fmt.Errorf("previous versions of %s %q: %w", k, name, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (library.File, error) {
		var id, at int64
		var ext string
		var content []byte
		if err := r.Scan(&id, &ext, &content, &at); err != nil {
			return library.File{}, err
		}
		f := l.file(k, name, ext, content, at)
		f.Path = fmt.Sprintf("%s/%s.%s@%d%s", locatorPrevious, name, k, id, ext)
		return *f, nil
	})
	if err != nil {
		return nil, fmt.Errorf("previous versions of %s %q: %w", k, name, err)
	}
	return out, nil
}

// Seed imports the saved workflows and drafts of from (a home's files)
// once per database: the first process to call it on a new database
// imports its own, later calls — from any replica — import nothing, so a
// library that moved into the database is not overwritten by homes. It
// returns how many entries it imported.
func (l *Library) Seed(from library.Backend, note string) (int, error) {
	ctx, cancel := opContext()
	defer cancel()
	if done, err := marked(ctx, l.pool, "library-seeded"); err != nil || done {
		return 0, err
	}
	n := 0
	err := l.write(func(ctx context.Context, tx dbtx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO shared_marks (name, at, note) VALUES ('library-seeded', $1, $2) ON CONFLICT (name) DO NOTHING`,
			l.now().UnixNano(), note)
		if err != nil {
			return fmt.Errorf("seed the workflow library: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil // seeded before
		}
		at := l.now().UnixNano()
		for _, k := range []library.Kind{library.Saved, library.Draft} {
			entries, err := from.Entries(k)
			if err != nil {
				return fmt.Errorf("seed the workflow library: %w", err)
			}
			for _, e := range entries {
				f, err := from.Get(k, e.Name)
				if err != nil {
					continue // an unsafe symlink, a file that vanished: not imported
				}
				ext := filepath.Ext(f.Path)
				tag, err := tx.Exec(ctx, `INSERT INTO library_entries (kind, name, ext, content, revision, modified) VALUES ($1, $2, $3, $4, $5, $6)
					ON CONFLICT (kind, name) DO NOTHING`, string(k), e.Name, ext, f.Content, f.Revision, at)
				if err != nil {
					return fmt.Errorf("seed the workflow library: %s %q: %w", k, e.Name, err)
				}
				n += int(tag.RowsAffected())
			}
		}
		return nil
	})
	return n, err
}

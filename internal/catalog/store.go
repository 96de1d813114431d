package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"stepwise.dev/stepwise/internal/library"
)

// Store is the catalogs directory of a home: one <name>.json per catalog.
// Writes are atomic (library.WriteFile) and serialized by a mutex and the
// directory's lock file, so that a check (exists?) and the write after it
// are one step even when the CLI and a server share the home.
type Store struct {
	dir string
	mu  sync.Mutex
}

// NewStore returns the store of a catalogs directory (created on the
// first write).
func NewStore(dir string) *Store { return &Store{dir: dir} }

// Backend is where catalogs are kept: a home's catalogs directory
// (*Store) or a database the replicas share (store/postgres), with the
// same semantics: names checked, ErrNotFound, ErrExists unless
// overwriting.
type Backend interface {
	// Get reads the catalog name.
	Get(name string) (*Catalog, error)
	// List reads every catalog, sorted by name; those that cannot be
	// read are left out and reported in the error.
	List() ([]*Catalog, error)
	// Put writes c; an existing catalog of its name is replaced (and
	// returned) only when overwrite is set, else the error wraps ErrExists.
	Put(c *Catalog, overwrite bool) (replaced *Catalog, err error)
	// Update changes the catalog name with fn and writes it back.
	Update(name string, fn func(*Catalog) error) (*Catalog, error)
	// Remove deletes the catalog name and returns what it held.
	Remove(name string) (*Catalog, error)
	// Stamps returns by name a stamp of every catalog kept (readable or
	// not) that changes whenever it is written.
	Stamps() (map[string]string, error)
	// Stamp is Stamps' of one catalog, "" when there is none.
	Stamp(name string) string
	// Where is where catalog name is shown to be kept.
	Where(name string) string
}

var _ Backend = (*Store)(nil)

// Dir is the catalogs directory.
func (s *Store) Dir() string { return s.dir }

// Where is the file of catalog name.
func (s *Store) Where(name string) string { return filepath.Join(s.dir, name+".json") }

// Stamp returns the size and modification time of catalog name's file,
// "" when there is none.
func (s *Store) Stamp(name string) string {
	info, err := os.Stat(s.Where(name))
	if err != nil {
		return ""
	}
	return stampOf(info)
}

func stampOf(info fs.FileInfo) string {
	return fmt.Sprintf("%d@%d", info.Size(), info.ModTime().UnixNano())
}

// Stamps returns each catalog file's size and modification time by name.
func (s *Store) Stamps() (map[string]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalogs: %w", err)
	}
	out := make(map[string]string, len(entries))
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || library.CheckName(name) != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out[name] = stampOf(info)
	}
	return out, nil
}

// path is name's file; the name is checked first.
func (s *Store) path(name string) (string, error) {
	if err := library.CheckName(name); err != nil {
		return "", fmt.Errorf("catalog name: %w", err)
	}
	return filepath.Join(s.dir, name+".json"), nil
}

// lock serializes writers, in this process and across processes.
func (s *Store) lock() (func(), error) {
	s.mu.Lock()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("catalogs: %w", err)
	}
	unlock, err := library.LockFile(filepath.Join(s.dir, ".lock"))
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// Holding the lock no write is under way: temporary files left are
	// from a writer that died.
	stale, _ := filepath.Glob(filepath.Join(s.dir, ".*.tmp-*"))
	for _, p := range stale {
		_ = os.Remove(p)
	}
	return func() { unlock(); s.mu.Unlock() }, nil
}

// Get reads the catalog name.
func (s *Store) Get(name string) (*Catalog, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	return read(p, name)
}

// read loads one catalog file. A symlink or another non-regular entry is
// refused: the directory holds what stepwise wrote, nothing that leads
// elsewhere.
func read(p, name string) (*Catalog, error) {
	info, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no catalog %q", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", library.ErrUnsafeName, p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", name, err)
	}
	return Decode(data, name, p)
}

// Decode reads the document of catalog name (as Encode wrote it) kept
// at where, checking its format and that it is name's.
func Decode(data []byte, name, where string) (*Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("catalog %s: %s: %w", name, where, err)
	}
	if c.Format != FormatVersion {
		return nil, fmt.Errorf("catalog %s: file format %d, this version reads %d", name, c.Format, FormatVersion)
	}
	if c.Name != name {
		return nil, fmt.Errorf("catalog %s: the file names catalog %q", name, c.Name)
	}
	return &c, nil
}

// Encode is the document a catalog is kept as.
func Encode(c *Catalog) ([]byte, error) {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.Name, err)
	}
	return append(data, '\n'), nil
}

// List reads every catalog, sorted by name. Files that cannot be read are
// left out and reported in the error, next to the catalogs that could.
func (s *Store) List() ([]*Catalog, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalogs: %w", err)
	}
	var out []*Catalog
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || library.CheckName(name) != nil {
			continue
		}
		c, err := read(filepath.Join(s.dir, e.Name()), name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// Put writes c. An existing catalog of its name is replaced only when
// overwrite is set (and returned); otherwise the error wraps ErrExists.
func (s *Store) Put(c *Catalog, overwrite bool) (replaced *Catalog, err error) {
	p, err := s.path(c.Name)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, err := read(p, c.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		old = nil
	case err != nil && !overwrite:
		return nil, err
	case err == nil && !overwrite:
		return nil, fmt.Errorf("%w: catalog %q was imported at %s", ErrExists, c.Name, old.ImportedAt.Format("2006-01-02 15:04:05Z"))
	}
	if err := write(p, c); err != nil {
		return nil, err
	}
	return old, nil
}

// Update changes the catalog name with fn and writes it back.
func (s *Store) Update(name string, fn func(*Catalog) error) (*Catalog, error) {
	return s.withLocked(name, func(p string, c *Catalog) error {
		if err := fn(c); err != nil {
			return err
		}
		return write(p, c)
	})
}

// Remove deletes the catalog name and returns what it held.
func (s *Store) Remove(name string) (*Catalog, error) {
	return s.withLocked(name, func(p string, c *Catalog) error {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove catalog %s: %w", name, err)
		}
		return nil
	})
}

// withLocked reads the catalog name under the store's lock and hands it,
// with its path, to fn; the lock is held until fn returns.
func (s *Store) withLocked(name string, fn func(path string, c *Catalog) error) (*Catalog, error) {
	p, err := s.path(name)
	if err != nil {
		return nil, err
	}
	unlock, err := s.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	c, err := read(p, name)
	if err != nil {
		return nil, err
	}
	if err := fn(p, c); err != nil {
		return nil, err
	}
	return c, nil
}

func write(p string, c *Catalog) error {
	data, err := Encode(c)
	if err != nil {
		return err
	}
	if err := library.WriteFile(p, data); err != nil {
		return fmt.Errorf("catalog %s: %w", c.Name, err)
	}
	return nil
}

package library

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"stepwise.dev/stepwise/internal/home"
)

// Kind tells saved workflows from drafts.
type Kind string

// The kinds of library files.
const (
	Saved Kind = "workflow"
	Draft Kind = "draft"
)

// ErrNotFound is wrapped when a name has no file.
var ErrNotFound = home.ErrNotFound

// extensions are the file extensions, in lookup order.
var extensions = []string{".yaml", ".yml", ".json"}

// Options configure a Library.
type Options struct {
	// WorkflowsDir holds saved workflows, DraftsDir drafts, PreviousDir
	// what writes replaced and deletes removed.
	WorkflowsDir, DraftsDir, PreviousDir string
	// Version computes a file's version from its content.
	Version func(content []byte) string
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Library is the workflow files of one home.
type Library struct {
	o  Options
	mu sync.Mutex
}

// Open returns the library of a home.
func Open(h *home.Home, version func([]byte) string) *Library {
	return New(Options{WorkflowsDir: h.WorkflowsDir(), DraftsDir: filepath.Join(h.Dir, "drafts"),
		PreviousDir: filepath.Join(h.Dir, "previous"), Version: version})
}

// New returns a library over the given directories.
func New(o Options) *Library {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Library{o: o}
}

// File is one workflow file.
type File struct {
	Name    string
	Kind    Kind
	Path    string
	Content []byte
	// Version is Options.Version of the content: for workflows, of the
	// definition, so comments and formatting do not change it.
	Version string
	// Revision is the SHA-256 of the content's bytes ("sha256:<hex>"):
	// any edit changes it. Writes check it (WriteOptions.ExpectedVersion).
	Revision string
	ModTime  time.Time
}

// Revision returns the revision of content: "sha256:" and the hex SHA-256
// of its bytes.
func Revision(content []byte) string {
	h := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(h[:])
}

// ConflictError says a write was refused because the file is not at the
// revision the caller expected (or exists when it should not).
type ConflictError struct {
	Name string
	Kind Kind
	// Current is the file's version ("" when there is no file).
	Current string
	// CurrentRevision is the file's revision ("" when there is no file):
	// what a write expecting the file as it is now must give.
	CurrentRevision string
	// Expected is the revision the caller gave ("" for none).
	Expected string
}

func (e *ConflictError) Error() string {
	switch {
	case e.Current == "":
		return fmt.Sprintf("%s %q no longer exists (expected revision %s)", e.Kind, e.Name, e.Expected)
	case e.Expected == "":
		return fmt.Sprintf("%s %q already exists at revision %s (version %s)", e.Kind, e.Name, e.CurrentRevision, e.Current)
	case e.Expected == e.Current:
		return fmt.Sprintf("%s %q is at revision %s; %s is its version, which edits of comments and formatting leave as it is, so a write expects the revision", e.Kind, e.Name, e.CurrentRevision, e.Expected)
	default:
		return fmt.Sprintf("%s %q is at revision %s (version %s), not %s", e.Kind, e.Name, e.CurrentRevision, e.Current, e.Expected)
	}
}

// Dir returns the directory of a kind.
func (l *Library) Dir(k Kind) string {
	if k == Draft {
		return l.o.DraftsDir
	}
	return l.o.WorkflowsDir
}

// lock serializes writes within the process and across processes.
func (l *Library) lock() (func(), error) {
	l.mu.Lock()
	if err := os.MkdirAll(l.o.WorkflowsDir, 0o700); err != nil {
		l.mu.Unlock()
		return nil, fmt.Errorf("workflow library: %w", err)
	}
	unlock, err := lockFile(filepath.Join(l.o.WorkflowsDir, ".lock"))
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	// Holding the lock, no write is under way: temporary files left are
	// from a process that died mid-write.
	for _, dir := range []string{l.o.WorkflowsDir, l.o.DraftsDir, l.o.PreviousDir} {
		if dir == "" {
			continue
		}
		stale, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
		for _, p := range stale {
			_ = os.Remove(p)
		}
	}
	return func() { unlock(); l.mu.Unlock() }, nil
}

// LockFile takes the exclusive cross-process lock at path (created if
// missing), waiting for the process holding it; unlock releases it. It is
// the lock the library serializes its writes with, for other stores of
// the home that need a check and a write to be one step.
func LockFile(path string) (unlock func(), err error) { return lockFile(path) }

// find returns the path of name's file of kind k ("" when there is none).
// An entry that is a symlink leading outside its directory is refused.
func (l *Library) find(k Kind, name string) (string, error) {
	if err := CheckName(name); err != nil {
		return "", err
	}
	dir := l.Dir(k)
	for _, ext := range extensions {
		p := filepath.Join(dir, name+ext)
		ok, err := inside(dir, p)
		if err != nil {
			return "", err
		}
		if ok {
			return p, nil
		}
	}
	return "", nil
}

// inside reports whether p exists as a regular file whose real location
// is inside dir (symlinks followed).
func inside(dir, p string) (bool, error) {
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%w: %s is a dangling symlink", ErrUnsafeName, p)
	}
	if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) {
		return false, fmt.Errorf("%w: %s leads outside %s", ErrUnsafeName, p, dir)
	}
	info, err := os.Stat(real)
	if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	if !info.Mode().IsRegular() {
		return false, fmt.Errorf("%w: %s is not a regular file", ErrUnsafeName, p)
	}
	return true, nil
}

// Path returns the file of name of kind k, "" when there is none; an
// unsafe name or an entry leading outside is an error.
func (l *Library) Path(k Kind, name string) (string, error) { return l.find(k, name) }

// Get reads name's file of kind k.
func (l *Library) Get(k Kind, name string) (*File, error) {
	p, err := l.find(k, name)
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, fmt.Errorf("%w: no %s %q", ErrNotFound, k, name)
	}
	return l.read(k, name, p)
}

func (l *Library) read(k Kind, name, p string) (*File, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read %s %q: %w", k, name, err)
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("read %s %q: %w", k, name, err)
	}
	return &File{Name: name, Kind: k, Path: p, Content: data, Version: l.o.Version(data), Revision: Revision(data), ModTime: info.ModTime()}, nil
}

// Names lists the valid names of kind k, sorted, once each.
func (l *Library) Names(k Kind) ([]string, error) {
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

// Entry is a name of the library and, when it is known without resolving
// anything, its file.
type Entry struct {
	Name string
	// Path is set when the name's first file in lookup order is a plain
	// regular file of the directory: it cannot lead outside, so there is
	// nothing to check. Otherwise (a symlink, say) it is empty and Path
	// decides. Listing a large library is mostly those checks (a dozen
	// system calls per file) when every name is resolved.
	Path string
	// Stamp changes whenever the content does, when a backend knows it
	// without reading the content (a database: the revision); empty for
	// files, whose size and modification time tell.
	Stamp string
}

// Entries lists the valid names of kind k, sorted, once each, with the
// paths that need no resolving.
func (l *Library) Entries(k Kind) ([]Entry, error) {
	dir := l.Dir(k)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %ss: %w", k, err)
	}
	type first struct {
		rank  int
		entry os.DirEntry
	}
	byName := map[string]first{}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		rank := slices.Index(extensions, ext)
		if rank < 0 {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ext)
		if !home.ValidName(name) {
			continue
		}
		if f, ok := byName[name]; !ok || rank < f.rank {
			byName[name] = first{rank, e}
		}
	}
	out := make([]Entry, 0, len(byName))
	for name, f := range byName {
		e := Entry{Name: name}
		if f.entry.Type().IsRegular() {
			e.Path = filepath.Join(dir, f.entry.Name())
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func isExt(ext string) bool {
	for _, e := range extensions {
		if e == ext {
			return true
		}
	}
	return false
}

// WriteOptions govern replacing an existing file.
type WriteOptions struct {
	// ExpectedVersion: write only if the current file is at this
	// revision (File.Revision: its bytes, so that an edit that leaves the
	// version as it was, a comment's, is not overwritten unseen).
	ExpectedVersion string
	// Overwrite: replace whatever is there.
	Overwrite bool
}

// Save writes content as name's file of kind k with extension ext (".yaml"
// or ".json"). An existing file is replaced only when o.Overwrite is set or
// o.ExpectedVersion is its revision; otherwise the error is a
// *ConflictError carrying the current version and revision. The replaced
// file is kept in previous/.
func (l *Library) Save(k Kind, name, ext string, content []byte, o WriteOptions) (*File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if !isExt(ext) {
		return nil, fmt.Errorf("save %s %q: extension %q: want .yaml, .yml or .json", k, name, ext)
	}
	unlock, err := l.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	old, err := l.current(k, name, o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(l.Dir(k), 0o700); err != nil {
		return nil, fmt.Errorf("save %s %q: %w", k, name, err)
	}
	if old != nil {
		if err := l.keep(old); err != nil {
			return nil, err
		}
	}
	p := filepath.Join(l.Dir(k), name+ext)
	if err := writeAtomic(p, content); err != nil {
		return nil, fmt.Errorf("save %s %q: %w", k, name, err)
	}
	if old != nil && old.Path != p {
		// The same workflow in another spelling (YAML → JSON): one file per name.
		if err := removeDurably(old.Path); err != nil {
			return nil, fmt.Errorf("save %s %q: remove %s: %w", k, name, old.Path, err)
		}
	}
	return l.read(k, name, p)
}

// current returns name's file when the write may replace it, nil when
// there is none, or a *ConflictError. Called with the lock held.
func (l *Library) current(k Kind, name string, o WriteOptions) (*File, error) {
	p, err := l.find(k, name)
	if err != nil {
		return nil, err
	}
	if p == "" {
		if o.ExpectedVersion != "" {
			return nil, &ConflictError{Name: name, Kind: k, Expected: o.ExpectedVersion}
		}
		return nil, nil
	}
	f, err := l.read(k, name, p)
	if err != nil {
		return nil, err
	}
	if o.Overwrite || (o.ExpectedVersion != "" && o.ExpectedVersion == f.Revision) {
		return f, nil
	}
	return nil, &ConflictError{Name: name, Kind: k, Current: f.Version, CurrentRevision: f.Revision, Expected: o.ExpectedVersion}
}

// Delete removes name's file of kind k — when expectedVersion is given,
// only at that revision — and keeps it in previous/.
func (l *Library) Delete(k Kind, name, expectedVersion string) (*File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	unlock, err := l.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, err := l.current(k, name, WriteOptions{ExpectedVersion: expectedVersion, Overwrite: expectedVersion == ""})
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("%w: no %s %q", ErrNotFound, k, name)
	}
	if err := l.keep(f); err != nil {
		return nil, err
	}
	if err := removeDurably(f.Path); err != nil {
		return nil, fmt.Errorf("delete %s %q: %w", k, name, err)
	}
	return f, nil
}

// Rename moves saved workflow name to newName — when expectedVersion is
// given, only at that revision: rewrite returns the content with its name
// changed. The new file is written before the old
// one is removed, so a crash in between leaves both, never neither.
func (l *Library) Rename(name, newName, expectedVersion string, rewrite func([]byte) ([]byte, error)) (*File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if err := CheckName(newName); err != nil {
		return nil, err
	}
	unlock, err := l.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, err := l.current(Saved, name, WriteOptions{ExpectedVersion: expectedVersion, Overwrite: expectedVersion == ""})
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("%w: no %s %q", ErrNotFound, Saved, name)
	}
	if target, err := l.find(Saved, newName); err != nil {
		return nil, err
	} else if target != "" {
		cur, err := l.read(Saved, newName, target)
		if err != nil {
			return nil, err
		}
		return nil, &ConflictError{Name: newName, Kind: Saved, Current: cur.Version, CurrentRevision: cur.Revision}
	}
	content, err := rewrite(f.Content)
	if err != nil {
		return nil, fmt.Errorf("rename %q to %q: %w", name, newName, err)
	}
	p := filepath.Join(l.Dir(Saved), newName+filepath.Ext(f.Path))
	if err := writeAtomic(p, content); err != nil {
		return nil, fmt.Errorf("rename %q to %q: %w", name, newName, err)
	}
	if err := fail("renamed"); err != nil {
		return nil, err
	}
	if err := l.keep(f); err != nil {
		return nil, err
	}
	if err := removeDurably(f.Path); err != nil {
		return nil, fmt.Errorf("rename %q to %q: remove %s: %w", name, newName, f.Path, err)
	}
	return l.read(Saved, newName, p)
}

// keep copies a file that is about to be replaced or removed into
// previous/, named by kind, name, time and version.
func (l *Library) keep(f *File) error {
	if l.o.PreviousDir == "" {
		return nil
	}
	if err := os.MkdirAll(l.o.PreviousDir, 0o700); err != nil {
		return fmt.Errorf("keep the previous %s %q: %w", f.Kind, f.Name, err)
	}
	short := strings.TrimPrefix(f.Version, "sha256:")
	if len(short) > 12 {
		short = short[:12]
	}
	stamp := l.o.Now().UTC().Format("20060102T150405.000000000Z")
	p := filepath.Join(l.o.PreviousDir, fmt.Sprintf("%s.%s@%s.%s%s", f.Name, f.Kind, stamp, short, filepath.Ext(f.Path)))
	if err := writeAtomic(p, f.Content); err != nil {
		return fmt.Errorf("keep the previous %s %q: %w", f.Kind, f.Name, err)
	}
	return nil
}

// removeDurably removes a file and makes the removal durable.
func removeDurably(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(p))
}

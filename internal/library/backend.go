package library

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Backend is where a library keeps its saved workflows, drafts and the
// previous versions that writes replaced: the home's files (*Library) or a
// database shared by replicas (store/postgres). Both give the semantics
// documented on *Library: names checked (ErrUnsafeName), writes that
// replace a file only at its revision or when told to overwrite
// (*ConflictError), what writes replace kept as previous versions, a
// missing name wrapping ErrNotFound. librarytest holds the conformance
// suite both pass.
type Backend interface {
	// Get reads name's entry of kind k.
	Get(k Kind, name string) (*File, error)
	// Entries lists the names of kind k, sorted, once each.
	Entries(k Kind) ([]Entry, error)
	// Names lists the names of kind k, sorted, once each.
	Names(k Kind) ([]string, error)
	// Save writes content as name's entry of kind k (see Library.Save).
	Save(k Kind, name, ext string, content []byte, o WriteOptions) (*File, error)
	// Delete removes name's entry of kind k, keeping it as a previous
	// version (see Library.Delete).
	Delete(k Kind, name, expectedVersion string) (*File, error)
	// Rename moves saved workflow name to newName (see Library.Rename).
	Rename(name, newName, expectedVersion string, rewrite func([]byte) ([]byte, error)) (*File, error)
	// Previous lists the kept previous versions of name of kind k, oldest
	// first (File.ModTime is when each was kept).
	Previous(k Kind, name string) ([]File, error)
	// Dir is where entries of kind k are shown to live: a directory of
	// the home, or a locator of the database ("database:workflows").
	Dir(k Kind) string
	// KeptIn is where previous versions are shown to be kept.
	KeptIn() string
}

var _ Backend = (*Library)(nil)

// KeptIn is the directory previous versions are kept in.
func (l *Library) KeptIn() string { return l.o.PreviousDir }

// Previous lists the previous versions of name of kind k kept in the
// previous directory, oldest first.
func (l *Library) Previous(k Kind, name string) ([]File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if l.o.PreviousDir == "" {
		return nil, nil
	}
	paths, err := filepath.Glob(filepath.Join(l.o.PreviousDir, name+"."+string(k)+"@*"))
	if err != nil {
		return nil, fmt.Errorf("previous versions of %s %q: %w", k, name, err)
	}
	out := make([]File, 0, len(paths))
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasPrefix(base, ".") {
			continue
		}
		stamp, _, _ := strings.Cut(strings.TrimPrefix(base, name+"."+string(k)+"@"), ".")
		// The stamp's own "." splits seconds from nanoseconds: take both.
		rest := strings.TrimPrefix(base, name+"."+string(k)+"@"+stamp+".")
		frac, _, _ := strings.Cut(rest, ".")
		at, err := time.Parse("20060102T150405.000000000Z", stamp+"."+frac)
		if err != nil {
			continue // not a name keep wrote
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("previous versions of %s %q: %w", k, name, err)
		}
		out = append(out, File{Name: name, Kind: k, Path: p, Content: data, Version: l.o.Version(data), Revision: Revision(data), ModTime: at})
	}
	slices.SortStableFunc(out, func(a, b File) int { return a.ModTime.Compare(b.ModTime) })
	return out, nil
}

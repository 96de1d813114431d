package action

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOutsideWorkspace is wrapped by every error about a path that could
// leave the workspace: "..", an absolute path elsewhere, a NUL, or a
// symlink (of the path or of one of its parents) leading outside.
var ErrOutsideWorkspace = errors.New("outside the workspace")

// Workspace is the directory the shell and file actions may touch. Every
// path they take is resolved by Resolve, the one place that decides what
// is inside.
type Workspace struct {
	// Dir is the workspace as configured, absolute and cleaned.
	Dir string
	// Real is Dir with every symlink resolved: what paths are checked
	// against.
	Real string
}

// OpenWorkspace returns the workspace at dir, creating it (mode 0700) when
// it is missing. An existing directory keeps its mode.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("workspace: create %s: %w", abs, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("workspace %s: %w", abs, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", abs)
	}
	return &Workspace{Dir: abs, Real: real}, nil
}

// Resolved is a path checked to stay inside the workspace.
type Resolved struct {
	// Rel is the path as given, cleaned and relative to the workspace
	// ("." for the workspace itself): for messages and outputs.
	Rel string
	// Real is the path with the symlinks of its existing part resolved,
	// relative to the workspace's real directory. The part that does not
	// exist yet is appended as written.
	Real string
	// Entry is like Real but with the last element unresolved: the entry
	// itself, not where a symlink leads (delete removes a link, not its
	// target).
	Entry string
	// Exists reports whether the path exists.
	Exists bool
}

// Abs returns the absolute real path of r in w.
func (w *Workspace) Abs(r Resolved) string { return filepath.Join(w.Real, r.Real) }

// Resolve checks that p stays inside the workspace and resolves it. p is
// relative to the workspace; an absolute p is accepted only when it lies
// inside. Lexically escaping paths ("../x", "a/../../x") are refused, and
// so is a path whose existing part — the final element or any parent — is
// a symlink leading outside (or dangling: where it leads cannot be
// checked, and writing through it could create a file outside).
func (w *Workspace) Resolve(p string) (Resolved, error) {
	if strings.ContainsRune(p, 0) {
		return Resolved{}, fmt.Errorf("path %q: %w: it contains a NUL byte", p, ErrOutsideWorkspace)
	}
	rel := p
	if filepath.IsAbs(p) {
		var ok bool
		if rel, ok = w.within(filepath.Clean(p)); !ok {
			return Resolved{}, fmt.Errorf("path %q: %w %s (give a path relative to it)", p, ErrOutsideWorkspace, w.Dir)
		}
	}
	rel = filepath.Clean(rel)
	if rel != "." && !filepath.IsLocal(rel) {
		return Resolved{}, fmt.Errorf("path %q: %w: it leads out of %s with \"..\"", p, ErrOutsideWorkspace, w.Dir)
	}
	// Walk the existing part one element at a time: every prefix, once
	// its symlinks are resolved, must still be inside.
	res := Resolved{Rel: rel, Real: ".", Exists: true}
	var parts []string
	if rel != "." {
		parts = strings.Split(rel, string(filepath.Separator))
	}
	for i, part := range parts {
		if !res.Exists {
			res.Real = filepath.Join(res.Real, part)
			continue
		}
		next := filepath.Join(w.Real, res.Real, part)
		info, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			res.Exists = false
			res.Real = filepath.Join(res.Real, part)
			continue
		}
		if err != nil {
			return Resolved{}, fmt.Errorf("path %q: %w", p, err)
		}
		if i == len(parts)-1 {
			res.Entry = filepath.Join(res.Real, part)
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			res.Real = filepath.Join(res.Real, part)
			continue
		}
		target, err := filepath.EvalSymlinks(next)
		if errors.Is(err, fs.ErrNotExist) {
			return Resolved{}, fmt.Errorf("path %q: %w: %s is a dangling symlink", p, ErrOutsideWorkspace, filepath.Join(parts[:i+1]...))
		}
		if err != nil {
			return Resolved{}, fmt.Errorf("path %q: %w", p, err)
		}
		inside, ok := w.insideReal(target)
		if !ok {
			return Resolved{}, fmt.Errorf("path %q: %w: %s is a symlink leading to %s", p, ErrOutsideWorkspace, filepath.Join(parts[:i+1]...), target)
		}
		res.Real = inside
	}
	if res.Entry == "" {
		res.Entry = res.Real
	}
	return res, nil
}

// within turns an absolute, cleaned path into one relative to the
// workspace, when it lies inside (as configured or as resolved).
func (w *Workspace) within(abs string) (string, bool) {
	for _, root := range []string{w.Dir, w.Real} {
		if rel, err := filepath.Rel(root, abs); err == nil && (rel == "." || filepath.IsLocal(rel)) {
			return rel, true
		}
	}
	return "", false
}

// insideReal reports where a resolved absolute path lies relative to the
// workspace's real directory, and whether it is inside.
func (w *Workspace) insideReal(real string) (string, bool) {
	rel, err := filepath.Rel(w.Real, real)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", false
	}
	return rel, true
}

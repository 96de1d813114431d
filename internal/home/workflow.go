package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"stepwise.dev/stepwise/internal/ident"
)

// Errors returned by FindWorkflow; test for them with errors.Is.
var (
	// ErrUnsafeName: the reference is not a valid library name, or the
	// library entry is a symlink leading outside the workflows directory.
	ErrUnsafeName = errors.New("unsafe workflow name")
	// ErrNotFound: no such workflow file or library entry.
	ErrNotFound = errors.New("workflow not found")
)

// extensions are the library file extensions, in lookup order.
var extensions = []string{".yaml", ".yml", ".json"}

// ValidName reports whether name is a valid library name:
// ^[a-z0-9][a-z0-9_-]{0,63}$. Names that pass are safe to join to a directory.
func ValidName(name string) bool { return ident.Library.Valid(name) }

// FindWorkflow returns the file a workflow reference names.
//
// A reference that contains a path separator or ends in .yaml, .yml or .json
// is a file path: it is returned unchanged when it names an existing
// regular file (following symlinks), and otherwise the error wraps
// ErrNotFound. Any other reference is a library name: it must satisfy
// ValidName (else the error wraps ErrUnsafeName), and the first of
// <name>.yaml, <name>.yml, <name>.json that exists in WorkflowsDir is
// returned. A library entry that is a symlink is followed only if it ends
// inside the workflows directory (else ErrUnsafeName). When none exists the
// error wraps ErrNotFound and lists the files tried.
func (h *Home) FindWorkflow(ref string) (string, error) {
	if IsPathRef(ref) {
		info, err := os.Stat(ref)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("%w: no such file %s", ErrNotFound, ref)
		case err != nil:
			return "", fmt.Errorf("workflow file: %w", err)
		case !info.Mode().IsRegular():
			return "", fmt.Errorf("workflow file %s is not a regular file", ref)
		}
		return ref, nil
	}
	if !ValidName(ref) {
		return "", fmt.Errorf("%w: %q is neither a file (no path separator or .yaml/.yml/.json) nor a library name matching %s", ErrUnsafeName, ref, ident.Library.Pattern)
	}
	dir := h.WorkflowsDir()
	tried := make([]string, 0, len(extensions))
	for _, ext := range extensions {
		path := filepath.Join(dir, ref+ext)
		tried = append(tried, path)
		found, err := h.libraryFile(path)
		if err != nil {
			return "", err
		}
		if found {
			return path, nil
		}
	}
	return "", fmt.Errorf("%w: no %q in the library; tried %s", ErrNotFound, ref, strings.Join(tried, ", "))
}

// libraryFile reports whether path exists as a regular file, possibly
// through symlinks that stay inside the workflows directory.
func (h *Home) libraryFile(path string) (bool, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // a dangling symlink
	}
	if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	root, err := filepath.EvalSymlinks(h.WorkflowsDir())
	if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) {
		return false, fmt.Errorf("%w: %s leads outside the workflows directory %s", ErrUnsafeName, path, h.WorkflowsDir())
	}
	info, err := os.Stat(real)
	if err != nil {
		return false, fmt.Errorf("workflow library: %w", err)
	}
	if !info.Mode().IsRegular() {
		return false, fmt.Errorf("workflow library: %s is not a regular file", path)
	}
	return true, nil
}

// IsPathRef reports whether ref is written as a file path rather than a
// library name: it holds a path separator or ends in .yaml, .yml or .json.
func IsPathRef(ref string) bool {
	if strings.ContainsRune(ref, '/') || strings.ContainsRune(ref, filepath.Separator) {
		return true
	}
	for _, ext := range extensions {
		if strings.HasSuffix(ref, ext) {
			return true
		}
	}
	return false
}

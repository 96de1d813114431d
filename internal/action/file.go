package action

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// File reads and writes files inside the workspace. with: {op, path,
// content?, encoding?, recursive?, max_bytes?}; every path goes through
// Workspace.Resolve, and the operations themselves go through an os.Root
// at the workspace so that a symlink swapped in after the check still
// cannot lead outside.
type File struct {
	Workspace *Workspace
}

// Defaults and bounds of the file action.
const (
	// DefaultMaxRead is how many bytes op read returns at most unless
	// max_bytes says otherwise.
	DefaultMaxRead = 10 << 20
	// maxListEntries bounds a listing, so that listing a huge tree
	// recursively cannot flood a run's record.
	maxListEntries = 10_000
)

// Name implements Action.
func (File) Name() string { return "file" }

// Description implements Action.
func (File) Description() string {
	return "Read, write, append to, list, delete, test or create files and directories inside the workspace. " +
		"with: {op: read|write|append|list|delete|exists|mkdir, path (relative to the workspace), content? (write/append: text, or any JSON value written as JSON), " +
		"encoding?: utf8|base64, recursive? (list, delete), max_bytes? (read, default 10 MiB)}. Writes are atomic. " +
		"Paths that leave the workspace (.., absolute paths elsewhere, symlinks leading outside) are refused."
}

// Safety implements Action: delete removes whole trees, and an action has
// one tier, its most severe.
func (File) Safety() string { return Destructive }

// Run implements Action.
func (f File) Run(ctx context.Context, c Call) (any, error) {
	if f.Workspace == nil {
		return nil, inputError("file", "no workspace is configured")
	}
	op, err := stringIn("file", c.Input, "op", "")
	if err != nil {
		return nil, err
	}
	p, err := stringIn("file", c.Input, "path", "")
	if err != nil {
		return nil, err
	}
	if p == "" {
		return nil, inputError("file", "path is required (\".\" is the workspace itself)")
	}
	r, err := f.Workspace.Resolve(p)
	if err != nil {
		return nil, &Error{Err: fmt.Errorf("file %s: %w", op, err)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(f.Workspace.Real)
	if err != nil {
		return nil, fmt.Errorf("file: open the workspace: %w", err)
	}
	defer root.Close()
	fo := fileOp{root: root, r: r, in: c.Input}
	var out map[string]any
	switch op {
	case "read":
		out, err = fo.read()
	case "write":
		out, err = fo.write()
	case "append":
		out, err = fo.append()
	case "list":
		out, err = fo.list()
	case "delete":
		out, err = fo.delete()
	case "exists":
		out, err = fo.exists()
	case "mkdir":
		out, err = fo.mkdir()
	default:
		return nil, inputError("file", "op %q: want read, write, append, list, delete, exists or mkdir", op)
	}
	if err != nil {
		return nil, err
	}
	out["path"] = r.Rel
	return out, nil
}

// fileOp is one operation on a resolved path.
type fileOp struct {
	root *os.Root
	r    Resolved
	in   map[string]any
}

// fail is a failure of the operation that trying again will not fix.
func (o fileOp) fail(format string, args ...any) error {
	return &Error{Err: fmt.Errorf("file %s: %s", o.r.Rel, fmt.Sprintf(format, args...))}
}

func (o fileOp) read() (map[string]any, error) {
	limit, err := intIn("file", o.in, "max_bytes", DefaultMaxRead, 0)
	if err != nil {
		return nil, err
	}
	enc, err := encodingIn(o.in)
	if err != nil {
		return nil, err
	}
	if !o.r.Exists {
		return nil, o.fail("no such file")
	}
	fh, err := o.root.Open(o.r.Real)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
	}
	if info.IsDir() {
		return nil, o.fail("is a directory (use op: list)")
	}
	if info.Size() > limit {
		return nil, o.fail("is %d bytes, more than max_bytes (%d)", info.Size(), limit)
	}
	// The file may grow after the stat: read one byte past the limit to
	// tell.
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
	}
	if int64(len(data)) > limit {
		return nil, o.fail("is more than max_bytes (%d)", limit)
	}
	content := string(data)
	if enc == "base64" {
		content = base64.StdEncoding.EncodeToString(data)
	} else if !utf8.Valid(data) {
		return nil, o.fail("is not UTF-8 text (read it with encoding: base64)")
	}
	return map[string]any{"content": content, "size": len(data)}, nil
}

// payload is what write and append put into the file.
func (o fileOp) payload() ([]byte, error) {
	enc, err := encodingIn(o.in)
	if err != nil {
		return nil, err
	}
	v, ok := o.in["content"]
	if !ok {
		return nil, inputError("file", "content is required for write and append")
	}
	if s, isText := v.(string); isText {
		if enc == "base64" {
			data, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, inputError("file", "content is not valid base64: %v", err)
			}
			return data, nil
		}
		return []byte(s), nil
	}
	if enc == "base64" {
		return nil, inputError("file", "encoding base64 needs content to be a string, not %s", describeValue(v))
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, inputError("file", "content cannot be written as JSON: %v", err)
	}
	return append(data, '\n'), nil
}

// writable checks that the path can take a file and creates its missing
// parents (inside: the path is resolved).
func (o fileOp) writable() error {
	if o.r.Rel == "." {
		return o.fail("is the workspace itself, not a file")
	}
	if o.r.Exists {
		info, err := o.root.Stat(o.r.Real)
		if err != nil {
			return fmt.Errorf("file %s: %w", o.r.Rel, err)
		}
		if info.IsDir() {
			return o.fail("is a directory")
		}
		return nil
	}
	if err := o.root.MkdirAll(filepath.Dir(o.r.Real), 0o755); err != nil {
		return o.fail("create its directory: %v", err)
	}
	return nil
}

func (o fileOp) write() (map[string]any, error) {
	data, err := o.payload()
	if err != nil {
		return nil, err
	}
	if err := o.writable(); err != nil {
		return nil, err
	}
	if err := writeAtomic(o.root, o.r.Real, data); err != nil {
		return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
	}
	return map[string]any{"size": len(data)}, nil
}

// append adds to the end of the file in one write. It is not atomic the
// way write is (copying the file each time would make logs quadratic): a
// crash may leave part of the text, and a step re-run after a crash
// appends again.
func (o fileOp) append() (map[string]any, error) {
	data, err := o.payload()
	if err != nil {
		return nil, err
	}
	if err := o.writable(); err != nil {
		return nil, err
	}
	fh, err := o.root.OpenFile(o.r.Real, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
	}
	_, werr := fh.Write(data)
	if werr == nil {
		werr = fh.Sync()
	}
	if err := errors.Join(werr, fh.Close()); err != nil {
		return nil, fmt.Errorf("file %s: append: %w", o.r.Rel, err)
	}
	return map[string]any{"size": len(data)}, nil
}

func (o fileOp) list() (map[string]any, error) {
	recursive, err := boolIn("file", o.in, "recursive")
	if err != nil {
		return nil, err
	}
	if !o.r.Exists {
		return nil, o.fail("no such directory")
	}
	dir := filepath.ToSlash(o.r.Real)
	entries := []any{}
	truncated := false
	err = fs.WalkDir(o.root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			if !d.IsDir() {
				return o.fail("is not a directory")
			}
			return nil
		}
		if len(entries) == maxListEntries {
			truncated = true
			return fs.SkipAll
		}
		rel, _ := filepath.Rel(dir, p)
		entries = append(entries, entryOf(filepath.ToSlash(rel), d))
		if d.IsDir() && !recursive {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) {
			return nil, err
		}
		return nil, fmt.Errorf("file %s: list: %w", o.r.Rel, err)
	}
	return map[string]any{"entries": entries, "truncated": truncated}, nil
}

// entryOf describes one listed entry. Symlinks are listed as such, not
// followed.
func entryOf(name string, d fs.DirEntry) map[string]any {
	e := map[string]any{"name": name}
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		e["type"] = "symlink"
	case d.IsDir():
		e["type"] = "dir"
	case d.Type().IsRegular():
		e["type"] = "file"
		if info, err := d.Info(); err == nil {
			e["size"] = info.Size()
		}
	default:
		e["type"] = "other"
	}
	return e
}

func (o fileOp) delete() (map[string]any, error) {
	recursive, err := boolIn("file", o.in, "recursive")
	if err != nil {
		return nil, err
	}
	if o.r.Rel == "." {
		return nil, o.fail("is the workspace itself; delete what is inside it instead")
	}
	if !o.r.Exists {
		// Deleting what is gone succeeds: a step re-run after a crash
		// finds its work done.
		return map[string]any{"deleted": false}, nil
	}
	info, err := o.root.Lstat(o.r.Entry)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
	}
	if info.IsDir() && recursive {
		err = o.root.RemoveAll(o.r.Entry)
	} else {
		err = o.root.Remove(o.r.Entry)
	}
	if err != nil {
		if info.IsDir() && !recursive {
			return nil, o.fail("is a directory that is not empty (delete it with recursive: true)")
		}
		return nil, fmt.Errorf("file %s: delete: %w", o.r.Rel, err)
	}
	return map[string]any{"deleted": true}, nil
}

func (o fileOp) exists() (map[string]any, error) {
	if !o.r.Exists {
		return map[string]any{"exists": false}, nil
	}
	info, err := o.root.Stat(o.r.Real)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
	}
	kind := "other"
	switch {
	case info.IsDir():
		kind = "dir"
	case info.Mode().IsRegular():
		kind = "file"
	}
	return map[string]any{"exists": true, "type": kind}, nil
}

func (o fileOp) mkdir() (map[string]any, error) {
	if o.r.Exists {
		info, err := o.root.Stat(o.r.Real)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", o.r.Rel, err)
		}
		if !info.IsDir() {
			return nil, o.fail("exists and is not a directory")
		}
		return map[string]any{"created": false}, nil
	}
	if err := o.root.MkdirAll(o.r.Real, 0o755); err != nil {
		return nil, fmt.Errorf("file %s: mkdir: %w", o.r.Rel, err)
	}
	return map[string]any{"created": true}, nil
}

func encodingIn(in map[string]any) (string, error) {
	enc, err := stringIn("file", in, "encoding", "utf8")
	if err != nil {
		return "", err
	}
	if enc != "utf8" && enc != "base64" {
		return "", inputError("file", "encoding %q: want utf8 or base64", enc)
	}
	return enc, nil
}

// writeAtomic replaces name (inside root) with data: a temporary file next
// to it is written and synced, then renamed over it, so the file holds its
// old content or the new one, whole. An existing file keeps its mode.
func writeAtomic(root *os.Root, name string, data []byte) (err error) {
	mode := fs.FileMode(0o644)
	if info, err := root.Stat(name); err == nil {
		mode = info.Mode().Perm()
	}
	dir := filepath.Dir(name)
	tmp := filepath.Join(dir, "."+filepath.Base(name)+".tmp-"+rand.Text())
	fh, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("create a temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			_ = fh.Close()
			_ = root.Remove(tmp)
		}
	}()
	if _, err = fh.Write(data); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err = fh.Chmod(mode); err != nil { // the umask may have narrowed it
		return fmt.Errorf("write: %w", err)
	}
	if err = fh.Sync(); err != nil {
		return fmt.Errorf("write: fsync: %w", err)
	}
	if err = fh.Close(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err = root.Rename(tmp, name); err != nil {
		return fmt.Errorf("write: rename: %w", err)
	}
	// The rename is durable once the directory is synced.
	if d, derr := root.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

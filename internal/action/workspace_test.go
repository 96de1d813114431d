package action

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// sandbox is a workspace next to a directory outside it that holds a
// secret, with symlinks from the workspace leading out.
type sandbox struct {
	ws      *Workspace
	outside string
	secret  string // a file outside
}

// escapes are paths that must never be resolved, each with what makes it
// escape.
func (s sandbox) escapes() map[string]string {
	return map[string]string{
		"parent":              "../x",
		"parent of a subdir":  "a/../../x",
		"absolute outside":    filepath.Join(s.outside, "x"),
		"absolute secret":     s.secret,
		"symlinked file":      "link-file",
		"symlinked dir":       "link-dir",
		"under symlinked dir": "link-dir/new.txt",
		"deep under link":     "sub/link-up/secret.txt",
		"dangling symlink":    "dangling",
	}
}

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := OpenWorkspace(filepath.Join(base, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(ws.Dir, "link-file")))
	must(os.Symlink(outside, filepath.Join(ws.Dir, "link-dir")))
	must(os.Symlink(filepath.Join(outside, "nope"), filepath.Join(ws.Dir, "dangling")))
	must(os.MkdirAll(filepath.Join(ws.Dir, "sub"), 0o755))
	must(os.Symlink("../../outside", filepath.Join(ws.Dir, "sub", "link-up")))
	return sandbox{ws: ws, outside: outside, secret: secret}
}

// untouched fails the test if anything outside the workspace changed.
func (s sandbox) untouched(t *testing.T) {
	t.Helper()
	entries, err := os.ReadDir(s.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("outside the workspace now holds %d entries", len(entries))
	}
	if data, err := os.ReadFile(s.secret); err != nil || string(data) != "secret" {
		t.Errorf("the file outside changed: %q %v", data, err)
	}
}

func TestOpenWorkspaceCreatesAPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "ws")
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(ws.Real)
	if err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("workspace %s: %v %v", ws.Real, info.Mode(), err)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenWorkspace(file); err == nil {
		t.Fatal("a file was accepted as a workspace")
	}
}

func TestResolveRefusesEveryEscape(t *testing.T) {
	s := newSandbox(t)
	for what, p := range s.escapes() {
		if r, err := s.ws.Resolve(p); !errors.Is(err, ErrOutsideWorkspace) {
			t.Errorf("%s (%s): resolved to %+v, %v", what, p, r, err)
		}
	}
	if _, err := s.ws.Resolve("a\x00b"); !errors.Is(err, ErrOutsideWorkspace) {
		t.Errorf("NUL: %v", err)
	}
}

func TestResolveInside(t *testing.T) {
	s := newSandbox(t)
	if err := os.WriteFile(filepath.Join(s.ws.Dir, "sub", "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Symlinks that stay inside are followed, relative or absolute.
	if err := os.Symlink("sub", filepath.Join(s.ws.Dir, "alias")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(s.ws.Real, "sub", "f.txt"), filepath.Join(s.ws.Dir, "abs-link")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in, rel, real, entry string
		exists               bool
	}{
		{"", ".", ".", ".", true},
		{".", ".", ".", ".", true},
		{"sub/./f.txt", "sub/f.txt", "sub/f.txt", "sub/f.txt", true},
		{"a/../sub", "sub", "sub", "sub", true},
		{filepath.Join(s.ws.Dir, "sub"), "sub", "sub", "sub", true},
		{"alias/f.txt", "alias/f.txt", "sub/f.txt", "sub/f.txt", true},
		{"alias", "alias", "sub", "alias", true},
		{"abs-link", "abs-link", "sub/f.txt", "abs-link", true},
		{"alias/new/deeper.txt", "alias/new/deeper.txt", "sub/new/deeper.txt", "sub/new/deeper.txt", false},
	}
	for _, c := range cases {
		r, err := s.ws.Resolve(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if r.Rel != c.rel || r.Real != c.real || r.Entry != c.entry || r.Exists != c.exists {
			t.Errorf("%q: got %+v, want rel %s real %s entry %s exists %v", c.in, r, c.rel, c.real, c.entry, c.exists)
		}
	}
}

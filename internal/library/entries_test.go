package library

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Entries takes plain files as they are and leaves everything else to
// Path: the first extension in lookup order wins, and a symlink — inside,
// outside or dangling — gets no path of its own.
func TestEntriesAgreeWithPath(t *testing.T) {
	l, dir := newLib(t)
	lib := filepath.Join(dir, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"both.json": "{}", "both.yaml": "a: 1", "plain.yml": "a: 1", "notes.txt": "", "Bad.yaml": ""} {
		if err := os.WriteFile(filepath.Join(lib, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(lib, "folder.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside.yaml")
	if err := os.WriteFile(outside, []byte("a: 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"inside.yaml":   filepath.Join(lib, "plain.yml"),
		"escape.yaml":   outside,
		"dangling.yaml": filepath.Join(lib, "missing.yaml"),
	} {
		if err := os.Symlink(target, filepath.Join(lib, link)); err != nil {
			t.Skip("no symlinks here:", err)
		}
	}
	entries, err := l.Entries(Saved)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
		want := map[string]string{"both": filepath.Join(lib, "both.yaml"), "plain": filepath.Join(lib, "plain.yml")}[e.Name]
		if e.Path != want {
			t.Errorf("%s: path %q, want %q", e.Name, e.Path, want)
		}
		if e.Path == "" {
			continue
		}
		if p, err := l.Path(Saved, e.Name); err != nil || p != e.Path {
			t.Errorf("%s: Path says %q, %v; Entries %q", e.Name, p, err, e.Path)
		}
	}
	if want := []string{"both", "dangling", "escape", "folder", "inside", "plain"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if got, _ := l.Names(Saved); !slices.Equal(got, names) {
		t.Errorf("Names %v, Entries %v", got, names)
	}
}

package library

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func version(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func newLib(t *testing.T) (*Library, string) {
	t.Helper()
	dir := t.TempDir()
	return New(Options{WorkflowsDir: filepath.Join(dir, "workflows"), DraftsDir: filepath.Join(dir, "drafts"),
		PreviousDir: filepath.Join(dir, "previous"), Version: version}), dir
}

func TestSaveNeedsTheExpectedVersionToReplace(t *testing.T) {
	l, dir := newLib(t)
	f, err := l.Save(Saved, "deploy", ".yaml", []byte("v1"), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != version([]byte("v1")) || f.Path != filepath.Join(dir, "workflows", "deploy.yaml") {
		t.Fatalf("saved %+v", f)
	}
	// Without a version or overwrite: a conflict naming the current version.
	_, err = l.Save(Saved, "deploy", ".yaml", []byte("v2"), WriteOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Current != f.Version {
		t.Fatalf("save over: %v", err)
	}
	_, err = l.Save(Saved, "deploy", ".yaml", []byte("v2"), WriteOptions{ExpectedVersion: "sha256:stale"})
	if !errors.As(err, &ce) || ce.Current != f.Version || ce.Expected != "sha256:stale" {
		t.Fatalf("stale save: %v", err)
	}
	if got, _ := os.ReadFile(f.Path); string(got) != "v1" {
		t.Fatalf("a refused save changed the file: %q", got)
	}
	f2, err := l.Save(Saved, "deploy", ".yaml", []byte("v2"), WriteOptions{ExpectedVersion: f.Version})
	if err != nil || string(f2.Content) != "v2" {
		t.Fatalf("save with version: %v", err)
	}
	f3, err := l.Save(Saved, "deploy", ".json", []byte("v3"), WriteOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	// One file per name: the YAML spelling is gone, both old contents kept.
	if _, err := os.Stat(f.Path); !os.IsNotExist(err) {
		t.Fatalf("old spelling still there: %v", err)
	}
	if got, _ := l.Get(Saved, "deploy"); string(got.Content) != "v3" || got.Path != f3.Path {
		t.Fatalf("get: %+v", got)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "previous", "deploy.workflow@*"))
	if len(kept) != 2 {
		t.Fatalf("previous versions kept: %v", kept)
	}
	// Expecting a version of a file that is gone is a conflict too.
	_, err = l.Save(Saved, "gone", ".yaml", []byte("x"), WriteOptions{ExpectedVersion: f.Version})
	if !errors.As(err, &ce) || ce.Current != "" {
		t.Fatalf("expected version of a missing file: %v", err)
	}
}

func TestConcurrentSavesWithOneVersionExactlyOneWins(t *testing.T) {
	l, _ := newLib(t)
	base, err := l.Save(Saved, "w", ".yaml", []byte("base"), WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		cur, _ := l.Get(Saved, "w")
		const n = 8
		var wg sync.WaitGroup
		results := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, results[i] = l.Save(Saved, "w", ".yaml", fmt.Appendf(nil, "round %d writer %d", round, i), WriteOptions{ExpectedVersion: cur.Version})
			})
		}
		wg.Wait()
		won := -1
		for i, err := range results {
			if err == nil {
				if won >= 0 {
					t.Fatalf("round %d: writers %d and %d both won", round, won, i)
				}
				won = i
			}
		}
		if won < 0 {
			t.Fatalf("round %d: nobody won: %v", round, results)
		}
		winner, _ := l.Get(Saved, "w")
		if string(winner.Content) != fmt.Sprintf("round %d writer %d", round, won) {
			t.Fatalf("round %d: file holds %q, winner %d", round, winner.Content, won)
		}
		for i, err := range results {
			var ce *ConflictError
			if i != won && (!errors.As(err, &ce) || ce.Current != winner.Version) {
				t.Fatalf("round %d writer %d: %v, want a conflict carrying %s", round, i, err, winner.Version)
			}
		}
	}
	_ = base
}

// A write that stops at any step (as a crash would) leaves the old file or
// the new one, whole, and no temporary file behind.
func TestInterruptedWritesLeaveOldOrNew(t *testing.T) {
	steps := []string{"create", "write", "sync", "rename", "renamed"}
	for _, step := range steps {
		for nth := 1; nth <= 2; nth++ { // the backup in previous/ writes first
			t.Run(fmt.Sprintf("%s#%d", step, nth), func(t *testing.T) {
				l, dir := newLib(t)
				old, err := l.Save(Saved, "w", ".yaml", []byte("old content"), WriteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				crash := errors.New("crash")
				count := 0
				failpoint = func(s string) error {
					if s == step {
						count++
						if count == nth {
							return crash
						}
					}
					return nil
				}
				defer func() { failpoint = nil }()
				_, saveErr := l.Save(Saved, "w", ".yaml", []byte("new content"), WriteOptions{ExpectedVersion: old.Version})
				_, renErr := l.Rename("w", "w2", "", func(b []byte) ([]byte, error) { return b, nil })
				failpoint = nil
				for _, name := range []string{"w", "w2"} {
					f, err := l.Get(Saved, name)
					if err != nil {
						continue
					}
					if c := string(f.Content); c != "old content" && c != "new content" {
						t.Fatalf("%s holds %q", name, c)
					}
				}
				_, e1 := l.Get(Saved, "w")
				_, e2 := l.Get(Saved, "w2")
				if e1 != nil && e2 != nil {
					t.Fatalf("the workflow is gone (save: %v, rename: %v)", saveErr, renErr)
				}
				tmps, _ := filepath.Glob(filepath.Join(dir, "*", ".*.tmp-*"))
				if len(tmps) > 0 {
					t.Fatalf("temporary files left: %v", tmps)
				}
			})
		}
	}
}

func TestUnsafeNamesTouchNothing(t *testing.T) {
	l, dir := newLib(t)
	outside := filepath.Join(dir, "outside.yaml")
	if err := os.WriteFile(outside, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Save(Saved, "ok", ".yaml", []byte("x"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A library entry that is a symlink to a file outside.
	if err := os.Symlink(outside, filepath.Join(dir, "workflows", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	bad := []string{"../etc/passwd", "/etc/passwd", "a/b", "..", "a\x00b", "", "UPPER", `a\b`, "../outside"}
	for _, name := range bad {
		ops := map[string]error{}
		_, ops["get"] = l.Get(Saved, name)
		_, ops["save"] = l.Save(Saved, name, ".yaml", []byte("pwned"), WriteOptions{Overwrite: true})
		_, ops["draft"] = l.Save(Draft, name, ".yaml", []byte("pwned"), WriteOptions{Overwrite: true})
		_, ops["delete"] = l.Delete(Saved, name, "")
		_, ops["rename from"] = l.Rename(name, "fine", "", func(b []byte) ([]byte, error) { return b, nil })
		_, ops["rename to"] = l.Rename("ok", name, "", func(b []byte) ([]byte, error) { return b, nil })
		for op, err := range ops {
			if !IsUnsafe(err) {
				t.Errorf("%s %q: %v, want an unsafe-name error", op, name, err)
			}
			if strings.ContainsRune(fmt.Sprint(err), 0) {
				t.Errorf("%s %q: NUL in the message", op, name)
			}
		}
	}
	for op, fn := range map[string]func() error{
		"get": func() error { _, err := l.Get(Saved, "link"); return err },
		"save": func() error {
			_, err := l.Save(Saved, "link", ".yaml", []byte("pwned"), WriteOptions{Overwrite: true})
			return err
		},
		"delete": func() error { _, err := l.Delete(Saved, "link", ""); return err },
		"rename from": func() error {
			_, err := l.Rename("link", "fine", "", func(b []byte) ([]byte, error) { return b, nil })
			return err
		},
	} {
		if err := fn(); !IsUnsafe(err) {
			t.Errorf("%s through an outside symlink: %v", op, err)
		}
	}
	if got, _ := os.ReadFile(outside); string(got) != "secret" {
		t.Fatalf("the outside file changed: %q", got)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "outside.yaml,previous,workflows" && strings.Join(names, ",") != "outside.yaml,workflows" {
		t.Fatalf("the home holds %v", names)
	}
	if _, err := os.Stat(filepath.Join(dir, "drafts")); !os.IsNotExist(err) {
		t.Fatal("a refused draft created the drafts directory")
	}
}

func TestRenameAndDelete(t *testing.T) {
	l, dir := newLib(t)
	f, _ := l.Save(Saved, "a", ".yaml", []byte("name: a"), WriteOptions{})
	if _, err := l.Save(Saved, "b", ".yaml", []byte("name: b"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	rewrite := func(b []byte) ([]byte, error) {
		return []byte(strings.Replace(string(b), "name: a", "name: c", 1)), nil
	}
	var ce *ConflictError
	if _, err := l.Rename("a", "b", "", rewrite); !errors.As(err, &ce) {
		t.Fatalf("rename onto an existing name: %v", err)
	}
	if _, err := l.Rename("a", "c", "sha256:other", rewrite); !errors.As(err, &ce) || ce.Current != f.Version {
		t.Fatalf("rename at a stale version: %v", err)
	}
	c, err := l.Rename("a", "c", f.Version, rewrite)
	if err != nil || string(c.Content) != "name: c" || c.Path != filepath.Join(dir, "workflows", "c.yaml") {
		t.Fatalf("rename: %+v %v", c, err)
	}
	if _, err := l.Get(Saved, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("old name still there: %v", err)
	}
	if _, err := l.Delete(Saved, "c", "sha256:other"); !errors.As(err, &ce) {
		t.Fatalf("delete at a stale version: %v", err)
	}
	if _, err := l.Delete(Saved, "c", c.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Delete(Saved, "c", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	names, _ := l.Names(Saved)
	if strings.Join(names, ",") != "b" {
		t.Fatalf("names %v", names)
	}
	kept, _ := filepath.Glob(filepath.Join(dir, "previous", "c.workflow@*"))
	if len(kept) != 1 {
		t.Fatalf("the deleted workflow was not kept: %v", kept)
	}
}

// semanticVersion ignores comment lines, as the workflow version ignores
// comments and formatting.
func semanticVersion(b []byte) string {
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			kept = append(kept, line)
		}
	}
	return version([]byte(strings.Join(kept, "\n")))
}

// Two edits of the same file that differ only in what the version ignores
// (comments): the second writer started from the first's content too, so
// it conflicts — the check covers the file's bytes (its revision), not its
// version. Saves, renames and deletes alike.
func TestCommentOnlyEditsConflict(t *testing.T) {
	dir := t.TempDir()
	l := New(Options{WorkflowsDir: filepath.Join(dir, "workflows"), DraftsDir: filepath.Join(dir, "drafts"),
		PreviousDir: filepath.Join(dir, "previous"), Version: semanticVersion})
	for _, k := range []Kind{Saved, Draft} {
		f, err := l.Save(k, "w", ".yaml", []byte("# one\nsteps: []\n"), WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if f.Revision != version(f.Content) || f.Version != semanticVersion(f.Content) || f.Revision == f.Version {
			t.Fatalf("revision %s, version %s", f.Revision, f.Version)
		}
		// Both writers read f; both change the comment.
		a, err := l.Save(k, "w", ".yaml", []byte("# two\nsteps: []\n"), WriteOptions{ExpectedVersion: f.Revision})
		if err != nil || a.Version != f.Version || a.Revision == f.Revision {
			t.Fatalf("first edit: %+v %v", a, err)
		}
		for _, stale := range []string{f.Revision, f.Version} {
			_, err = l.Save(k, "w", ".yaml", []byte("# three\nsteps: []\n"), WriteOptions{ExpectedVersion: stale})
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.Current != a.Version || ce.CurrentRevision != a.Revision {
				t.Fatalf("%s: second edit from %s: %v", k, stale, err)
			}
			if _, err := l.Delete(k, "w", stale); !errors.As(err, &ce) {
				t.Fatalf("%s: delete from %s: %v", k, stale, err)
			}
			if k == Saved {
				if _, err := l.Rename("w", "v", stale, func(b []byte) ([]byte, error) { return b, nil }); !errors.As(err, &ce) {
					t.Fatalf("rename from %s: %v", stale, err)
				}
			}
		}
		if got, _ := l.Get(k, "w"); string(got.Content) != "# two\nsteps: []\n" {
			t.Fatalf("%s: the first edit was lost: %q", k, got.Content)
		}
		if _, err := l.Delete(k, "w", a.Revision); err != nil {
			t.Fatalf("%s: delete at the revision: %v", k, err)
		}
	}
}

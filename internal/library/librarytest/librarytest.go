// Package librarytest is the conformance suite of library backends: the
// home's files (package library) and the database (store/postgres) run
// the same cases, so that a workflow library behaves alike wherever it
// lives.
package librarytest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"stepwise.dev/stepwise/internal/library"
)

// Version is the version function the suite opens backends with: the
// hash of the content with its comment lines (# …) left out, so that a
// version differs from a revision the way a workflow's does.
func Version(b []byte) string {
	var kept []string
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			kept = append(kept, line)
		}
	}
	h := sha256.Sum256([]byte(strings.Join(kept, "\n")))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Open returns an empty backend using version, for one test.
type Open func(t *testing.T, version func([]byte) string) library.Backend

// Run runs the suite against the backends open returns.
func Run(t *testing.T, open Open) {
	cases := []struct {
		name string
		fn   func(*testing.T, library.Backend)
	}{
		{"SaveAndGet", testSaveAndGet},
		{"ReplaceNeedsTheRevision", testReplaceNeedsTheRevision},
		{"CommentOnlyEditsConflict", testCommentOnlyEditsConflict},
		{"OneEntryPerName", testOneEntryPerName},
		{"KindsAreApart", testKindsAreApart},
		{"ListingIsSorted", testListingIsSorted},
		{"UnsafeNames", testUnsafeNames},
		{"Delete", testDelete},
		{"Rename", testRename},
		{"PreviousVersions", testPreviousVersions},
		{"ConcurrentSavesOneWins", testConcurrentSavesOneWins},
		{"ConcurrentCreatesOneWins", testConcurrentCreatesOneWins},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open(t, Version)) })
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func same(b []byte) ([]byte, error) { return b, nil }

func testSaveAndGet(t *testing.T, l library.Backend) {
	content := []byte("# a comment\nname: deploy\n")
	f := must[*library.File](t)(l.Save(library.Saved, "deploy", ".yaml", content, library.WriteOptions{}))
	if f.Name != "deploy" || f.Kind != library.Saved || string(f.Content) != string(content) ||
		f.Version != Version(content) || f.Revision != library.Revision(content) || f.ModTime.IsZero() ||
		filepath.Ext(f.Path) != ".yaml" {
		t.Fatalf("saved %+v", f)
	}
	g := must[*library.File](t)(l.Get(library.Saved, "deploy"))
	if g.Name != f.Name || g.Kind != f.Kind || string(g.Content) != string(content) || g.Version != f.Version ||
		g.Revision != f.Revision || g.Path != f.Path || g.ModTime.IsZero() {
		t.Fatalf("got %+v, saved %+v", g, f)
	}
	if _, err := l.Get(library.Saved, "other"); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("get a missing name: %v", err)
	}
	if _, err := l.Get(library.Draft, "deploy"); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("get the draft of a saved name: %v", err)
	}
}

func testReplaceNeedsTheRevision(t *testing.T, l library.Backend) {
	v1 := must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("v1"), library.WriteOptions{}))
	var ce *library.ConflictError
	_, err := l.Save(library.Saved, "w", ".yaml", []byte("v2"), library.WriteOptions{})
	if !errors.As(err, &ce) || ce.Current != v1.Version || ce.CurrentRevision != v1.Revision || ce.Expected != "" || ce.Name != "w" || ce.Kind != library.Saved {
		t.Fatalf("save over without a revision: %v", err)
	}
	_, err = l.Save(library.Saved, "w", ".yaml", []byte("v2"), library.WriteOptions{ExpectedVersion: "sha256:stale"})
	if !errors.As(err, &ce) || ce.CurrentRevision != v1.Revision || ce.Expected != "sha256:stale" {
		t.Fatalf("save over a stale revision: %v", err)
	}
	if got := must[*library.File](t)(l.Get(library.Saved, "w")); string(got.Content) != "v1" {
		t.Fatalf("a refused save changed the entry: %q", got.Content)
	}
	v2 := must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("v2"), library.WriteOptions{ExpectedVersion: v1.Revision}))
	if string(v2.Content) != "v2" || v2.Revision != library.Revision([]byte("v2")) {
		t.Fatalf("save at the revision: %+v", v2)
	}
	v3 := must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("v3"), library.WriteOptions{Overwrite: true}))
	if string(v3.Content) != "v3" {
		t.Fatalf("overwrite: %+v", v3)
	}
	// Expecting a revision of an entry that is not there: a conflict
	// with no current version.
	_, err = l.Save(library.Saved, "gone", ".yaml", []byte("x"), library.WriteOptions{ExpectedVersion: v1.Revision})
	if !errors.As(err, &ce) || ce.Current != "" || ce.CurrentRevision != "" || ce.Expected != v1.Revision {
		t.Fatalf("a revision of a missing entry: %v", err)
	}
	if _, err := l.Get(library.Saved, "gone"); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("a refused save created the entry: %v", err)
	}
}

// Edits that differ only in what the version ignores conflict: writes
// check the revision (the bytes).
func testCommentOnlyEditsConflict(t *testing.T, l library.Backend) {
	for _, k := range []library.Kind{library.Saved, library.Draft} {
		f := must[*library.File](t)(l.Save(k, "w", ".yaml", []byte("# one\nsteps: []\n"), library.WriteOptions{}))
		if f.Revision == f.Version {
			t.Fatalf("revision %s equals version", f.Revision)
		}
		a := must[*library.File](t)(l.Save(k, "w", ".yaml", []byte("# two\nsteps: []\n"), library.WriteOptions{ExpectedVersion: f.Revision}))
		if a.Version != f.Version || a.Revision == f.Revision {
			t.Fatalf("comment edit: %+v", a)
		}
		for _, stale := range []string{f.Revision, f.Version} {
			var ce *library.ConflictError
			if _, err := l.Save(k, "w", ".yaml", []byte("# three\nsteps: []\n"), library.WriteOptions{ExpectedVersion: stale}); !errors.As(err, &ce) || ce.CurrentRevision != a.Revision {
				t.Fatalf("%s: save from %s: %v", k, stale, err)
			}
			if _, err := l.Delete(k, "w", stale); !errors.As(err, &ce) {
				t.Fatalf("%s: delete from %s: %v", k, stale, err)
			}
			if k == library.Saved {
				if _, err := l.Rename("w", "v", stale, same); !errors.As(err, &ce) {
					t.Fatalf("rename from %s: %v", stale, err)
				}
			}
		}
		must[*library.File](t)(l.Delete(k, "w", a.Revision))
	}
}

// Saving a name in another format replaces its entry: one per name.
func testOneEntryPerName(t *testing.T, l library.Backend) {
	y := must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("a: 1"), library.WriteOptions{}))
	j := must[*library.File](t)(l.Save(library.Saved, "w", ".json", []byte(`{"a":1}`), library.WriteOptions{ExpectedVersion: y.Revision}))
	if filepath.Ext(j.Path) != ".json" {
		t.Fatalf("saved as JSON at %s", j.Path)
	}
	g := must[*library.File](t)(l.Get(library.Saved, "w"))
	if string(g.Content) != `{"a":1}` || g.Path != j.Path {
		t.Fatalf("get after the format changed: %+v", g)
	}
	if names := must[[]string](t)(l.Names(library.Saved)); strings.Join(names, ",") != "w" {
		t.Fatalf("names %v", names)
	}
	if _, err := l.Save(library.Saved, "w", ".txt", []byte("x"), library.WriteOptions{Overwrite: true}); err == nil {
		t.Fatal("saved with extension .txt")
	}
}

func testKindsAreApart(t *testing.T, l library.Backend) {
	must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("saved"), library.WriteOptions{}))
	d := must[*library.File](t)(l.Save(library.Draft, "w", ".yaml", []byte("draft"), library.WriteOptions{}))
	if d.Kind != library.Draft || d.Path == must[*library.File](t)(l.Get(library.Saved, "w")).Path {
		t.Fatalf("draft %+v", d)
	}
	if g := must[*library.File](t)(l.Get(library.Draft, "w")); string(g.Content) != "draft" {
		t.Fatalf("draft holds %q", g.Content)
	}
	must[*library.File](t)(l.Delete(library.Draft, "w", ""))
	if g := must[*library.File](t)(l.Get(library.Saved, "w")); string(g.Content) != "saved" {
		t.Fatalf("deleting the draft touched the workflow: %q", g.Content)
	}
	if l.Dir(library.Saved) == l.Dir(library.Draft) {
		t.Fatalf("both kinds live in %s", l.Dir(library.Saved))
	}
}

func testListingIsSorted(t *testing.T, l library.Backend) {
	if names := must[[]string](t)(l.Names(library.Saved)); len(names) != 0 {
		t.Fatalf("an empty library lists %v", names)
	}
	for _, n := range []string{"zeta", "alpha", "mid-1", "mid_2", "0-first"} {
		must[*library.File](t)(l.Save(library.Saved, n, ".yaml", []byte("name: "+n), library.WriteOptions{}))
	}
	must[*library.File](t)(l.Save(library.Draft, "draft-only", ".yaml", []byte("x"), library.WriteOptions{}))
	want := []string{"0-first", "alpha", "mid-1", "mid_2", "zeta"}
	if names := must[[]string](t)(l.Names(library.Saved)); !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	entries := must[[]library.Entry](t)(l.Entries(library.Saved))
	if len(entries) != len(want) {
		t.Fatalf("entries %v", entries)
	}
	for i, e := range entries {
		if e.Name != want[i] {
			t.Fatalf("entry %d is %q, want %q", i, e.Name, want[i])
		}
	}
	// A stamp, where given, changes with the content.
	before := entries[1].Stamp
	cur := must[*library.File](t)(l.Get(library.Saved, "alpha"))
	must[*library.File](t)(l.Save(library.Saved, "alpha", ".yaml", []byte("name: alpha\n# edited"), library.WriteOptions{ExpectedVersion: cur.Revision}))
	if after := must[[]library.Entry](t)(l.Entries(library.Saved))[1].Stamp; before != "" && after == before {
		t.Fatalf("the stamp %q did not change with the content", after)
	}
	if names := must[[]string](t)(l.Names(library.Draft)); !slices.Equal(names, []string{"draft-only"}) {
		t.Fatalf("drafts %v", names)
	}
}

func testUnsafeNames(t *testing.T, l library.Backend) {
	must[*library.File](t)(l.Save(library.Saved, "ok", ".yaml", []byte("x"), library.WriteOptions{}))
	bad := []string{"../etc/passwd", "/etc/passwd", "a/b", "..", "a\x00b", "", "UPPER", `a\b`, "a.b", strings.Repeat("a", 65)}
	for _, name := range bad {
		ops := map[string]error{}
		_, ops["get"] = l.Get(library.Saved, name)
		_, ops["save"] = l.Save(library.Saved, name, ".yaml", []byte("pwned"), library.WriteOptions{Overwrite: true})
		_, ops["draft"] = l.Save(library.Draft, name, ".yaml", []byte("pwned"), library.WriteOptions{Overwrite: true})
		_, ops["delete"] = l.Delete(library.Saved, name, "")
		_, ops["rename from"] = l.Rename(name, "fine", "", same)
		_, ops["rename to"] = l.Rename("ok", name, "", same)
		_, ops["previous"] = l.Previous(library.Saved, name)
		for op, err := range ops {
			if !library.IsUnsafe(err) {
				t.Errorf("%s %q: %v, want an unsafe-name error", op, name, err)
			}
			if strings.ContainsRune(fmt.Sprint(err), 0) {
				t.Errorf("%s %q: NUL in the message", op, name)
			}
		}
	}
	if names := must[[]string](t)(l.Names(library.Saved)); !slices.Equal(names, []string{"ok"}) {
		t.Fatalf("names after refused writes: %v", names)
	}
	if names := must[[]string](t)(l.Names(library.Draft)); len(names) != 0 {
		t.Fatalf("drafts after refused writes: %v", names)
	}
}

func testDelete(t *testing.T, l library.Backend) {
	f := must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("x"), library.WriteOptions{}))
	var ce *library.ConflictError
	if _, err := l.Delete(library.Saved, "w", "sha256:other"); !errors.As(err, &ce) || ce.CurrentRevision != f.Revision {
		t.Fatalf("delete at a stale revision: %v", err)
	}
	d := must[*library.File](t)(l.Delete(library.Saved, "w", f.Revision))
	if string(d.Content) != "x" || d.Revision != f.Revision || d.Version != f.Version {
		t.Fatalf("deleted %+v", d)
	}
	if _, err := l.Get(library.Saved, "w"); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := l.Delete(library.Saved, "w", ""); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// A revision of a missing entry: a conflict saying it is gone.
	if _, err := l.Delete(library.Saved, "w", f.Revision); !errors.As(err, &ce) || ce.Current != "" {
		t.Fatalf("delete a missing entry at a revision: %v", err)
	}
}

func testRename(t *testing.T, l library.Backend) {
	a := must[*library.File](t)(l.Save(library.Saved, "a", ".json", []byte(`{"name":"a"}`), library.WriteOptions{}))
	must[*library.File](t)(l.Save(library.Saved, "b", ".yaml", []byte("name: b"), library.WriteOptions{}))
	rewrite := func(b []byte) ([]byte, error) {
		return []byte(strings.Replace(string(b), `"a"`, `"c"`, 1)), nil
	}
	var ce *library.ConflictError
	if _, err := l.Rename("a", "b", "", rewrite); !errors.As(err, &ce) || ce.Name != "b" || ce.CurrentRevision == "" {
		t.Fatalf("rename onto an existing name: %v", err)
	}
	if _, err := l.Rename("a", "c", "sha256:other", rewrite); !errors.As(err, &ce) || ce.CurrentRevision != a.Revision {
		t.Fatalf("rename at a stale revision: %v", err)
	}
	if _, err := l.Rename("missing", "d", "", rewrite); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("rename a missing name: %v", err)
	}
	refused := errors.New("refused")
	if _, err := l.Rename("a", "c", "", func([]byte) ([]byte, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Fatalf("rename whose rewrite fails: %v", err)
	}
	if _, err := l.Get(library.Saved, "c"); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("a failed rename left the new name: %v", err)
	}
	c := must[*library.File](t)(l.Rename("a", "c", a.Revision, rewrite))
	if c.Name != "c" || string(c.Content) != `{"name":"c"}` || filepath.Ext(c.Path) != ".json" || c.Revision != library.Revision(c.Content) {
		t.Fatalf("renamed %+v", c)
	}
	if _, err := l.Get(library.Saved, "a"); !errors.Is(err, library.ErrNotFound) {
		t.Fatalf("old name after rename: %v", err)
	}
	if names := must[[]string](t)(l.Names(library.Saved)); !slices.Equal(names, []string{"b", "c"}) {
		t.Fatalf("names after rename %v", names)
	}
	prev := must[[]library.File](t)(l.Previous(library.Saved, "a"))
	if len(prev) != 1 || string(prev[0].Content) != `{"name":"a"}` {
		t.Fatalf("the renamed workflow's old content was not kept: %+v", prev)
	}
}

// What writes replace and deletes remove is kept, oldest first, and
// saving again after a delete works.
func testPreviousVersions(t *testing.T, l library.Backend) {
	if prev := must[[]library.File](t)(l.Previous(library.Saved, "w")); len(prev) != 0 {
		t.Fatalf("previous of a new name: %+v", prev)
	}
	f := must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("one"), library.WriteOptions{}))
	f = must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("two"), library.WriteOptions{ExpectedVersion: f.Revision}))
	f = must[*library.File](t)(l.Save(library.Saved, "w", ".json", []byte("three"), library.WriteOptions{ExpectedVersion: f.Revision}))
	must[*library.File](t)(l.Delete(library.Saved, "w", f.Revision))
	must[*library.File](t)(l.Save(library.Draft, "w", ".yaml", []byte("draft one"), library.WriteOptions{}))
	must[*library.File](t)(l.Save(library.Draft, "w", ".yaml", []byte("draft two"), library.WriteOptions{Overwrite: true}))
	prev := must[[]library.File](t)(l.Previous(library.Saved, "w"))
	var got []string
	for _, p := range prev {
		got = append(got, string(p.Content))
		if p.Name != "w" || p.Kind != library.Saved || p.Revision != library.Revision(p.Content) || p.Version != Version(p.Content) || p.ModTime.IsZero() {
			t.Fatalf("previous %+v", p)
		}
	}
	if !slices.Equal(got, []string{"one", "two", "three"}) {
		t.Fatalf("previous versions %q", got)
	}
	if filepath.Ext(prev[2].Path) != ".json" {
		t.Fatalf("the JSON version was kept at %s", prev[2].Path)
	}
	if d := must[[]library.File](t)(l.Previous(library.Draft, "w")); len(d) != 1 || string(d[0].Content) != "draft one" {
		t.Fatalf("previous drafts %+v", d)
	}
	again := must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("four"), library.WriteOptions{}))
	if string(again.Content) != "four" {
		t.Fatalf("saved after delete: %+v", again)
	}
}

// Writers that all read the same revision: exactly one wins, the others
// get a conflict carrying the winner's revision.
func testConcurrentSavesOneWins(t *testing.T, l library.Backend) {
	must[*library.File](t)(l.Save(library.Saved, "w", ".yaml", []byte("base"), library.WriteOptions{}))
	for round := range 5 {
		cur := must[*library.File](t)(l.Get(library.Saved, "w"))
		const n = 8
		var wg sync.WaitGroup
		results := make([]error, n)
		for i := range n {
			wg.Go(func() {
				_, results[i] = l.Save(library.Saved, "w", ".yaml", fmt.Appendf(nil, "round %d writer %d", round, i), library.WriteOptions{ExpectedVersion: cur.Revision})
			})
		}
		wg.Wait()
		won := oneWinner(t, results)
		winner := must[*library.File](t)(l.Get(library.Saved, "w"))
		if string(winner.Content) != fmt.Sprintf("round %d writer %d", round, won) {
			t.Fatalf("round %d: entry holds %q, winner %d", round, winner.Content, won)
		}
		for i, err := range results {
			var ce *library.ConflictError
			if i != won && (!errors.As(err, &ce) || ce.CurrentRevision != winner.Revision) {
				t.Fatalf("round %d writer %d: %v, want a conflict carrying %s", round, i, err, winner.Revision)
			}
		}
	}
}

// Writers creating one new name at once: one creates it, the others are
// told it exists.
func testConcurrentCreatesOneWins(t *testing.T, l library.Backend) {
	const n = 8
	var wg sync.WaitGroup
	results := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, results[i] = l.Save(library.Draft, "new", ".yaml", fmt.Appendf(nil, "writer %d", i), library.WriteOptions{})
		})
	}
	wg.Wait()
	won := oneWinner(t, results)
	if g := must[*library.File](t)(l.Get(library.Draft, "new")); string(g.Content) != fmt.Sprintf("writer %d", won) {
		t.Fatalf("entry holds %q, winner %d", g.Content, won)
	}
	if prev := must[[]library.File](t)(l.Previous(library.Draft, "new")); len(prev) != 0 {
		t.Fatalf("creating kept previous versions: %+v", prev)
	}
}

func oneWinner(t *testing.T, results []error) int {
	t.Helper()
	won := -1
	for i, err := range results {
		if err == nil {
			if won >= 0 {
				t.Fatalf("writers %d and %d both won", won, i)
			}
			won = i
		} else if !errors.As(err, new(*library.ConflictError)) {
			t.Fatalf("writer %d: %v, want a conflict", i, err)
		}
	}
	if won < 0 {
		t.Fatalf("nobody won: %v", results)
	}
	return won
}

// Benchmark measures a backend's save (replacing an entry at its
// revision), get, and listing of 100 entries; open returns an empty
// backend.
func Benchmark(b *testing.B, open func(b *testing.B) library.Backend) {
	content := []byte("version: 1\nname: w\nsteps:\n  - {id: a, uses: noop}\n")
	b.Run("Save", func(b *testing.B) {
		l := open(b)
		f, err := l.Save(library.Saved, "w", ".yaml", content, library.WriteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; b.Loop(); i++ {
			if f, err = l.Save(library.Saved, "w", ".yaml", fmt.Appendf(nil, "%s# %d\n", content, i), library.WriteOptions{ExpectedVersion: f.Revision}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		l := open(b)
		if _, err := l.Save(library.Saved, "w", ".yaml", content, library.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := l.Get(library.Saved, "w"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Entries100", func(b *testing.B) {
		l := open(b)
		for i := range 100 {
			if _, err := l.Save(library.Saved, fmt.Sprintf("w%03d", i), ".yaml", content, library.WriteOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			if es, err := l.Entries(library.Saved); err != nil || len(es) != 100 {
				b.Fatal(len(es), err)
			}
		}
	})
}

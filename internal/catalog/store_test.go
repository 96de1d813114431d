package catalog

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/library"
)

func TestStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "catalogs")
	s := NewStore(dir)
	if cs, err := s.List(); err != nil || len(cs) != 0 {
		t.Fatalf("empty store: %v %v", cs, err)
	}
	c, _ := build(t, "petstore-swagger2.yaml", Options{Title: "Petstore", Enabled: true, Auth: map[string]Credential{"api_key": {Value: "$K"}}})
	if old, err := s.Put(c, false); err != nil || old != nil {
		t.Fatalf("put: %v %v", old, err)
	}
	got, err := s.Get("petstore")
	if err != nil {
		t.Fatal(err)
	}
	// What was built is what is read back, schemas included.
	if !reflect.DeepEqual(got, c) {
		t.Errorf("read back differs:\n%s\n%s", jsonOf(got), jsonOf(c))
	}
	if _, err := s.Put(c, false); !errors.Is(err, ErrExists) {
		t.Errorf("second put: %v", err)
	}
	c2 := *c
	c2.Title = "Petstore 2"
	if old, err := s.Put(&c2, true); err != nil || old == nil || old.Title != "Petstore" {
		t.Fatalf("overwrite: %v %v", old, err)
	}
	if c, err := s.Update("petstore", func(c *Catalog) error { c.Enabled = false; return nil }); err != nil || c.Enabled {
		t.Fatalf("update: %v", err)
	}
	if got, _ := s.Get("petstore"); got.Enabled || got.Title != "Petstore 2" {
		t.Errorf("after update: %+v", got)
	}
	// No temporary files are left next to the catalog.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "petstore.json" && e.Name() != ".lock" {
			t.Errorf("left in the directory: %s", e.Name())
		}
	}
	// A broken file is reported by List, next to the good catalogs.
	if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := s.List()
	if len(cs) != 1 || cs[0].Name != "petstore" || err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("list with a broken file: %d %v", len(cs), err)
	}
	// A symlink is not followed.
	outside := filepath.Join(t.TempDir(), "x.json")
	_ = os.WriteFile(outside, []byte("{}"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get("link"); !errors.Is(err, library.ErrUnsafeName) {
		t.Errorf("symlink: %v", err)
	}
	for _, name := range []string{"../etc/passwd", "/abs", "a/b", ".."} {
		if _, err := s.Get(name); !errors.Is(err, library.ErrUnsafeName) {
			t.Errorf("Get(%q): %v", name, err)
		}
		if _, err := s.Remove(name); !errors.Is(err, library.ErrUnsafeName) {
			t.Errorf("Remove(%q): %v", name, err)
		}
	}
	if old, err := s.Remove("petstore"); err != nil || old.Name != "petstore" {
		t.Fatalf("remove: %v", err)
	}
	if _, err := s.Get("petstore"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after remove: %v", err)
	}
	if _, err := s.Remove("petstore"); !errors.Is(err, ErrNotFound) {
		t.Errorf("remove again: %v", err)
	}
}

func TestRead(t *testing.T) {
	ctx := context.Background()
	doc := readDoc(t, "bookshop-openapi31.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/openapi.json" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(doc)
	}))
	defer srv.Close()

	if _, _, err := Read(ctx, srv.URL+"/openapi.json", false, nil); !errors.Is(err, ErrURLNotAllowed) {
		t.Errorf("URL while not allowed: %v", err)
	}
	data, loc, err := Read(ctx, srv.URL+"/openapi.json", true, nil)
	if err != nil || string(data) != string(doc) || loc != srv.URL+"/openapi.json" {
		t.Errorf("URL: %v %s", err, loc)
	}
	if _, _, err := Read(ctx, srv.URL+"/missing", true, nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing URL: %v", err)
	}
	data, loc, err = Read(ctx, string(doc), false, nil)
	if err != nil || loc != "" || len(data) != len(doc) {
		t.Errorf("inline: %v %q", err, loc)
	}
	if _, loc, err := Read(ctx, "testdata/petstore-swagger2.yaml", false, nil); err != nil || !filepath.IsAbs(loc) || !strings.HasSuffix(loc, "/testdata/petstore-swagger2.yaml") {
		t.Errorf("file: %v", err)
	}
	for _, src := range []string{"testdata", "testdata/nope.yaml", " "} {
		if _, _, err := Read(ctx, src, false, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("Read(%q): %v", src, err)
		}
	}
	// A Swagger 2.0 document without host fetched from a URL: its base
	// path is resolved against the document's URL.
	r := Validate(ctx, []byte("swagger: '2.0'\ninfo: {title: x, version: '1'}\nbasePath: /v2\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n"), srv.URL+"/specs/openapi.yaml")
	if r.BaseURL != srv.URL+"/v2" {
		t.Errorf("relative server: %q", r.BaseURL)
	}
}

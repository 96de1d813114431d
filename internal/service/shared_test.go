package service

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/store/postgres/pgtest"

	"github.com/jackc/pgx/v5"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/home"
)

// dbKey reads the server key stored in the database ("" when none).
func dbKey(t *testing.T, db string) []byte {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var key []byte
	if err := conn.QueryRow(ctx, `SELECT key FROM server_keys WHERE name = 'server'`).Scan(&key); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return key
}

// $STEPWISE_SECRET_KEY still wins on a shared database: nothing is stored.
func TestSecretKeyVariableWinsOverTheDatabase(t *testing.T) {
	db := pgtest.Schema(t)
	t.Setenv(home.EnvSecretKey, strings.Repeat("ab", 32))
	openReplica(t, db, t.TempDir())
	if key := dbKey(t, db); key != nil {
		t.Fatalf("a key was stored: %x", key)
	}
}

func openReplica(t *testing.T, db, home string) *Service {
	t.Helper()
	s, err := Open(context.Background(), Options{Home: home, Database: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

// Two services on one database with homes of their own: the first brings
// its home's library and catalogs into the database, the second's home is
// not read (nor the first's after); what one saves or imports the other lists, validates and
// runs at once, its watchers told through the change feed.
func TestReplicasShareLibraryAndCatalogs(t *testing.T) {
	db := pgtest.Schema(t)
	ctx := context.Background()
	homeA, homeB := t.TempDir(), t.TempDir()
	for h, name := range map[string]string{homeA: "from-a", homeB: "from-b"} {
		if err := os.MkdirAll(filepath.Join(h, "workflows"), 0o700); err != nil {
			t.Fatal(err)
		}
		doc := "version: 1\nname: " + name + "\nsteps:\n  - {id: a, uses: noop}\n"
		if err := os.WriteFile(filepath.Join(h, "workflows", name+".yaml"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A catalog of A's home, imported while it was on SQLite.
	local, err := Open(ctx, Options{Home: homeA})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := local.ImportCatalog(ctx, CatalogImportRequest{Source: bookshopDoc, Title: "Bookshop"}); err != nil {
		t.Fatal(err)
	}
	if err := local.Close(ctx); err != nil {
		t.Fatal(err)
	}
	a := openReplica(t, db, homeA)
	b := openReplica(t, db, homeB)
	// The database's key is A's home's, which signed what A issued.
	if own, err := os.ReadFile(filepath.Join(homeA, "key")); err != nil || !bytes.Equal(dbKey(t, db), own) {
		t.Fatalf("the database's key is not the first home's (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(homeB, "key")); err == nil {
		t.Fatal("b's home got a key file")
	}
	if cs, err := b.ListCatalogs(ctx); err != nil || len(cs) != 1 || cs[0].Name != "bookshop" {
		t.Fatalf("catalogs through b: %+v %v", cs, err)
	}
	changed := make(chan string, 16)
	b.OnLibraryChange(func(name string) { changed <- name })

	// A's home was imported, B's was not.
	for _, s := range []*Service{a, b} {
		ws, err := s.ListWorkflows(ctx, "")
		if err != nil || len(ws) != 1 || ws[0].Name != "from-a" || !ws[0].Valid {
			t.Fatalf("library: %+v %v", ws, err)
		}
	}

	// b's search index, built now, learns of the save through a.
	if hits, err := b.SearchActions(ctx, "zebra", true, 10); err != nil || len(hits) != 0 {
		t.Fatalf("search before the save: %+v %v", hits, err)
	}
	saved, err := a.SaveWorkflow(ctx, SaveRequest{Content: "version: 1\nname: shared\ntitle: Zebra crossing\nsteps:\n  - {id: a, uses: noop}\n  - {id: b, workflow: from-a}\n"})
	if err != nil || !saved.Valid {
		t.Fatalf("save through a: %+v %v", saved, err)
	}
	select {
	case name := <-changed:
		if name != "shared" {
			t.Fatalf("b's watchers were told of %q", name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b's watchers were not told of the save through a")
	}
	if hits, err := b.SearchActions(ctx, "zebra", true, 10); err != nil || len(hits) != 1 || hits[0].Name != "shared" {
		t.Fatalf("search through b after the save through a: %+v %v", hits, err)
	}
	if v, err := b.ValidateLibrary("shared"); err != nil || !v.Valid {
		t.Fatalf("validate through b: %+v %v", v, err)
	}
	d, err := b.GetWorkflow(ctx, "shared")
	if err != nil || d.Revision != saved.Revision || d.Path != "database:workflows/shared.yaml" {
		t.Fatalf("get through b: %+v %v", d, err)
	}
	l, err := b.LoadRunnable("shared")
	if err != nil || l.Path != "" {
		t.Fatalf("load through b: %+v %v", l, err)
	}
	id, err := b.StartRun(ctx, l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := b.Wait(ctx, id, 30*time.Second); err != nil || st != "succeeded" {
		t.Fatalf("run through b (with a sub-workflow from the database): %s %v", st, err)
	}
	// A save through b at a's revision replaces it; a stale one conflicts.
	if _, err := b.SaveWorkflow(ctx, SaveRequest{Content: "version: 1\nname: shared\nsteps:\n  - {id: a, uses: noop}\n", ExpectedVersion: saved.Revision}); err != nil {
		t.Fatal(err)
	}
	var ee *engine.Error
	if _, err := a.SaveWorkflow(ctx, SaveRequest{Content: "version: 1\nname: shared\nsteps:\n  - {id: z, uses: noop}\n", ExpectedVersion: saved.Revision}); !errors.As(err, &ee) || ee.Code != CodeVersionConflict {
		t.Fatalf("stale save through a: %v", err)
	}
	if res, err := a.DeleteWorkflow(ctx, "shared", false, ""); err != nil || res.KeptIn != "database:previous" {
		t.Fatalf("delete through a: %+v %v", res, err)
	}
	if _, err := b.LoadRunnable("shared"); !errors.As(err, &ee) || ee.Code != CodeNotFound {
		t.Fatalf("load through b after the delete: %v", err)
	}

	// Catalogs: imported through a, b has them and, once synced (what
	// its watchers do when told), their actions.
	if v := b.ValidateContent([]byte(getPetFlow)); v.Valid {
		t.Fatal("valid before the import")
	}
	if _, err := a.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "Petstore", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "Petstore"}); !errors.As(err, &ee) || ee.Code != CodeCatalogConflict {
		t.Fatalf("the same import through b: %v", err)
	}
	info, err := b.GetCatalog(ctx, "petstore")
	if err != nil || !info.Enabled || info.Path != "database:catalogs/petstore" {
		t.Fatalf("catalog through b: %+v %v", info, err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("b's watchers were not told of the import through a")
	}
	if !b.SyncCatalogs() {
		t.Fatal("b's sync found nothing new")
	}
	if v := b.ValidateContent([]byte(getPetFlow)); !v.Valid {
		t.Fatalf("b does not know the catalog's actions: %+v", v)
	}
	if _, err := a.SetCatalogEnabled(ctx, "petstore", false); err != nil {
		t.Fatal(err)
	}
	if !b.SyncCatalogs() {
		t.Fatal("b's sync missed the catalog disabled through a")
	}
	if v := b.ValidateContent([]byte(getPetFlow)); v.Valid {
		t.Fatal("b still has the disabled catalog's actions")
	}
	if _, err := a.RemoveCatalog(ctx, "petstore"); err != nil {
		t.Fatal(err)
	}
	if cs, err := b.ListCatalogs(ctx); err != nil || len(cs) != 1 || cs[0].Name != "bookshop" {
		t.Fatalf("catalogs through b after the removal: %+v %v", cs, err)
	}
	if _, err := b.GetCatalog(ctx, "petstore"); !errors.As(err, &ee) || ee.Code != CodeCatalogNotFound {
		t.Fatalf("removed catalog through b: %v", err)
	}
}

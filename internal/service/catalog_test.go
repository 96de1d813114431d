package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/store"
)

const (
	petstoreDoc = "../catalog/testdata/petstore-swagger2.yaml"
	bookshopDoc = "../catalog/testdata/bookshop-openapi31.json"
)

// petAPI is a stand-in for the Petstore and Bookshop servers that records
// what it receives.
type petAPI struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
	body []string
}

func newPetAPI(t *testing.T) *petAPI {
	api := &petAPI{}
	api.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		api.mu.Lock()
		api.reqs = append(api.reqs, r)
		api.body = append(api.body, string(b))
		api.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/pets/"):
			_, _ = io.WriteString(w, `{"id": 42, "name": "Rex", "status": "available"}`)
		case r.URL.Path == "/api/books":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(b)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(api.Close)
	return api
}

func (api *petAPI) last(t *testing.T) (*http.Request, string) {
	t.Helper()
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.reqs) == 0 {
		t.Fatal("no request reached the API")
	}
	return api.reqs[len(api.reqs)-1], api.body[len(api.body)-1]
}

func openCatalogService(t *testing.T, home string) *Service {
	t.Helper()
	svc, err := Open(context.Background(), Options{Home: home, Durability: "normal", LookupEnv: func(k string) (string, bool) {
		v, ok := map[string]string{"PETSTORE_KEY": "key-0123456789", "BOOKS_TOKEN": "tok-0123456789"}[k]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc
}

// runToEnd runs an inline workflow and returns its view once it stops.
func runToEnd(t *testing.T, svc *Service, def string, inputs map[string]any) *RunView {
	t.Helper()
	ctx := context.Background()
	l, err := svc.Parse([]byte(def))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	id, err := svc.StartRun(ctx, l, inputs, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Wait(ctx, id, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	v, err := svc.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const getPetFlow = `version: 1
name: pet-report
inputs:
  pet: {type: string}
steps:
  - id: fetch
    uses: petstore.getPet
    with:
      petId: ${{ inputs.pet }}
      verbose: true
      X-Trace: report-1
outputs:
  name: ${{ steps.fetch.output.name }}
`

func codeOf(err error) (string, string) {
	if e, ok := err.(*engine.Error); ok {
		return e.Code, e.Category
	}
	return "", ""
}

func TestCatalogImportAndRun(t *testing.T) {
	ctx := context.Background()
	api := newPetAPI(t)
	home := t.TempDir()
	svc := openCatalogService(t, home)

	// Before the import the action does not exist.
	if v := svc.ValidateContent([]byte(getPetFlow)); v.Valid || v.Violations[0].Rule != "unknown-action" {
		t.Fatalf("before import: %+v", v)
	}
	res, err := svc.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "Petstore", BaseURL: api.URL + "/v1",
		Enabled: true, Auth: map[string]catalog.Credential{"api_key": {Value: "$PETSTORE_KEY"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Name != "petstore" || !res.Enabled || res.Operations != 5 || res.Replaced || len(res.Warnings) != 0 {
		t.Fatalf("import: %+v", res)
	}
	file, err := os.ReadFile(filepath.Join(home, "catalogs", "petstore.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The file holds the reference, never the secret.
	if !strings.Contains(string(file), `"$PETSTORE_KEY"`) || strings.Contains(string(file), "key-0123456789") || !strings.Contains(string(file), `"document": "# A Swagger 2.0 document`) {
		t.Errorf("catalog file: %.300s", file)
	}
	if _, ok := svc.Actions.Get("petstore.getPet"); !ok {
		t.Fatal("petstore.getPet is not registered")
	}

	// A workflow calls the operation; the request is what the document says.
	v := runToEnd(t, svc, getPetFlow, map[string]any{"pet": "rex/1 a"})
	if v.Status != store.StatusSucceeded || v.Outputs["name"] != "Rex" {
		t.Fatalf("run: %s %s %v", v.Status, v.Error, v.Outputs)
	}
	r, _ := api.last(t)
	if r.Method != "GET" || r.RequestURI != "/v1/pets/rex%2F1%20a?verbose=true" || r.Header.Get("X-Trace") != "report-1" || r.Header.Get("X-API-Key") != "key-0123456789" {
		t.Errorf("request: %s %s %v", r.Method, r.RequestURI, r.Header)
	}

	// Validation knows the operation's input schema.
	bad := strings.Replace(getPetFlow, "petId:", "petid:", 1)
	val := svc.ValidateContent([]byte(bad))
	text := ""
	for _, x := range val.Violations {
		text += x.Path + " " + x.Message + " " + x.Hint + "\n"
	}
	if val.Valid || !strings.Contains(text, `/steps/0/with/petid action petstore.getPet takes no input "petid"`) || !strings.Contains(text, `did you mean "petId"?`) ||
		!strings.Contains(text, "needs with.petId") {
		t.Errorf("misspelled key:\n%s", text)
	}

	// A 3.1 document next to it: a JSON body and a query API key.
	if _, err := svc.ImportCatalog(ctx, CatalogImportRequest{Source: bookshopDoc, Title: "Bookshop", BaseURL: api.URL + "/api", Enabled: true,
		Auth: map[string]catalog.Credential{"key": {Value: "$BOOKS_TOKEN"}}}); err != nil {
		t.Fatal(err)
	}
	v = runToEnd(t, svc, `version: 1
name: add-book
steps:
  - id: add
    uses: bookshop.createBook
    with:
      body: {title: Dune, price: {amount: 9.5, currency: EUR}}
outputs:
  title: ${{ steps.add.output.title }}
`, nil)
	if v.Status != store.StatusSucceeded || v.Outputs["title"] != "Dune" {
		t.Fatalf("createBook run: %s %s", v.Status, v.Error)
	}
	r, body := api.last(t)
	var sent map[string]any
	_ = json.Unmarshal([]byte(body), &sent)
	if r.Method != "POST" || r.RequestURI != "/api/books?api_key=tok-0123456789" || r.Header.Get("Content-Type") != "application/json" ||
		sent["title"] != "Dune" || r.Header.Get("Idempotency-Key") == "" {
		t.Errorf("createBook request: %s %s %v %s", r.Method, r.RequestURI, r.Header, body)
	}

	// A new service on the same home registers the enabled catalogs.
	svc2 := openCatalogService(t, home)
	if _, ok := svc2.Actions.Get("bookshop.getBook"); !ok {
		t.Error("catalogs are not registered at Open")
	}
	list, _ := svc2.ListCatalogs(ctx)
	if len(list) != 2 || list[0].Name != "bookshop" || list[1].Auth["api_key"].Value != "$PETSTORE_KEY" {
		t.Errorf("list: %+v", list)
	}
}

func TestCatalogDisableRemove(t *testing.T) {
	ctx := context.Background()
	svc := openCatalogService(t, t.TempDir())
	req := CatalogImportRequest{Source: petstoreDoc, Title: "Petstore", Enabled: true}
	if _, err := svc.ImportCatalog(ctx, req); err != nil {
		t.Fatal(err)
	}
	// Importing again is a conflict, unless overwrite.
	_, err := svc.ImportCatalog(ctx, req)
	if code, cat := codeOf(err); code != CodeCatalogConflict || cat != engine.CategoryConflict {
		t.Fatalf("second import: %v", err)
	}
	req.Overwrite, req.Enabled = true, false
	if res, err := svc.ImportCatalog(ctx, req); err != nil || !res.Replaced || res.Enabled {
		t.Fatalf("overwrite: %+v %v", res, err)
	}
	if _, ok := svc.Actions.Get("petstore.getPet"); ok {
		t.Fatal("a catalog imported disabled has registered actions")
	}
	if v := svc.ValidateContent([]byte(getPetFlow)); v.Valid || v.Violations[0].Rule != "unknown-action" {
		t.Fatalf("disabled: %+v", v)
	}
	if c, err := svc.SetCatalogEnabled(ctx, "petstore", true); err != nil || !c.Enabled {
		t.Fatalf("enable: %v", err)
	}
	if v := svc.ValidateContent([]byte(getPetFlow)); !v.Valid {
		t.Fatalf("enabled: %+v", v.Violations)
	}
	if _, err := svc.SetCatalogEnabled(ctx, "petstore", false); err != nil {
		t.Fatal(err)
	}
	if _, ok := svc.Actions.Get("petstore.getPet"); ok {
		t.Fatal("disable left petstore.getPet registered")
	}
	if _, err := svc.SetCatalogEnabled(ctx, "petstore", true); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RemoveCatalog(ctx, "petstore"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"petstore.getPet", "petstore.listPets"} {
		if _, ok := svc.Actions.Get(n); ok {
			t.Errorf("remove left %s registered", n)
		}
	}
	v := svc.ValidateContent([]byte(getPetFlow))
	if v.Valid || v.Violations[0].Rule != "unknown-action" || !strings.Contains(v.Violations[0].Message, `no action named "petstore.getPet"`) {
		t.Fatalf("removed: %+v", v)
	}
	if _, err := os.Stat(filepath.Join(svc.Home.Dir, "catalogs", "petstore.json")); !os.IsNotExist(err) {
		t.Error("the catalog file is still there")
	}
	for _, err := range []error{
		func() error { _, err := svc.RemoveCatalog(ctx, "petstore"); return err }(),
		func() error { _, err := svc.SetCatalogEnabled(ctx, "petstore", true); return err }(),
	} {
		if code, _ := codeOf(err); code != CodeCatalogNotFound {
			t.Errorf("unknown catalog: %v", err)
		}
	}
}

func TestCatalogRefusals(t *testing.T) {
	ctx := context.Background()
	svc := openCatalogService(t, t.TempDir())
	for _, name := range []string{"../../etc", "/etc/passwd", "a/b", "..", "UPPER"} {
		_, err := svc.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "P", Name: name, Enabled: true})
		if code, cat := codeOf(err); code != CodeUnsafeName || cat != CategorySecurity {
			t.Errorf("name %q: %v", name, err)
		}
		for _, err := range []error{
			func() error { _, err := svc.RemoveCatalog(ctx, name); return err }(),
			func() error { _, err := svc.SetCatalogEnabled(ctx, name, true); return err }(),
		} {
			if code, _ := codeOf(err); code != CodeUnsafeName {
				t.Errorf("name %q: %v", name, err)
			}
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(svc.Home.Dir, "catalogs")); len(entries) > 1 {
		t.Errorf("something was written: %v", entries)
	}
	const literal = "sk-live-0123456789abcdef"
	_, err := svc.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "P", Enabled: true,
		Auth: map[string]catalog.Credential{"api_key": {Value: literal}}})
	if code, cat := codeOf(err); code != engine.CodeSecretInClear || cat != CategorySecurity || strings.Contains(err.Error(), literal) {
		t.Errorf("literal secret: %v", err)
	}
	if _, err := svc.GetCatalog(ctx, "p"); err == nil {
		t.Error("a refused import was written")
	}
	_, err = svc.ImportCatalog(ctx, CatalogImportRequest{Source: "https://example.com/openapi.json", Title: "P"})
	if code, cat := codeOf(err); code != CodeCatalogURLNotAllowed || cat != CategorySecurity {
		t.Errorf("URL: %v", err)
	}
	_, err = svc.ImportCatalog(ctx, CatalogImportRequest{Source: "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\n", Title: "P"})
	if code, _ := codeOf(err); code != CodeCatalogInvalid || len(err.(*engine.Error).Violations) == 0 {
		t.Errorf("no operations: %v", err)
	}
	r, err := svc.ValidateCatalog(ctx, bookshopDoc)
	if err != nil || !r.Valid || r.Operations != 4 || len(r.Warnings) != 1 {
		t.Errorf("validate: %+v %v", r, err)
	}
	p, err := svc.PreviewCatalog(ctx, CatalogImportRequest{Source: bookshopDoc, Title: "Book Shop"}, catalog.Page{})
	if err != nil || p.Name != "book-shop" || p.Tags["books"] != 3 || p.Tags[catalog.Untagged] != 1 {
		t.Errorf("preview: %+v %v", p, err)
	}
}

// A catalog imported by another process (the CLI next to a server) is
// picked up by SyncCatalogs; one removed there is unregistered.
func TestCatalogSync(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	server := openCatalogService(t, home)
	cli := openCatalogService(t, home)
	if _, err := cli.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "Petstore", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok := server.Actions.Get("petstore.getPet"); ok {
		t.Fatal("registered before a sync")
	}
	if !server.SyncCatalogs() {
		t.Fatal("the sync saw no change")
	}
	if _, ok := server.Actions.Get("petstore.getPet"); !ok {
		t.Fatal("not registered after a sync")
	}
	if server.SyncCatalogs() {
		t.Error("a second sync saw a change")
	}
	if _, err := cli.RemoveCatalog(ctx, "petstore"); err != nil {
		t.Fatal(err)
	}
	if !server.SyncCatalogs() {
		t.Fatal("the sync missed the removal")
	}
	if _, ok := server.Actions.Get("petstore.getPet"); ok {
		t.Fatal("still registered after the removal")
	}
}

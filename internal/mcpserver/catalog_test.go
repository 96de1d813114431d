package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// catalogOut decodes the catalog tools' results and errors.
type catalogOut struct {
	Valid      bool           `json:"valid"`
	OpenAPI    string         `json:"openapi"`
	Operations any            `json:"operations"`
	Problems   []string       `json:"problems"`
	Warnings   []string       `json:"warnings"`
	Name       string         `json:"name"`
	Enabled    bool           `json:"enabled"`
	Removed    bool           `json:"removed"`
	Actions    []string       `json:"actions"`
	Tags       map[string]int `json:"tags"`
	Catalogs   []service.CatalogInfo
	ErrorCode  string `json:"error_code"`
	Category   string `json:"category"`
	Message    string `json:"message"`
}

func TestCatalogTools(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI+" key="+r.Header.Get("X-API-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id": 1, "name": "Rex"}`)
	}))
	defer api.Close()
	e := newEnv(t, Options{}, service.Options{LookupEnv: func(k string) (string, bool) {
		if k == "PET_KEY" {
			return "key-0123456789", true
		}
		return "", false
	}})
	cs := e.connect(nil)
	doc, err := filepath.Abs("../catalog/testdata/petstore-swagger2.yaml")
	if err != nil {
		t.Fatal(err)
	}

	var o catalogOut
	if call(t, cs, "catalog_validate", map[string]any{"source": doc}, &o) || !o.Valid || o.OpenAPI != "2.0" || o.Operations != float64(5) {
		t.Fatalf("validate: %+v", o)
	}
	o = catalogOut{}
	if call(t, cs, "catalog_validate", map[string]any{"source": "name: nothing\nkind: notes\n"}, &o) || o.Valid || len(o.Problems) == 0 {
		t.Fatalf("validate a non-document: %+v", o)
	}
	o = catalogOut{}
	if call(t, cs, "catalog_preview", map[string]any{"source": doc, "title": "Petstore"}, &o) || o.Name != "petstore" || o.Tags["pets"] != 4 {
		t.Fatalf("preview: %+v", o)
	}
	if _, ok := e.svc.Actions.Get("petstore.getPet"); ok {
		t.Fatal("a preview registered actions")
	}
	o = catalogOut{}
	if !call(t, cs, "catalog_import", map[string]any{"source": doc, "title": "Petstore", "auth": map[string]any{"api_key": map[string]any{"value": "key-0123456789"}}}, &o) ||
		o.ErrorCode != "SECRET_IN_CLEAR" || o.Category != "security" || strings.Contains(o.Message, "key-0123456789") {
		t.Fatalf("literal secret: %+v", o)
	}
	o = catalogOut{}
	if !call(t, cs, "catalog_import", map[string]any{"source": doc, "title": "Petstore", "name": "../up"}, &o) || o.ErrorCode != "UNSAFE_NAME" || o.Category != "security" {
		t.Fatalf("unsafe name: %+v", o)
	}
	o = catalogOut{}
	args := map[string]any{"source": doc, "title": "Petstore", "base_url": api.URL + "/v1", "auth": map[string]any{"api_key": map[string]any{"value": "$PET_KEY"}}}
	if call(t, cs, "catalog_import", args, &o) || o.Name != "petstore" || !o.Enabled || len(o.Actions) != 5 {
		t.Fatalf("import: %+v", o)
	}
	o = catalogOut{}
	if !call(t, cs, "catalog_import", args, &o) || o.ErrorCode != "CATALOG_CONFLICT" || o.Category != "conflict" {
		t.Fatalf("import again: %+v", o)
	}

	// The operation is an action agents can describe and run.
	var info ActionGetOut
	if call(t, cs, "action_get", map[string]any{"name": "petstore.getPet"}, &info) || info.Safety != "read-only" || info.InputSchema["required"] == nil {
		t.Fatalf("action_get: %+v", info)
	}
	var run out
	call(t, cs, "run_start", map[string]any{"definition": "version: 1\nname: pet\nsteps:\n  - id: get\n    uses: petstore.getPet\n    with: {petId: '7', X-Trace: t}\noutputs:\n  name: ${{ steps.get.output.name }}\n"}, &run)
	if run.Status != "succeeded" || run.Outputs["name"] != "Rex" {
		t.Fatalf("run: %+v", run)
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != "GET /v1/pets/7 key=key-0123456789" {
		t.Errorf("API saw %v", seen)
	}
	mu.Unlock()

	o = catalogOut{}
	if call(t, cs, "catalog_list", map[string]any{}, &o) || len(o.Catalogs) != 1 || o.Catalogs[0].Auth["api_key"].Value != "$PET_KEY" {
		t.Fatalf("list: %+v", o)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "stepwise://catalogs"})
	if err != nil || !strings.Contains(res.Contents[0].Text, `"petstore.getPet"`) {
		t.Fatalf("resource: %v", err)
	}

	o = catalogOut{}
	if call(t, cs, "catalog_set_enabled", map[string]any{"name": "petstore", "enabled": false}, &o) || o.Enabled {
		t.Fatalf("disable: %+v", o)
	}
	var got ToolError
	if !call(t, cs, "action_get", map[string]any{"name": "petstore.getPet"}, &got) || got.ErrorCode != "ACTION_NOT_FOUND" {
		t.Fatalf("action_get after disable: %+v", got)
	}
	if call(t, cs, "catalog_set_enabled", map[string]any{"name": "petstore", "enabled": true}, &o) || !o.Enabled {
		t.Fatalf("enable: %+v", o)
	}

	// Removing asks for confirmation (this client cannot elicit).
	o = catalogOut{}
	if !call(t, cs, "catalog_remove", map[string]any{"name": "petstore"}, &o) || o.ErrorCode != CodeConfirmationRequired {
		t.Fatalf("remove unconfirmed: %+v", o)
	}
	if _, ok := e.svc.Actions.Get("petstore.getPet"); !ok {
		t.Fatal("an unconfirmed remove unregistered the actions")
	}
	o = catalogOut{}
	if !call(t, cs, "catalog_remove", map[string]any{"name": "nope", "confirm": true}, &o) || o.ErrorCode != "CATALOG_NOT_FOUND" {
		t.Fatalf("remove unknown: %+v", o)
	}
	o = catalogOut{}
	if call(t, cs, "catalog_remove", map[string]any{"name": "petstore", "confirm": true}, &o) || !o.Removed {
		t.Fatalf("remove: %+v", o)
	}
	var v WorkflowValidateOut
	call(t, cs, "workflow_validate", map[string]any{"content": "version: 1\nname: pet\nsteps:\n  - id: get\n    uses: petstore.getPet\n    with: {petId: '7'}\n"}, &v)
	if v.Valid || len(v.Violations) == 0 || v.Violations[0].Rule != "unknown-action" {
		t.Fatalf("validate after remove: %+v", v)
	}
}

func TestCatalogRemoveElicits(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	doc, _ := filepath.Abs("../catalog/testdata/bookshop-openapi31.json")
	if _, err := e.svc.ImportCatalog(context.Background(), service.CatalogImportRequest{Source: doc, Title: "Bookshop", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	var asked string
	cs := e.connect(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = r.Params.Message
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	var o catalogOut
	// confirm: true from the agent does not replace the person's answer.
	if !call(t, cs, "catalog_remove", map[string]any{"name": "bookshop", "confirm": true}, &o) || o.ErrorCode != CodeConfirmationDeclined {
		t.Fatalf("declined: %+v", o)
	}
	if !strings.Contains(asked, "remove catalog bookshop and its 4 actions") {
		t.Errorf("asked %q", asked)
	}
	if _, ok := e.svc.Actions.Get("bookshop.getBook"); !ok {
		t.Error("a declined remove unregistered the actions")
	}
}

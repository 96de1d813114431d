package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/service"
)

// served is the document as GET /api/openapi.json serves it.
func (f *fixture) served(t *testing.T) []byte {
	t.Helper()
	a := f.do(http.MethodGet, "/api/openapi.json", nil)
	if a.status != http.StatusOK || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json: %d %s", a.status, a.body)
	}
	return a.body
}

// TestOpenAPIValidates: the served document is OpenAPI 3.1 that
// kin-openapi's loader reads and validates, with every schema it refers to.
func TestOpenAPIValidates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(f.served(t))
	if err != nil {
		t.Fatal(err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document does not validate: %v", err)
	}
	// The operations' answers are the types the handler encodes: a run's
	// schema knows a run's fields.
	run := doc.Components.Schemas["Run"]
	if run == nil || run.Value.Properties["pause"] == nil || run.Value.Properties["status"] == nil || len(run.Value.Properties["status"].Value.Enum) != len(runStatuses) {
		t.Fatalf("the Run schema lacks pause or the status enum: %+v", run)
	}
}

// TestOpenAPIRoutes: every operation of the document is served (its path
// and method reach a handler: no ROUTE_NOT_FOUND, no 405) and every other
// method of its paths is refused with 405 and Allow; a path the document
// does not have is not served.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	doc, err := openapi3.NewLoader().LoadFromData(f.served(t))
	if err != nil {
		t.Fatal(err)
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	ops := 0
	for path, item := range doc.Paths.Map() {
		concrete := strings.ReplaceAll(path, "{run_id}", "no-such-run")
		var documented []string
		for m := range item.Operations() {
			documented = append(documented, m)
		}
		for _, m := range methods {
			a := f.do(m, concrete, "{}")
			if slices.Contains(documented, m) {
				ops++
				if a.status == http.StatusMethodNotAllowed || strings.Contains(string(a.body), CodeRouteNotFound) {
					t.Errorf("%s %s is documented but not served: %d %s", m, path, a.status, a.body)
				}
				continue
			}
			p := a.problem(t, http.StatusMethodNotAllowed, CodeMethodNotAllowed)
			_ = p
			allow := strings.Split(a.header.Get("Allow"), ", ")
			slices.Sort(allow)
			slices.Sort(documented)
			if !slices.Equal(allow, documented) {
				t.Errorf("%s %s: Allow %v, want the documented %v", m, path, allow, documented)
			}
		}
	}
	if ops != len(routes) {
		t.Errorf("%d operations documented and served, want the %d routes", ops, len(routes))
	}
	for _, path := range []string{"/api/", "/api/run", "/api/runs/x/y", "/api/runs/x/answer"} {
		f.do(http.MethodGet, path, nil).problem(t, http.StatusNotFound, CodeRouteNotFound)
	}
}

// TestOpenAPIImportsAsCatalog: stepwise imports its own API's document as
// a catalog, whose operations become actions; a workflow started through
// the API calls the API through them (start_run, get_run), with the
// bearer token from the environment.
func TestOpenAPIImportsAsCatalog(t *testing.T) {
	t.Parallel()
	env := func(name string) (string, bool) {
		if name == "STEPWISE_API_TOKEN" {
			return testToken, true
		}
		return "", false
	}
	f := newFixtureWith(t, service.Options{LookupEnv: env})
	res, err := f.svc.ImportCatalog(context.Background(), service.CatalogImportRequest{Source: string(f.served(t)), Title: "stepwise API",
		Name: "stepwise", BaseURL: f.srv.URL, Enabled: true, Auth: map[string]catalog.Credential{"bearer": {Value: "$STEPWISE_API_TOKEN"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Operations != len(routes) {
		t.Errorf("%d operations imported, want %d; warnings %v", res.Operations, len(routes), res.Warnings)
	}
	for _, rt := range routes {
		name := "stepwise." + rt.id
		if ok, _ := f.svc.Actions.HasAction(name); !ok {
			t.Errorf("no action %s after the import (actions %v)", name, res.Actions)
		}
	}
	if len(res.Warnings) > 0 {
		data, _ := json.Marshal(res.Warnings)
		t.Errorf("the import warns: %s", data)
	}
	self := `version: 1
name: self
steps:
  - id: start
    uses: stepwise.start_run
    with: {body: {workflow: quick, inputs: {n: 7}}}
  - id: read
    uses: stepwise.get_run
    with: {run_id: "${{ steps.start.output.run_id }}"}
outputs:
  child: ${{ steps.start.output.run_id }}
  status: ${{ steps.read.output.status }}
  n: ${{ steps.read.output.outputs.n }}
`
	run := f.do(http.MethodPost, "/api/runs", StartRequest{Definition: self}).run(t, http.StatusCreated)
	if run.Status != "succeeded" || run.Outputs["status"] != "succeeded" || run.Outputs["n"] != float64(7) {
		t.Fatalf("the workflow calling the API: %+v", run)
	}
	child := f.do(http.MethodGet, "/api/runs/"+run.Outputs["child"].(string), nil).run(t, http.StatusOK)
	if child.Workflow != "quick" || child.Outputs["n"] != float64(7) {
		t.Fatalf("the run it started: %+v", child)
	}
}

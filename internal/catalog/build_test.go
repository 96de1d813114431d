package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/library"
)

func readDoc(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func build(t *testing.T, doc string, o Options) (*Catalog, []string) {
	t.Helper()
	if o.Title == "" {
		o.Title = "Test"
	}
	c, warnings, err := Build(context.Background(), readDoc(t, doc), o)
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return c, warnings
}

func opNamed(t *testing.T, c *Catalog, name string) *Operation {
	t.Helper()
	for i := range c.Operations {
		if c.Operations[i].Name == name {
			return &c.Operations[i]
		}
	}
	t.Fatalf("no operation %s in %v", name, c.ActionNames())
	return nil
}

// at walks a JSON Schema map by property names.
func at(t *testing.T, s map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		props, _ := s["properties"].(map[string]any)
		next, ok := props[p].(map[string]any)
		if !ok {
			t.Fatalf("no property %q in %v", p, s)
		}
		s = next
	}
	return s
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestSwagger2(t *testing.T) {
	c, warnings := build(t, "petstore-swagger2.yaml", Options{Title: "Petstore", Location: "testdata/petstore-swagger2.yaml"})
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if c.Name != "petstore" || c.BaseURL != "https://petstore.example.com/v1" || c.Source.OpenAPI != "2.0" || !strings.Contains(c.Source.Document, "swagger: \"2.0\"") {
		t.Fatalf("catalog: %s %s %s", c.Name, c.BaseURL, c.Source.OpenAPI)
	}
	want := []string{"petstore.listPets", "petstore.createPet", "petstore.getPet", "petstore.delete_pets_petId", "petstore.get_stores_storeId_inventory"}
	if got := c.ActionNames(); !reflect.DeepEqual(got, want) {
		t.Fatalf("actions %v, want %v", got, want)
	}
	if !reflect.DeepEqual(c.Schemes, map[string]Scheme{"api_key": {Type: SchemeAPIKey, In: "header", Name: "X-API-Key"}, "basic": {Type: SchemeBasic}}) {
		t.Errorf("schemes: %+v", c.Schemes)
	}

	get := opNamed(t, c, "getPet")
	if get.Safety != action.ReadOnly || get.Method != "GET" || !reflect.DeepEqual(get.Security, [][]string{{"api_key"}}) {
		t.Errorf("getPet: %+v", get)
	}
	// The $ref'd path parameter of the path item, a query and a required header.
	in := get.InputSchema
	if in["additionalProperties"] != false || jsonOf(in["required"]) != `["petId","X-Trace"]` {
		t.Errorf("getPet input: %s", jsonOf(in))
	}
	if p := at(t, in, "petId"); p["type"] != "string" || p["description"] != "The pet's id" {
		t.Errorf("petId: %v", p)
	}
	if p := at(t, in, "verbose"); p["type"] != "boolean" {
		t.Errorf("verbose: %v", p)
	}
	// allOf of the $ref'd NewPet and the id part: one object, readOnly id
	// required in responses.
	out := get.OutputSchema
	if _, ok := out["allOf"]; ok || jsonOf(out["required"]) != `["name","id"]` || at(t, out, "id")["readOnly"] != true || at(t, out, "status")["enum"] == nil {
		t.Errorf("getPet output: %s", jsonOf(out))
	}

	create := opNamed(t, c, "createPet")
	if create.Safety != action.Mutating || create.Body == nil || !create.Body.Required || create.Body.MediaType != "application/json" {
		t.Errorf("createPet: %+v", create)
	}
	body := at(t, create.InputSchema, "body")
	if jsonOf(body["required"]) != `["name"]` || at(t, body, "name")["minLength"] != float64(1) {
		t.Errorf("createPet body: %s", jsonOf(body))
	}
	if jsonOf(create.InputSchema["required"]) != `["body"]` || at(t, create.InputSchema, "X-Request-ID")["type"] != "string" {
		t.Errorf("createPet input: %s", jsonOf(create.InputSchema))
	}

	list := opNamed(t, c, "listPets")
	if p := at(t, list.InputSchema, "limit"); p["type"] != "integer" || p["minimum"] != float64(1) || p["maximum"] != float64(100) || p["format"] != "int32" {
		t.Errorf("limit ($ref parameter): %v", p)
	}
	if len(list.Params) != 2 || !list.Params[1].Explode {
		t.Errorf("tags (collectionFormat multi) should explode: %+v", list.Params)
	}

	del := opNamed(t, c, "delete_pets_petId")
	if del.Safety != action.Destructive || !reflect.DeepEqual(del.Security, [][]string{{"basic"}}) || del.OutputSchema != nil {
		t.Errorf("delete: %+v", del)
	}
	inv := opNamed(t, c, "get_stores_storeId_inventory")
	if at(t, inv.InputSchema, "storeId")["type"] != "integer" || jsonOf(inv.OutputSchema) != `{"additionalProperties":{"type":"integer"},"type":"object"}` {
		t.Errorf("inventory: %s %s", jsonOf(inv.InputSchema), jsonOf(inv.OutputSchema))
	}
}

func TestOpenAPI31(t *testing.T) {
	c, warnings := build(t, "bookshop-openapi31.json", Options{Title: "Bookshop"})
	if c.BaseURL != "https://eu.books.example.com/api" || c.Source.OpenAPI != "3.1.0" {
		t.Fatalf("catalog: %s %s", c.BaseURL, c.Source.OpenAPI)
	}
	if want := []string{"bookshop.createBook", "bookshop.getBook", "bookshop.updateBook", "bookshop.login"}; !reflect.DeepEqual(c.ActionNames(), want) {
		t.Fatalf("actions %v, want %v", c.ActionNames(), want)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "POST /uploads skipped") || !strings.Contains(warnings[0], "multipart/form-data") {
		t.Errorf("warnings: %v", warnings)
	}
	create := opNamed(t, c, "createBook")
	body := at(t, create.InputSchema, "body")
	// allOf of a $ref and an inline part merged; the readOnly isbn is not
	// asked of the caller; 3.1 type lists, oneOf and numeric bounds kept.
	if _, ok := body["allOf"]; ok || jsonOf(body["required"]) != `["title"]` {
		t.Errorf("createBook body: %s", jsonOf(body))
	}
	if got := jsonOf(at(t, body, "subtitle")["type"]); got != `["string","null"]` {
		t.Errorf("subtitle type: %s", got)
	}
	if got := jsonOf(at(t, body, "format")); got != `{"oneOf":[{"const":"paper"},{"const":"ebook"}]}` {
		t.Errorf("format: %s", got)
	}
	if got := at(t, body, "price", "amount")["exclusiveMinimum"]; got != float64(0) {
		t.Errorf("amount exclusiveMinimum: %v", got)
	}
	if got := jsonOf(create.OutputSchema["required"]); got != `["title","isbn"]` {
		t.Errorf("createBook output required: %s", got)
	}
	if !reflect.DeepEqual(create.Security, [][]string{{"key"}}) {
		t.Errorf("createBook security: %v", create.Security)
	}
	get := opNamed(t, c, "getBook")
	if !reflect.DeepEqual(get.Security, [][]string{{"bearer"}}) || get.Params[1].Explode || get.Params[2].In != "header" {
		t.Errorf("getBook: %+v", get)
	}
	login := opNamed(t, c, "login")
	if login.Security != nil || login.Body.MediaType != "application/x-www-form-urlencoded" {
		t.Errorf("login: %+v", login)
	}
}

// OpenAPI 3.0 specifics and the corner cases of naming.
const doc30 = `openapi: 3.0.3
info: {title: Corners, version: "1"}
servers: [{url: /relative}]
components:
  schemas:
    Node:
      type: object
      properties:
        name: {type: string, nullable: true}
        children: {type: array, items: {$ref: '#/components/schemas/Node'}}
    Odd:
      allOf:
        - {type: string}
        - {type: integer}
paths:
  /things/{id}:
    get:
      operationId: "get thing"
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer, minimum: 0, exclusiveMinimum: true}}
        - {name: id, in: query, schema: {type: string}}
        - {name: session, in: cookie, schema: {type: string}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/Node'}}}}
    put:
      operationId: "get thing"
      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/Odd'}}}}
      responses: {"204": {description: ok}}
`

func TestOpenAPI30AndNames(t *testing.T) {
	ctx := context.Background()
	if _, _, err := Build(ctx, []byte(doc30), Options{Title: "Corners"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "base_url") {
		t.Fatalf("a relative server without base_url: %v", err)
	}
	c, warnings, err := Build(ctx, []byte(doc30), Options{Title: "Corners", BaseURL: "http://127.0.0.1:1/"})
	if err != nil {
		t.Fatal(err)
	}
	if c.BaseURL != "http://127.0.0.1:1" {
		t.Errorf("base URL: %s", c.BaseURL)
	}
	text := strings.Join(warnings, "\n")
	for _, want := range []string{`operationId "get thing" is called "get_thing"`, `"get_thing" is taken by another operation: it is called "get_thing_2"`,
		`the query parameter "id" is the input "query_id"`, `cookie parameter "session" is not sent`} {
		if !strings.Contains(text, want) {
			t.Errorf("missing warning %q in\n%s", want, text)
		}
	}
	get := opNamed(t, c, "get_thing")
	id := at(t, get.InputSchema, "id")
	if id["exclusiveMinimum"] != float64(0) || id["minimum"] != nil {
		t.Errorf("3.0 exclusiveMinimum: %v", id)
	}
	if _, ok := at(t, get.InputSchema, "query_id")["type"]; !ok {
		t.Errorf("query_id: %v", get.InputSchema)
	}
	if got := jsonOf(at(t, get.OutputSchema, "name")["type"]); got != `["string","null"]` {
		t.Errorf("nullable: %s", got)
	}
	// Recursion is cut one level down.
	if got := at(t, get.OutputSchema, "children")["items"].(map[string]any); !strings.HasPrefix(got["description"].(string), "recursive") {
		t.Errorf("recursive items: %v", got)
	}
	// Contradicting allOf parts stay an allOf.
	put := opNamed(t, c, "get_thing_2")
	if got := jsonOf(at(t, put.InputSchema, "body")); got != `{"allOf":[{"type":"string"},{"type":"integer"}]}` {
		t.Errorf("odd allOf: %s", got)
	}
}

func TestValidateReports(t *testing.T) {
	ctx := context.Background()
	r := Validate(ctx, readDoc(t, "petstore-swagger2.yaml"), "")
	if !r.Valid || r.Operations != 5 || r.OpenAPI != "2.0" || r.Title != "Petstore" || r.BaseURL != "https://petstore.example.com/v1" {
		t.Errorf("petstore: %+v", r)
	}
	for doc, want := range map[string]string{
		"name: not an api\n":                 "neither an openapi nor a swagger field",
		"swagger: '1.2'\ninfo: {title: x}\n": "only Swagger 2.0",
		"openapi: 4.0.0\n":                   "supported versions",
		"{not json":                          "neither JSON nor YAML",
		"openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\n": "no operation",
		// A reference to another file would make the server read it.
		"openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    get:\n      responses:\n        '200': {$ref: 'other.yaml#/r'}\n": "does not load",
	} {
		r := Validate(ctx, []byte(doc), "")
		if r.Valid || !strings.Contains(strings.Join(r.Problems, "\n"), want) {
			t.Errorf("%q: want a problem with %q, got %+v", doc, want, r)
		}
	}
	// A departure from the specification is a warning, not a problem.
	r = Validate(ctx, []byte("openapi: 3.0.3\ninfo: {title: x}\npaths:\n  /a:\n    get:\n      responses: {'200': {description: ok}}\n"), "")
	if !r.Valid || len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "does not follow the OpenAPI specification") {
		t.Errorf("info without version: %+v", r)
	}
}

func TestNames(t *testing.T) {
	for title, want := range map[string]string{"Petstore": "petstore", "Pet Store v2!": "pet-store-v2", "  ../etc/passwd ": "etc-passwd", "42 Things": "things", "!!!": ""} {
		if got := NameFromTitle(title); got != want {
			t.Errorf("NameFromTitle(%q) = %q, want %q", title, got, want)
		}
	}
	for _, name := range []string{"../x", "/etc/passwd", "a/b", "..", "a\x00b", "Petstore"} {
		if err := CheckName(name); !errors.Is(err, library.ErrUnsafeName) {
			t.Errorf("CheckName(%q): %v", name, err)
		}
	}
	if err := CheckName("1password"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a name that cannot prefix actions: %v", err)
	}
	if _, _, err := Build(context.Background(), readDoc(t, "petstore-swagger2.yaml"), Options{Title: "x", Name: "../../etc"}); !errors.Is(err, library.ErrUnsafeName) {
		t.Errorf("Build with an unsafe name: %v", err)
	}
	if got := derivedName("GET", "/pets/{petId}"); got != "get_pets_petId" {
		t.Errorf("derivedName: %s", got)
	}
	if got := derivedName("POST", "/"); got != "post_root" {
		t.Errorf("derivedName of /: %s", got)
	}
}

func TestAuthConfig(t *testing.T) {
	data := readDoc(t, "petstore-swagger2.yaml")
	ctx := context.Background()
	const literal = "sk-live-abcdef123456"
	_, _, err := Build(ctx, data, Options{Title: "P", Auth: map[string]Credential{"api_key": {Value: literal}}})
	if !errors.Is(err, ErrSecretInClear) || strings.Contains(err.Error(), literal) {
		t.Fatalf("a literal API key: %v", err)
	}
	_, _, err = Build(ctx, data, Options{Title: "P", Auth: map[string]Credential{"basic": {Username: "alice", Password: literal}}})
	if !errors.Is(err, ErrSecretInClear) || strings.Contains(err.Error(), literal) {
		t.Fatalf("a literal password: %v", err)
	}
	for auth, want := range map[string]Credential{
		"nope":  {Value: "$X"},
		"basic": {Value: "$X"},
	} {
		_, _, err := Build(ctx, data, Options{Title: "P", Auth: map[string]Credential{auth: want}})
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("auth %s %+v: %v", auth, want, err)
		}
	}
	c, _, err := Build(ctx, data, Options{Title: "P", Auth: map[string]Credential{"api_key": {Value: "$PETSTORE_KEY"}, "basic": {Username: "alice", Password: "$PETSTORE_PW"}}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Auth["api_key"].Value != "$PETSTORE_KEY" {
		t.Errorf("auth: %+v", c.Auth)
	}
}

func TestPreviewGroups(t *testing.T) {
	c, w := build(t, "petstore-swagger2.yaml", Options{Title: "Petstore"})
	p := c.Preview(w, Page{})
	if !reflect.DeepEqual(p.Tags, map[string]int{"pets": 4, Untagged: 1}) || p.OperationsTotal != 5 || p.OperationsNextCursor != "" ||
		!reflect.DeepEqual(p.Safety, map[string]int{action.ReadOnly: 3, action.Mutating: 1, action.Destructive: 1}) {
		t.Errorf("summary: tags %v, safety %v, total %d, next %q", p.Tags, p.Safety, p.OperationsTotal, p.OperationsNextCursor)
	}
	var names []string
	for _, op := range p.Operations {
		names = append(names, op.Action)
	}
	if want := []string{"petstore.listPets", "petstore.createPet", "petstore.getPet", "petstore.delete_pets_petId", "petstore.get_stores_storeId_inventory"}; !reflect.DeepEqual(names, want) {
		t.Errorf("operations: %v", names)
	}
	if page := c.Preview(w, Page{Offset: 1, Limit: 2}); len(page.Operations) != 2 || page.Operations[0].Action != "petstore.createPet" || page.OperationsNextCursor != "3" {
		t.Errorf("page 1+2: %+v", page)
	}
	if p.Operations[2].Action != "petstore.getPet" || p.Operations[2].Safety != action.ReadOnly || p.Operations[2].Path != "/pets/{petId}" {
		t.Errorf("operations: %+v", p.Operations)
	}
}

// TestWarningsAreGroupedByKind: a warning repeated per operation (GitHub's
// 1,221 operationIds written a/b, each renamed) comes as three examples
// and a count, not once per operation.
func TestWarningsAreGroupedByKind(t *testing.T) {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: T, version: '1'}\nservers: [{url: 'https://api.example.com'}]\npaths:\n")
	for i := range 10 {
		fmt.Fprintf(&b, "  /things%d:\n    get: {operationId: 'things/get-%d', responses: {'200': {description: OK}}}\n", i, i)
	}
	b.WriteString("  /other:\n    get: {operationId: 'other/get', parameters: [{name: c, in: cookie, schema: {type: string}}], responses: {'200': {description: OK}}}\n")
	r := Validate(context.Background(), []byte(b.String()), "")
	want := []string{
		`GET /other: operationId "other/get" is called "other_get" (action names take letters, digits, _ and -)`,
		`GET /things0: operationId "things/get-0" is called "things_get-0" (action names take letters, digits, _ and -)`,
		`GET /things1: operationId "things/get-1" is called "things_get-1" (action names take letters, digits, _ and -)`,
		"… and 8 more like these: operationIds renamed into action names (11 in all)",
		`GET /other: cookie parameter "c" is not sent (a catalog sends path, query and header parameters)`,
	}
	if !r.Valid || !reflect.DeepEqual(r.Warnings, want) {
		t.Errorf("warnings:\n%s", strings.Join(r.Warnings, "\n"))
	}
}

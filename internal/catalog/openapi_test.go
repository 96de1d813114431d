package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// buildDoc builds an inline document; the base URL is the import's when
// the document names none.
func buildDoc(t *testing.T, doc string) (*Catalog, []string) {
	t.Helper()
	c, warnings, err := Build(context.Background(), []byte(doc), Options{Title: "T", BaseURL: "https://api.example.com"})
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return c, warnings
}

// specOnly keeps the departures from the specification, without prefix.
func specOnly(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		if s, ok := strings.CutPrefix(w, specPrefix); ok {
			out = append(out, s)
		}
	}
	return out
}

const swaggerForms = `swagger: "2.0"
info: {title: Forms, version: "1"}
basePath: /api
consumes: [application/json]
securityDefinitions:
  key: {type: apiKey, in: query, name: k}
  basic: {type: basic, description: user and password}
  oauth: {type: oauth2, flow: password, tokenUrl: https://auth.example.com/token, scopes: {}}
definitions:
  Pet:
    type: object
    required: [name]
    properties:
      name: {type: string}
      photo: {type: file}
      owner: {$ref: '#/definitions/Person'}
  Person:
    type: object
    properties: {nick: {type: string, x-nullable: true}}
paths:
  /pets:
    post:
      operationId: addPet
      security: [{oauth: []}, {key: [], basic: []}]
      parameters:
        - {name: pet, in: body, required: true, description: the pet, schema: {$ref: '#/definitions/Pet'}}
      responses:
        "200": {description: ok, schema: {$ref: '#/definitions/Person'}}
  /login:
    post:
      operationId: login
      consumes: []
      parameters:
        - {name: user, in: formData, type: string, required: true, description: who}
        - {name: remember, in: formData, type: boolean}
      responses: {"204": {description: ok}}
  /form:
    parameters:
      - {name: shared, in: formData, type: integer}
    put:
      operationId: putForm
      consumes: [application/x-www-form-urlencoded, multipart/form-data]
      parameters:
        - {name: own, in: formData, type: string}
      responses: {"204": {description: ok}}
`

func TestSwaggerConversion(t *testing.T) {
	c, warnings := buildDoc(t, swaggerForms)
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if want := (map[string]Scheme{"key": {Type: SchemeAPIKey, In: "query", Name: "k"},
		"basic": {Type: SchemeBasic, Description: "user and password"}, "oauth": {Type: SchemeBearer}}); !reflect.DeepEqual(c.Schemes, want) {
		t.Errorf("schemes: %+v", c.Schemes)
	}
	add := opNamed(t, c, "addPet")
	if add.Body == nil || add.Body.MediaType != "application/json" || !add.Body.Required {
		t.Errorf("body: %+v", add.Body)
	}
	if !reflect.DeepEqual(add.Security, [][]string{{"oauth"}, {"basic", "key"}}) {
		t.Errorf("security: %v", add.Security)
	}
	body := at(t, add.InputSchema, "body")
	if body["description"] != "the pet" || jsonOf(body["required"]) != `["name"]` {
		t.Errorf("body schema: %s", jsonOf(body))
	}
	// type file is a binary string; definitions are resolved, x-nullable
	// is a null type.
	if got := jsonOf(at(t, body, "photo")); got != `{"format":"binary","type":"string"}` {
		t.Errorf("file: %s", got)
	}
	if got := jsonOf(at(t, body, "owner", "nick")["type"]); got != `["string","null"]` {
		t.Errorf("x-nullable: %s", got)
	}
	if got := jsonOf(add.OutputSchema); got != `{"properties":{"nick":{"type":["string","null"]}},"type":"object"}` {
		t.Errorf("output (produces defaults to JSON): %s", got)
	}

	// formData without consumes: a required urlencoded object.
	login := opNamed(t, c, "login")
	if login.Body == nil || login.Body.MediaType != "application/x-www-form-urlencoded" || !login.Body.Required {
		t.Errorf("form body: %+v", login.Body)
	}
	if got := jsonOf(at(t, login.InputSchema, "body")); got != `{"properties":{"remember":{"type":"boolean"},"user":{"description":"who","type":"string"}},"required":["user"],"type":"object"}` {
		t.Errorf("form schema: %s", got)
	}
	// A path item's formData parameter joins the operation's.
	put := opNamed(t, c, "putForm")
	if put.Body.MediaType != "application/x-www-form-urlencoded" || put.Body.Required {
		t.Errorf("put body: %+v", put.Body)
	}
	if got := jsonOf(at(t, put.InputSchema, "body")["properties"]); got != `{"own":{"type":"string"},"shared":{"type":"integer"}}` {
		t.Errorf("put form: %s", got)
	}

	// Without host the server is the base path, resolved against the
	// document's URL.
	r := Validate(context.Background(), []byte(swaggerForms), "https://docs.example.com/specs/forms.yaml")
	if r.BaseURL != "https://docs.example.com/api" {
		t.Errorf("base URL: %q", r.BaseURL)
	}
}

func TestSwaggerServersAndErrors(t *testing.T) {
	ctx := context.Background()
	for doc, want := range map[string]string{
		"swagger: '2.0'\ninfo: {title: x, version: '1'}\nhost: h.example.com\npaths: {}\n":                                           "https://h.example.com/",
		"swagger: '2.0'\ninfo: {title: x, version: '1'}\nhost: h.example.com:81\nschemes: [http, https]\nbasePath: /v2\npaths: {}\n": "http://h.example.com:81/v2",
	} {
		d, err := parse(ctx, []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := d.serverURL(""); got != want {
			t.Errorf("%q: server %q, want %q", doc, got, want)
		}
	}
	_, err := parse(ctx, []byte("swagger: '2.0'\ninfo: {title: x, version: '1'}\nhost: https://h.example.com/v1\npaths: {}\n"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "does not load") || !strings.Contains(err.Error(), "host only") {
		t.Errorf("a host with a scheme: %v", err)
	}
	// Version fields written without quotes are numbers in YAML: read as
	// their text, with a warning each (documents in the wild do this).
	for _, doc := range []string{
		"swagger: 2.0\ninfo: {title: x, version: 1.0}\nhost: h.example.com\npaths: {}\n",
		"openapi: 3.0\ninfo: {title: x, version: 2}\npaths: {}\n",
	} {
		d, err := parse(ctx, []byte(doc))
		if err != nil {
			t.Errorf("%q: %v", doc, err)
			continue
		}
		if !strings.Contains(strings.Join(d.warnings, "\n"), "not a number (quote it)") {
			t.Errorf("%q: no warning: %v", doc, d.warnings)
		}
	}
}

const schemas30 = `openapi: 3.0.3
info: {title: S, version: "1"}
paths:
  /s:
    post:
      requestBody:
        content:
          application/json:
            schema:
              type: object
              properties:
                n: {type: integer, nullable: true, enum: [1, 2]}
                untyped: {nullable: true}
                both: {type: number, minimum: 1, maximum: 9, exclusiveMinimum: true, exclusiveMaximum: true}
                inclusive: {type: number, minimum: 1, exclusiveMinimum: false}
                flagOnly: {type: number, exclusiveMaximum: true}
                when: {type: string, example: 2024-05-06T07:08:09Z, default: 2024-05-06}
      responses: {"204": {description: ok}}
`

func TestOpenAPI30NullableAndBounds(t *testing.T) {
	c, _ := buildDoc(t, schemas30)
	body := at(t, c.Operations[0].InputSchema, "body")
	for prop, want := range map[string]string{
		"n":         `{"enum":[1,2,null],"type":["integer","null"]}`,
		"untyped":   `{}`, // nullable says nothing without a type
		"both":      `{"exclusiveMaximum":9,"exclusiveMinimum":1,"type":"number"}`,
		"inclusive": `{"minimum":1,"type":"number"}`,
		"flagOnly":  `{"type":"number"}`,
		// YAML timestamps stay the text written.
		"when": `{"default":"2024-05-06","examples":["2024-05-06T07:08:09Z"],"type":"string"}`,
	} {
		if got := jsonOf(at(t, body, prop)); got != want {
			t.Errorf("%s: %s, want %s", prop, got, want)
		}
	}
}

const schemas31 = `{
  "openapi": "3.1.0",
  "info": {"title": "S", "version": "1"},
  "components": {"schemas": {
    "Name": {"type": "string", "maxLength": 3},
    "Free": true,
    "Never": false
  }},
  "paths": {"/s": {"post": {
    "requestBody": {"content": {"application/json": {"schema": {
      "type": "object",
      "properties": {
        "any": true,
        "none": false,
        "free": {"$ref": "#/components/schemas/Free"},
        "never": {"$ref": "#/components/schemas/Never"},
        "list": {"type": ["array", "null"], "items": false, "prefixItems": [{"type": "integer"}]},
        "multi": {"type": ["string", "integer"], "nullable": true},
        "yamlNull": {"type": ["string", null]},
        "name": {"$ref": "#/components/schemas/Name", "description": "short", "minLength": 1},
        "cond": {"if": {"const": 1}, "then": {"type": "integer"}, "else": {"type": "string"}},
        "bound": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 10}
      }
    }}}}
  }}}
}`

func TestOpenAPI31Schemas(t *testing.T) {
	c, _ := buildDoc(t, schemas31)
	body := at(t, c.Operations[0].InputSchema, "body")
	for prop, want := range map[string]string{
		"any":   `{}`,
		"none":  `{"not":{}}`,
		"free":  `{}`,
		"never": `{"not":{}}`,
		"list":  `{"items":{"not":{}},"prefixItems":[{"type":"integer"}],"type":["array","null"]}`,
		"multi": `{"type":["string","integer","null"]}`,
		// YAML's [string, null] has null itself, not the string.
		"yamlNull": `{"type":["string","null"]}`,
		// An annotation next to $ref replaces the target's; an assertion
		// applies as well (merged here, as it agrees).
		"name":  `{"description":"short","maxLength":3,"minLength":1,"type":"string"}`,
		"cond":  `{"else":{"type":"string"},"if":{"const":1},"then":{"type":"integer"}}`,
		"bound": `{"exclusiveMaximum":10,"exclusiveMinimum":0,"type":"number"}`,
	} {
		if got := jsonOf(at(t, body, prop)); got != want {
			t.Errorf("%s: %s, want %s", prop, got, want)
		}
	}
}

func TestRecursiveRefs(t *testing.T) {
	doc := `openapi: 3.0.3
info: {title: R, version: "1"}
components:
  schemas:
    A: {type: object, properties: {b: {$ref: '#/components/schemas/B'}, self: {$ref: '#/components/schemas/A'}}}
    B: {type: object, properties: {a: {$ref: '#/components/schemas/A'}, alias: {$ref: '#/components/schemas/AliasOfA'}}}
    AliasOfA: {$ref: '#/components/schemas/A'}
paths:
  /r:
    get:
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}}
`
	c, _ := buildDoc(t, doc)
	out := c.Operations[0].OutputSchema
	if got := at(t, out, "self")["description"]; got != "recursive: #/components/schemas/A" {
		t.Errorf("self: %v", jsonOf(out))
	}
	if got := at(t, out, "b", "a")["description"]; got != "recursive: #/components/schemas/A" {
		t.Errorf("mutual: %v", jsonOf(out))
	}
	// A reference to a reference reaches the same schema: still cut.
	if got := at(t, out, "b", "alias")["description"]; got != "recursive: #/components/schemas/AliasOfA" {
		t.Errorf("alias: %v", jsonOf(out))
	}
	// B itself is not recursive where it first appears.
	if at(t, out, "b")["type"] != "object" {
		t.Errorf("b: %v", jsonOf(out))
	}
}

func TestRefsRefused(t *testing.T) {
	ctx := context.Background()
	head := "openapi: 3.0.3\ninfo: {title: x, version: '1'}\n"
	for name, doc := range map[string]string{
		"file":          head + "paths:\n  /a:\n    get:\n      responses: {'200': {$ref: 'other.yaml#/r'}}\n",
		"url":           head + "paths: {}\ncomponents:\n  schemas:\n    A: {properties: {b: {$ref: 'https://example.com/s.json'}}}\n",
		"swagger":       "swagger: '2.0'\ninfo: {title: x, version: '1'}\npaths: {}\ndefinitions:\n  A: {$ref: 'defs.json#/A'}\n",
		"missing":       head + "paths:\n  /a:\n    get:\n      responses: {'200': {$ref: '#/components/responses/Nope'}}\n",
		"not a pointer": head + "paths: {}\ncomponents:\n  schemas:\n    A: {$ref: '#A'}\n",
	} {
		_, err := parse(ctx, []byte(doc))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "does not load") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A file that exists, and a server that answers, are not read either.
	file := filepath.Join(t.TempDir(), "r.yaml")
	if err := os.WriteFile(file, []byte("r: {description: read}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"type": "string"}`))
	}))
	defer srv.Close()
	for _, ref := range []string{file + "#/r", "file://" + file + "#/r", srv.URL + "/s.json"} {
		_, err := parse(ctx, []byte(head+"paths:\n  /a:\n    get:\n      responses: {'200': {$ref: '"+ref+"'}}\n"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "points to another file or URL") {
			t.Errorf("%s: %v", ref, err)
		}
	}
	if n := hits.Load(); n > 0 {
		t.Errorf("the server was asked %d times", n)
	}
	_, err := parse(ctx, []byte(head+"paths:\n  /a:\n    get:\n      responses: {'200': {$ref: 'other.yaml#/r'}}\n"))
	if !strings.Contains(err.Error(), `$ref "other.yaml" points to another file or URL`) {
		t.Errorf("the message says which reference and where: %v", err)
	}
	// A $ref in an example or a default is data, not a reference; a
	// property may be called $ref or default.
	doc := head + `paths:
  /a:
    get:
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema:
                type: object
                properties:
                  $ref: {type: string}
                  default: {type: string, default: {$ref: elsewhere.json}}
                example: {$ref: 'https://example.com'}
              examples:
                one: {value: {$ref: other.yaml}}
`
	c, _ := buildDoc(t, doc)
	if got := jsonOf(c.Operations[0].OutputSchema["properties"]); got != `{"$ref":{"type":"string"},"default":{"default":{"$ref":"elsewhere.json"},"type":"string"}}` {
		t.Errorf("data: %s", got)
	}
}

func TestPathLevelParameters(t *testing.T) {
	doc := `openapi: 3.0.3
info: {title: P, version: "1"}
paths:
  /items/{id}:
    parameters:
      - {name: id, in: path, required: true, description: shared, schema: {type: string}}
      - {name: limit, in: query, description: shared limit, schema: {type: integer}}
      - {name: X-Shared, in: header, schema: {type: string}}
    get:
      parameters:
        - {name: limit, in: query, required: true, description: own limit, schema: {type: integer, maximum: 5}}
        - {name: id, in: header, schema: {type: string}}
      responses: {"200": {description: ok}}
    delete:
      responses: {"204": {description: ok}}
`
	c, warnings := buildDoc(t, doc)
	get := opNamed(t, c, "get_items_id")
	var order []string
	for _, p := range get.Params {
		order = append(order, p.In+":"+p.Key)
	}
	// Path, then query, then header; the header id is renamed.
	if want := []string{"path:id", "query:limit", "header:X-Shared", "header:header_id"}; !reflect.DeepEqual(order, want) {
		t.Errorf("params %v, want %v", order, want)
	}
	if got := jsonOf(at(t, get.InputSchema, "limit")); got != `{"description":"own limit","maximum":5,"type":"integer"}` {
		t.Errorf("overridden limit: %s", got)
	}
	if jsonOf(get.InputSchema["required"]) != `["id","limit"]` {
		t.Errorf("required: %s", jsonOf(get.InputSchema["required"]))
	}
	del := opNamed(t, c, "delete_items_id")
	if got := at(t, del.InputSchema, "limit")["description"]; got != "shared limit" {
		t.Errorf("inherited limit: %v", got)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), `the header parameter "id" is the input "header_id"`) {
		t.Errorf("warnings: %v", warnings)
	}
}

func TestSpecWarnings(t *testing.T) {
	doc := `openapi: 3.0.3
info: {version: "1.0"}
servers:
  - url: "https://{region}.example.com/{stage}"
    variables: {region: {enum: [eu]}}
components:
  securitySchemes:
    key: {type: apiKey, in: body}
security: [{nope: []}]
paths:
  /a/{id}:
    get:
      operationId: same
      parameters:
        - {name: id, in: path, schema: {type: string}}
        - {name: q, in: body, schema: {type: string}}
        - {name: r, in: query}
        - {name: r, in: query, schema: {type: string}}
      responses: {"200": {}, "20": {description: x}}
  /b/{x}:
    post:
      operationId: same
      security: [{key: []}, {ghost: []}]
      parameters:
        - {name: y, in: path, required: true, schema: {type: string}}
  c:
    put:
      responses: {}
`
	r := Validate(context.Background(), []byte(doc), "")
	if !r.Valid {
		t.Fatalf("departures are warnings, not problems: %+v", r)
	}
	got := strings.Join(specOnly(r.Warnings), "\n")
	for _, want := range []string{
		"info.title is missing",
		`servers[0]: the URL "https://{region}.example.com/{stage}" names {stage}, which is not one of its variables`,
		"servers[0].variables.region has no default",
		`path "c" does not start with /`,
		"GET /a/{id}: path parameter \"id\" must be required: true",
		`GET /a/{id}: parameter "q" is in "body"; a parameter is in query, header, path or cookie`,
		`GET /a/{id}: parameter "r" has neither a schema nor a content`,
		`GET /a/{id}: the query parameter "r" is declared twice`,
		"GET /a/{id}: response 200 has no description",
		`GET /a/{id}: response "20" is not a status code`,
		"POST /b/{x}: the path names {x} but no path parameter \"x\" is declared",
		`POST /b/{x}: path parameter "y" is not in the path template`,
		"POST /b/{x} has no responses",
		"PUT c: responses is empty",
		`operationId "same" is used by GET /a/{id} and POST /b/{x}`,
		`security[0] names the security scheme "nope", which components.securitySchemes does not define`,
		`POST /b/{x} security[1] names the security scheme "ghost"`,
		"security scheme key: an apiKey scheme needs name",
		`security scheme key: an apiKey scheme is in header, query or cookie, not "body"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if len(specOnly(r.Warnings)) > maxSpecWarnings {
		t.Errorf("%d warnings", len(r.Warnings))
	}
	r = Validate(context.Background(), []byte(`openapi: 3.1.0
info: {title: x, version: "1"}
components:
  securitySchemes:
    web: {type: http}
    weird: {type: magic}
    o: {type: oauth2}
    oidc: {type: openIdConnect}
    none: {description: what}
`), "")
	got = strings.Join(specOnly(r.Warnings), "\n")
	for _, want := range []string{
		"security scheme web: an http scheme needs scheme",
		`security scheme weird: type "magic" is none of`,
		"security scheme o: an oauth2 scheme needs flows",
		"security scheme oidc: an openIdConnect scheme needs openIdConnectUrl",
		"security scheme none has no type",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}

	// Past maxSpecWarnings, one line counts the rest.
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths:\n")
	for i := range 30 {
		fmt.Fprintf(&b, "  /p%d:\n    get: {operationId: op%d}\n", i, i)
	}
	r = Validate(context.Background(), []byte(b.String()), "")
	spec := 0
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, specPrefix) {
			spec++
		}
	}
	if spec != maxSpecWarnings || r.Warnings[len(r.Warnings)-2] != "… and 10 more departures from the OpenAPI specification" {
		t.Errorf("%d warnings: %q", spec, r.Warnings[len(r.Warnings)-2:])
	}

	// The test documents follow the specification.
	for _, doc := range []string{"petstore-swagger2.yaml", "bookshop-openapi31.json", swaggerForms, schemas31} {
		data := []byte(doc)
		if !strings.Contains(doc, "\n") {
			data = readDoc(t, doc)
		}
		if w := specOnly(Validate(context.Background(), data, "").Warnings); len(w) != 0 {
			t.Errorf("%.40q: %v", doc, w)
		}
	}
}

func TestSwaggerWarnings(t *testing.T) {
	doc := `swagger: "2.0"
info: {title: W, version: "1"}
host: w.example.com
securityDefinitions:
  o: {type: oauth2, flow: accessCode, authorizationUrl: "https://a.example.com", tokenUrl: "https://t.example.com"}
paths:
  /w:
    post:
      security: [{o: []}, {none: []}]
      parameters:
        - {name: a, in: body, schema: {type: object}}
        - {name: e, in: query, type: array, items: {type: string}, collectionFormat: tsv}
      responses: {"200": {description: ok}}
`
	r := Validate(context.Background(), []byte(doc), "")
	got := strings.Join(specOnly(r.Warnings), "\n")
	if want := `POST /w security[1] names the security scheme "none", which securityDefinitions does not define`; !r.Valid || !strings.Contains(got, want) {
		t.Errorf("missing %q in %+v", want, r)
	}
	// What the conversion cannot do is a problem.
	bad := strings.Replace(doc, "        - {name: e,", "        - {name: b, in: body, schema: {type: object}}\n        - {name: e,", 1)
	r = Validate(context.Background(), []byte(bad), "")
	if r.Valid || !strings.Contains(strings.Join(r.Problems, "\n"), "multiple body parameters") {
		t.Errorf("two body parameters: %+v", r)
	}
}

// TestRefCycle: a chain of references that comes back to where it started
// loads (the library keeps it as a cycle) and converts to a bounded schema.
func TestRefCycle(t *testing.T) {
	doc := "openapi: 3.0.3\ninfo: {title: x, version: '1'}\nservers: [{url: 'https://x.example.com'}]\n" +
		"components:\n  schemas:\n    A: {$ref: '#/components/schemas/B'}\n    B: {$ref: '#/components/schemas/A'}\n" +
		"paths: {/a: {get: {responses: {'200': {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/A'}}}}}}}}\n"
	c, _, err := Build(context.Background(), []byte(doc), Options{Title: "X"})
	if err != nil {
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("not an invalid document: %v", err)
		}
		return // refused: as good
	}
	if n := len(jsonOf(c.Operations[0].OutputSchema)); n > 1<<10 {
		t.Errorf("a cycle of two references converts to %d bytes", n)
	}
}

// TestBounds: what is refused before the library reads a document —
// aliases that expand too far, nesting too deep — and JSON's own errors.
func TestBounds(t *testing.T) {
	for doc, want := range map[string]string{
		"a: &a [*a]\n": "",
		"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n": "expands to more than",
		strings.Repeat("[", 600) + strings.Repeat("]", 600):         "deeper than",
		"a: " + strings.Repeat("[", 600) + strings.Repeat("]", 600): "deeper than",
		`{"a": 1`: "unexpected end of JSON input",
	} {
		_, err := checkBounds([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.30q: %v, want %q", doc, err, want)
		}
	}
	if _, err := checkBounds([]byte(`{"a": [1, 2.5, "x", null, true]}`)); err != nil {
		t.Errorf("JSON: %v", err)
	}
}

// TestExpansionBounded: schemas that refer to the next one twice expand
// to 2^n nodes when every reference is inlined; a document of a few
// hundred bytes must not take the server's memory.
func TestExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: B, version: \"1\"}\ncomponents:\n  schemas:\n")
	const depth = 40
	for i := range depth {
		fmt.Fprintf(&b, "    S%d: {type: object, properties: {x: {$ref: '#/components/schemas/S%d'}, y: {$ref: '#/components/schemas/S%d'}}}\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "    S%d: {type: string}\n", depth)
	b.WriteString("paths:\n  /b:\n    post:\n      requestBody: {content: {application/json: {schema: {$ref: '#/components/schemas/S0'}}}}\n      responses:\n        \"200\": {description: ok, content: {application/json: {schema: {$ref: '#/components/schemas/S0'}}}}\n")
	c, warnings := buildDoc(t, b.String())
	op := c.Operations[0]
	for _, s := range []map[string]any{op.InputSchema, op.OutputSchema} {
		if n := len(jsonOf(s)); n > 4<<20 {
			t.Fatalf("schema of %d bytes", n)
		}
		if !strings.Contains(jsonOf(s), "too large to inline") {
			t.Errorf("no note where the expansion stopped: %.300s", jsonOf(s))
		}
	}
	if !slices.ContainsFunc(warnings, func(w string) bool { return strings.Contains(w, "too large to inline") }) {
		t.Errorf("no warning: %q", warnings)
	}
	// A schema that expands within the bound is whole.
	small, _ := buildDoc(t, strings.Replace(b.String(), "S0'}}}}\n      responses", "S35'}}}}\n      responses", 1))
	if strings.Contains(jsonOf(small.Operations[0].InputSchema), "too large") {
		t.Errorf("32 leaves cut: %.300s", jsonOf(small.Operations[0].InputSchema))
	}
}

// TestSwaggerQueryArrays: a Swagger 2.0 query array without
// collectionFormat is sent comma-separated (the 2.0 default, csv), not as
// repeated keys (OpenAPI 3's default); multi repeats the key.
func TestSwaggerQueryArrays(t *testing.T) {
	doc := `swagger: "2.0"
info: {title: Q, version: "1"}
host: q.example.com
paths:
  /q:
    get:
      operationId: q
      parameters:
        - {name: ids, in: query, type: array, items: {type: integer}}
        - {name: tags, in: query, type: array, items: {type: string}, collectionFormat: multi}
        - {name: names, in: query, type: array, items: {type: string}, collectionFormat: csv}
      responses: {"200": {description: ok}}
`
	c, _, err := Build(context.Background(), []byte(doc), Options{Title: "Q"})
	if err != nil {
		t.Fatal(err)
	}
	op := opNamed(t, c, "q")
	explode := map[string]bool{}
	for _, p := range op.Params {
		explode[p.Name] = p.Explode
	}
	if want := map[string]bool{"ids": false, "tags": true, "names": false}; !reflect.DeepEqual(explode, want) {
		t.Fatalf("explode %v, want %v", explode, want)
	}
	q := url.Values{}
	for _, p := range op.Params {
		addQuery(q, p, map[string]any{"ids": []any{1, 2}, "tags": []any{"a", "b"}, "names": []any{"x", "y"}}[p.Name])
	}
	if got, want := q.Encode(), "ids=1%2C2&names=x%2Cy&tags=a&tags=b"; got != want {
		t.Fatalf("query %s, want %s", got, want)
	}
}

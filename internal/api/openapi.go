package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// OpenAPIVersion is the version of the OpenAPI specification the document
// follows.
const OpenAPIVersion = "3.1.0"

// schemaTypes fixes how Go types appear in the document's schemas.
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
	reflect.TypeFor[any]():       {},
}

// enums are the values of string properties the Go types cannot say, by
// schema and property (and by query parameter, under "").
var enums = map[string]map[string][]string{
	"Run":     {"status": runStatuses},
	"RunLine": {"status": runStatuses},
	"":        {"status": runStatuses},
}

// openAPI serves GET /api/openapi.json.
func (h *Handler) openAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := h.Document()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(doc)
}

// Document returns the API's OpenAPI 3.1 document, JSON: the routes the
// handler serves, with schemas derived from their Go types. It is built
// on first use and kept.
func (h *Handler) Document() ([]byte, error) {
	h.docOnce.Do(func() {
		doc, err := buildDocument(h.routes, h.opts.BaseURL, h.opts.Version)
		if err == nil {
			h.doc, err = json.MarshalIndent(doc, "", "  ")
		}
		h.doc, h.docErr = append(h.doc, '\n'), err
	})
	return h.doc, h.docErr
}

// pathParam finds the parameters of a route's path.
var pathParam = regexp.MustCompile(`\{([a-z_]+)\}`)

// buildDocument assembles the document from the route table.
func buildDocument(rs []route, baseURL, version string) (map[string]any, error) {
	if version == "" {
		version = "dev"
	}
	server := baseURL
	if server == "" {
		server = "/"
	}
	schemas := map[string]any{}
	// ref is the document's reference to t's schema, added to the
	// components the first time.
	ref := func(t reflect.Type) (map[string]any, error) {
		if t.Kind() != reflect.Struct {
			return schemaOf(t, "")
		}
		if _, ok := schemas[t.Name()]; !ok {
			s, err := schemaOf(t, t.Name())
			if err != nil {
				return nil, err
			}
			schemas[t.Name()] = s
		}
		return map[string]any{"$ref": "#/components/schemas/" + t.Name()}, nil
	}
	problem, err := ref(reflect.TypeFor[Problem]())
	if err != nil {
		return nil, err
	}
	paths := map[string]any{}
	for _, rt := range rs {
		op := map[string]any{"operationId": rt.id, "summary": rt.summary, "description": rt.doc, "tags": []string{"runs"}}
		var params []any
		if rt.params != nil {
			ps, err := parameters(rt.params, "path")
			if err != nil {
				return nil, err
			}
			params = append(params, ps...)
		}
		if got, want := len(params), len(pathParam.FindAllString(rt.path, -1)); got != want {
			return nil, fmt.Errorf("route %s %s: %d path parameters in its type, %d in its path", rt.method, rt.path, got, want)
		}
		if rt.query != nil {
			ps, err := parameters(rt.query, "query")
			if err != nil {
				return nil, err
			}
			params = append(params, ps...)
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if rt.body != nil {
			s, err := ref(rt.body)
			if err != nil {
				return nil, err
			}
			op["requestBody"] = map[string]any{"required": !rt.optionalBody,
				"content": map[string]any{"application/json": map[string]any{"schema": s}}}
		}
		out, err := ref(rt.out)
		if err != nil {
			return nil, err
		}
		responses := map[string]any{strconv.Itoa(rt.status): map[string]any{"description": http.StatusText(rt.status),
			"content": map[string]any{"application/json": map[string]any{"schema": out}}}}
		for _, st := range append(slices.Clone(rt.problems), http.StatusUnauthorized, http.StatusMethodNotAllowed, http.StatusInternalServerError) {
			responses[strconv.Itoa(st)] = map[string]any{"description": http.StatusText(st) + " (problem details)",
				"content": map[string]any{"application/problem+json": map[string]any{"schema": problem}}}
		}
		op["responses"] = responses
		item, _ := paths[rt.path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[rt.path] = item
		}
		item[strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": OpenAPIVersion,
		"info": map[string]any{"title": "stepwise REST API", "version": version,
			"description": "Start stepwise runs, read and list them, answer their pauses and cancel them. Errors are RFC 9457 problem details whose code is stepwise's error code."},
		"servers":  []any{map[string]any{"url": server}},
		"security": []any{map[string]any{"bearer": []string{}}},
		"tags":     []any{map[string]any{"name": "runs", "description": "Runs of workflows"}},
		"paths":    paths,
		"components": map[string]any{
			"schemas":         schemas,
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "one of the server's --auth-token (none needed when it has none)"}},
		},
	}, nil
}

// schemaOf is the JSON Schema of t as a generic value, with the enums
// known for the schema of that name.
func schemaOf(t reflect.Type, name string) (map[string]any, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		return nil, fmt.Errorf("schema of %s: %w", t, err)
	}
	for prop, values := range enums[name] {
		if p := s.Properties[prop]; p != nil && name != "" {
			p.Enum = anys(values)
		}
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "$schema")
	return m, nil
}

// parameters are the parameters of a struct type's fields, in (path or
// query); path parameters are required.
func parameters(t reflect.Type, in string) ([]any, error) {
	s, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		return nil, fmt.Errorf("parameters of %s: %w", t, err)
	}
	var out []any
	for _, name := range s.PropertyOrder {
		p := *s.Properties[name]
		desc := p.Description
		p.Description = ""
		if in == "query" && enums[""][name] != nil {
			p.Enum = anys(enums[""][name])
		}
		data, err := json.Marshal(&p)
		if err != nil {
			return nil, err
		}
		var schema map[string]any
		if err := json.Unmarshal(data, &schema); err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"name": name, "in": in, "required": in == "path", "description": desc, "schema": schema})
	}
	return out, nil
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

package catalog

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// swagger20In are the places a Swagger 2.0 parameter can be.
var swagger20In = map[string]bool{"query": true, "header": true, "path": true, "formData": true, "body": true}

// swagger20Methods are the operations of a Swagger 2.0 path item.
var swagger20Methods = []string{"get", "put", "post", "delete", "options", "head", "patch"}

// fromSwagger converts a Swagger 2.0 document (decoded) to the OpenAPI 3
// form the rest of the package reads:
//   - host, basePath and schemes become the servers;
//   - definitions, responses and securityDefinitions become components
//     (and their $refs are rewritten to match); parameters are inlined
//     where they are used;
//   - body parameters become request bodies, formData parameters the
//     properties of an object request body, in the media types of
//     consumes; response schemas are given the media types of produces;
//   - collectionFormat becomes style and explode, type file a binary
//     string, x-nullable nullable.
//
// What cannot be converted faithfully is a warning; only a host that is
// not a host is an error.
func fromSwagger(root map[string]any) (map[string]any, []string, error) {
	c := &swaggerConv{root: root, res: &resolver{root: root}}
	out := map[string]any{"openapi": "3.0.3"}
	for _, k := range []string{"info", "tags", "externalDocs", "security"} {
		if v, ok := root[k]; ok {
			out[k] = v
		}
	}
	servers, err := c.servers()
	if err != nil {
		return nil, nil, err
	}
	if servers != nil {
		out["servers"] = servers
	}
	consumes := c.mediaTypes(root["consumes"])
	produces := c.mediaTypes(root["produces"])

	comps := map[string]any{}
	if defs, ok := root["definitions"].(map[string]any); ok {
		schemas := make(map[string]any, len(defs))
		for name, s := range defs {
			schemas[name] = c.schema(s)
		}
		comps["schemas"] = schemas
	}
	if resps, ok := root["responses"].(map[string]any); ok {
		conv := make(map[string]any, len(resps))
		for _, name := range sortedKeys(resps) {
			r := resps[name]
			conv[name] = c.response(r, produces)
		}
		comps["responses"] = conv
	}
	if defs, ok := root["securityDefinitions"].(map[string]any); ok {
		conv := make(map[string]any, len(defs))
		for _, name := range sortedKeys(defs) {
			conv[name] = c.securityScheme(name, defs[name])
		}
		comps["securitySchemes"] = conv
	}
	out["components"] = comps

	if paths, ok := root["paths"].(map[string]any); ok {
		conv := make(map[string]any, len(paths))
		for _, path := range sortedKeys(paths) {
			if item, ok := paths[path].(map[string]any); ok {
				conv[path] = c.pathItem(path, item, consumes, produces)
			} else {
				conv[path] = paths[path]
			}
		}
		out["paths"] = conv
	} else if v, ok := root["paths"]; ok {
		out["paths"] = v
	}
	return out, c.found, nil
}

type swaggerConv struct {
	notes
	root map[string]any
	res  *resolver
}

// servers is the server list of host, basePath and schemes: one server
// per scheme (https when none is given), or the base path alone when
// there is no host (the host serving the document is meant).
func (c *swaggerConv) servers() ([]any, error) {
	host, _ := c.root["host"].(string)
	basePath, _ := c.root["basePath"].(string)
	if host == "" {
		if basePath == "" {
			return nil, nil
		}
		return []any{map[string]any{"url": basePath}}, nil
	}
	if strings.Contains(host, "/") {
		return nil, fmt.Errorf("host %q: a Swagger 2.0 host is a host name and optional port, without a scheme or path (those are schemes and basePath)", host)
	}
	schemes := c.mediaTypes(c.root["schemes"])
	if len(schemes) == 0 {
		schemes = []string{"https"}
	}
	if basePath == "" {
		basePath = "/"
	}
	var out []any
	for _, scheme := range schemes {
		u := url.URL{Scheme: scheme, Host: host, Path: basePath}
		out = append(out, map[string]any{"url": u.String()})
	}
	return out, nil
}

// mediaTypes reads a list of strings (consumes, produces, schemes).
func (c *swaggerConv) mediaTypes(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// ref rewrites a Swagger 2.0 reference to its OpenAPI 3 place.
func swaggerRef(ref string) string {
	for old, repl := range map[string]string{"#/definitions/": "#/components/schemas/",
		"#/parameters/": "#/components/parameters/", "#/responses/": "#/components/responses/"} {
		if strings.HasPrefix(ref, old) {
			return repl + ref[len(old):]
		}
	}
	return ref
}

// schema converts a Swagger 2.0 schema: its $refs rewritten, type file
// a binary string, x-nullable nullable; nested schemas likewise.
func (c *swaggerConv) schema(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		switch k {
		case "$ref":
			if s, ok := x.(string); ok {
				x = swaggerRef(s)
			}
		case "properties", "patternProperties", "definitions":
			if props, ok := x.(map[string]any); ok {
				conv := make(map[string]any, len(props))
				for name, p := range props {
					conv[name] = c.schema(p)
				}
				x = conv
			}
		case "items", "additionalProperties", "not":
			x = c.schema(x)
		case "allOf", "anyOf", "oneOf":
			if list, ok := x.([]any); ok {
				conv := make([]any, len(list))
				for i, p := range list {
					conv[i] = c.schema(p)
				}
				x = conv
			}
		case "x-nullable":
			if b, ok := x.(bool); ok {
				out["nullable"] = b
				continue
			}
		}
		out[k] = x
	}
	if out["type"] == "file" {
		out["type"], out["format"] = "string", "binary"
	}
	return out
}

// paramSchemaKeys are the keywords of a Swagger 2.0 non-body parameter
// that describe its value.
var paramSchemaKeys = []string{"type", "format", "items", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "multipleOf", "default", "x-nullable"}

// valueSchema is the schema a non-body parameter's keywords describe.
func (c *swaggerConv) valueSchema(p map[string]any) any {
	if s, ok := p["schema"].(map[string]any); ok {
		if ref, ok := s["$ref"].(string); ok {
			return map[string]any{"$ref": swaggerRef(ref)}
		}
	}
	s := map[string]any{}
	for _, k := range paramSchemaKeys {
		if v, ok := p[k]; ok {
			s[k] = v
		}
	}
	return c.schema(s)
}

// param converts a path, query or header parameter.
func (c *swaggerConv) param(p map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"name", "in", "description", "required", "allowEmptyValue"} {
		if v, ok := p[k]; ok {
			out[k] = v
		}
	}
	if p["in"] == "path" {
		out["required"] = true
	}
	out["schema"] = c.valueSchema(p)
	if p["in"] == "query" && p["type"] == "array" {
		switch p["collectionFormat"] {
		case "csv", nil: // Swagger 2.0's default; OpenAPI 3's would repeat the key
			out["style"], out["explode"] = "form", false
		case "ssv":
			out["style"], out["explode"] = "spaceDelimited", false
		case "pipes":
			out["style"], out["explode"] = "pipeDelimited", false
		case "multi":
			out["style"], out["explode"] = "form", true
		case "tsv":
			c.warn("query parameter %q: collectionFormat tsv has no OpenAPI 3 equivalent", p["name"])
		}
	}
	return out
}

// pathItem converts a path item: its operations get the body and
// formData parameters of the path item that they do not override.
func (c *swaggerConv) pathItem(path string, item map[string]any, consumes, produces []string) map[string]any {
	out := map[string]any{}
	shared := c.params(path, item["parameters"])
	var kept []any
	for _, p := range shared {
		if p.in != "body" && p.in != "formData" {
			kept = append(kept, p.conv)
		}
	}
	if kept != nil {
		out["parameters"] = kept
	}
	for _, method := range swagger20Methods {
		if op, ok := item[method].(map[string]any); ok {
			out[method] = c.operation(strings.ToUpper(method)+" "+path, op, shared, consumes, produces)
		}
	}
	return out
}

// swaggerParam is a parameter as written and, unless it is a body or
// formData one, converted.
type swaggerParam struct {
	id   string // what an operation's parameter overrides it by
	in   string
	def  map[string]any
	conv any
}

// params reads a list of parameters, following references to the
// document's parameters.
func (c *swaggerConv) params(where string, v any) []swaggerParam {
	list, _ := v.([]any)
	var out []swaggerParam
	for _, pv := range list {
		target, _, err := c.res.follow(pv)
		def, ok := target.(map[string]any)
		if err != nil || !ok {
			continue // the reference check reported it
		}
		in, _ := def["in"].(string)
		name, _ := def["name"].(string)
		if !swagger20In[in] {
			c.warn("%s: parameter %q is in %q; a Swagger 2.0 parameter is in query, header, path, formData or body", where, name, in)
		}
		p := swaggerParam{id: in + "\x00" + name, in: in, def: def}
		if in != "body" && in != "formData" {
			p.conv = c.param(def)
		}
		out = append(out, p)
	}
	return out
}

func (c *swaggerConv) operation(where string, op map[string]any, shared []swaggerParam, consumes, produces []string) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"operationId", "summary", "description", "deprecated", "tags", "security", "externalDocs"} {
		if v, ok := op[k]; ok {
			out[k] = v
		}
	}
	if v, ok := op["consumes"]; ok {
		consumes = c.mediaTypes(v)
	}
	if v, ok := op["produces"]; ok {
		produces = c.mediaTypes(v)
	}
	own := c.params(where, op["parameters"])
	overridden := map[string]bool{}
	for _, p := range own {
		overridden[p.id] = true
	}
	var bodies, form []swaggerParam
	var params []any
	for _, p := range shared {
		if !overridden[p.id] && (p.in == "body" || p.in == "formData") {
			if p.in == "body" {
				bodies = append(bodies, p)
			} else {
				form = append(form, p)
			}
		}
	}
	for _, p := range own {
		switch p.in {
		case "body":
			bodies = append(bodies, p)
		case "formData":
			form = append(form, p)
		default:
			params = append(params, p.conv)
		}
	}
	if params != nil {
		out["parameters"] = params
	}
	switch {
	case len(bodies) > 0:
		if len(bodies) > 1 {
			c.warn("%s: has %d body parameters; a Swagger 2.0 operation has at most one (the first is the request body)", where, len(bodies))
		}
		if len(form) > 0 {
			c.warn("%s: has both body and formData parameters; the body parameter is the request body", where)
		}
		out["requestBody"] = c.bodyParam(bodies[0].def, consumes)
	case len(form) > 0:
		out["requestBody"] = c.formBody(form, consumes)
	}
	if rs, ok := op["responses"].(map[string]any); ok {
		conv := make(map[string]any, len(rs))
		for _, code := range sortedKeys(rs) {
			r := rs[code]
			if strings.HasPrefix(code, "x-") {
				continue
			}
			conv[code] = c.response(r, produces)
		}
		out["responses"] = conv
	} else if v, ok := op["responses"]; ok {
		out["responses"] = v
	}
	return out
}

// content gives a schema every media type of a list (*/* when the list
// is empty).
func content(schema any, types []string) map[string]any {
	if len(types) == 0 {
		types = []string{"*/*"}
	}
	out := make(map[string]any, len(types))
	for _, t := range types {
		out[t] = map[string]any{"schema": schema}
	}
	return out
}

func (c *swaggerConv) bodyParam(p map[string]any, consumes []string) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"description", "required"} {
		if v, ok := p[k]; ok {
			out[k] = v
		}
	}
	if s, ok := p["schema"]; ok {
		out["content"] = content(c.schema(s), consumes)
	}
	return out
}

// formBody is the request body of formData parameters: an object with a
// property per parameter, required when one of them is. Without
// consumes, the form is urlencoded (what formData means by default).
func (c *swaggerConv) formBody(form []swaggerParam, consumes []string) map[string]any {
	props := map[string]any{}
	var required []string
	for _, p := range form {
		name, _ := p.def["name"].(string)
		s, _ := c.valueSchema(p.def).(map[string]any)
		if d, ok := p.def["description"]; ok && s != nil {
			s["description"] = d
		}
		props[name] = s
		if r, _ := p.def["required"].(bool); r && !slices.Contains(required, name) {
			required = append(required, name)
		}
	}
	slices.Sort(required)
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		list := make([]any, len(required))
		for i, r := range required {
			list[i] = r
		}
		schema["required"] = list
	}
	if len(consumes) == 0 {
		consumes = []string{"application/x-www-form-urlencoded"}
	}
	return map[string]any{"required": len(required) > 0, "content": content(schema, consumes)}
}

// response converts a response (or rewrites its reference): its schema
// in the media types of produces (application/json when none is given).
func (c *swaggerConv) response(v any, produces []string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if ref, ok := m["$ref"].(string); ok {
		return map[string]any{"$ref": swaggerRef(ref)}
	}
	out := map[string]any{}
	if d, ok := m["description"]; ok {
		out["description"] = d
	}
	if s, ok := m["schema"]; ok {
		if len(produces) == 0 {
			produces = []string{"application/json"}
		}
		out["content"] = content(c.schema(s), produces)
	}
	return out
}

// securityScheme converts a security definition: basic becomes HTTP
// basic; apiKey stays; oauth2's flow becomes an OAuth 2 flows object.
func (c *swaggerConv) securityScheme(name string, v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	if d, ok := m["description"]; ok {
		out["description"] = d
	}
	typ, _ := m["type"].(string)
	switch typ {
	case "basic":
		out["type"], out["scheme"] = "http", "basic"
	case "apiKey":
		out["type"] = "apiKey"
		for _, k := range []string{"in", "name"} {
			if v, ok := m[k]; ok {
				out[k] = v
			}
		}
	case "oauth2":
		out["type"] = "oauth2"
		flow := map[string]any{"scopes": map[string]any{}}
		if s, ok := m["scopes"]; ok {
			flow["scopes"] = s
		}
		for from, to := range map[string]string{"authorizationUrl": "authorizationUrl", "tokenUrl": "tokenUrl"} {
			if v, ok := m[from]; ok {
				flow[to] = v
			}
		}
		flows := map[string]any{}
		switch f, _ := m["flow"].(string); f {
		case "implicit":
			flows["implicit"] = flow
		case "password":
			flows["password"] = flow
		case "application":
			flows["clientCredentials"] = flow
		case "accessCode":
			flows["authorizationCode"] = flow
		default:
			c.warn("securityDefinitions.%s: OAuth 2 flow %q; a Swagger 2.0 flow is implicit, password, application or accessCode", name, f)
		}
		out["flows"] = flows
	default:
		out["type"] = typ
	}
	return out
}

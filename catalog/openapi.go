package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// spec is an OpenAPI document in its OpenAPI 3 form, as far as a catalog
// reads it. Schemas stay the decoded data (the converter of schema.go
// reads them); everything around them is typed.
type spec struct {
	info    *info // nil without an info object
	servers []server
	// paths is nil when the document has no paths object.
	paths    map[string]*pathItem
	security []securityRequirement
	schemes  map[string]*securityScheme
	// hasComponents and hasWebhooks: what OpenAPI 3.1 accepts instead of
	// paths.
	hasComponents, hasWebhooks bool
}

type info struct {
	title, version string
}

type server struct {
	url  string
	vars map[string]serverVariable
}

type serverVariable struct {
	def        string
	hasDefault bool
}

// pathItem is one path's operations by method (upper case) and the
// parameters they share.
type pathItem struct {
	params []*parameter
	ops    map[string]*operation
}

type operation struct {
	id, summary, description string
	tags                     []string
	deprecated               bool
	params                   []*parameter
	body                     *requestBody
	// responses is nil when the operation has no responses object.
	responses map[string]*response
	// security is nil when the operation does not say (the document's
	// applies); empty when it says none.
	security *[]securityRequirement
}

// securityRequirement maps scheme names to scopes: one alternative.
type securityRequirement map[string][]string

type parameter struct {
	name, in, description, style string
	required, deprecated         bool
	explode                      *bool
	// schema is the decoded schema (nil when absent); content is the
	// alternative OpenAPI 3 offers.
	schema  any
	content map[string]*mediaType
}

type requestBody struct {
	description string
	required    bool
	content     map[string]*mediaType
}

type mediaType struct {
	// schema is the decoded schema, nil when the media type has none.
	schema any
}

type response struct {
	description *string
	content     map[string]*mediaType
}

type securityScheme struct {
	typ, description, name, in, scheme, openIDConnectURL string
	hasFlows                                             bool
}

// specMethods are the operations of a path item: the keys of the
// methods in OpenAPI (query is OpenAPI 3.2's).
var specMethods = []string{"get", "head", "post", "put", "patch", "delete", "options", "trace", "query"}

// decoder builds a spec from decoded data. A field of the wrong type is
// a departure from the specification: it is read as absent, with a
// warning, rather than refusing a document that is otherwise usable.
type decoder struct {
	notes
	res *resolver
}

// decodeSpec reads the OpenAPI 3 form of a document.
func decodeSpec(root map[string]any, res *resolver) (*spec, []string) {
	d := &decoder{res: res}
	s := &spec{}
	if v, ok := root["info"]; ok {
		if m := d.object(v, "info"); m != nil {
			s.info = &info{title: d.str(m, "title", "info"), version: d.str(m, "version", "info")}
		}
	}
	for i, v := range d.list(root["servers"], "servers") {
		m := d.object(v, fmt.Sprintf("servers[%d]", i))
		if m == nil {
			continue
		}
		where := fmt.Sprintf("servers[%d]", i)
		srv := server{url: d.str(m, "url", where), vars: map[string]serverVariable{}}
		vars := d.objectField(m, "variables", where)
		for _, name := range sortedKeys(vars) {
			vv := vars[name]
			vm := d.object(vv, where+".variables."+name)
			if vm == nil {
				continue
			}
			_, has := vm["default"]
			srv.vars[name] = serverVariable{def: d.str(vm, "default", where+".variables."+name), hasDefault: has}
		}
		s.servers = append(s.servers, srv)
	}
	if v, ok := root["paths"]; ok {
		s.paths = map[string]*pathItem{}
		paths := d.object(v, "paths")
		for _, path := range sortedKeys(paths) {
			pv := paths[path]
			if strings.HasPrefix(path, "x-") {
				continue
			}
			if item := d.pathItem(pv, path); item != nil {
				s.paths[path] = item
			}
		}
	}
	s.security = d.security(root["security"], "security")
	if v, ok := root["components"]; ok {
		s.hasComponents = true
		comps := d.object(v, "components")
		defs := d.objectField(comps, "securitySchemes", "components")
		for _, name := range sortedKeys(defs) {
			sv := defs[name]
			where := "components.securitySchemes." + name
			m := d.deref(sv, where)
			if m == nil {
				continue
			}
			if s.schemes == nil {
				s.schemes = map[string]*securityScheme{}
			}
			_, flows := m["flows"]
			s.schemes[name] = &securityScheme{typ: d.str(m, "type", where), description: d.str(m, "description", where),
				name: d.str(m, "name", where), in: d.str(m, "in", where), scheme: d.str(m, "scheme", where),
				openIDConnectURL: d.str(m, "openIdConnectUrl", where), hasFlows: flows}
		}
	}
	_, s.hasWebhooks = root["webhooks"]
	return s, d.found
}

func (d *decoder) pathItem(v any, path string) *pathItem {
	m := d.deref(v, "path "+path)
	if m == nil {
		return nil
	}
	item := &pathItem{ops: map[string]*operation{}}
	item.params = d.params(m["parameters"], path)
	for _, method := range specMethods {
		ov, ok := m[method]
		if !ok {
			continue
		}
		where := strings.ToUpper(method) + " " + path
		if om := d.object(ov, where); om != nil {
			item.ops[strings.ToUpper(method)] = d.operation(om, where)
		}
	}
	return item
}

func (d *decoder) operation(m map[string]any, where string) *operation {
	op := &operation{id: d.str(m, "operationId", where), summary: d.str(m, "summary", where),
		description: d.str(m, "description", where), tags: d.strings(m["tags"], where+" tags"),
		deprecated: d.boolean(m, "deprecated", where)}
	op.params = d.params(m["parameters"], where)
	if v, ok := m["requestBody"]; ok {
		if rb := d.deref(v, where+" requestBody"); rb != nil {
			op.body = &requestBody{description: d.str(rb, "description", where+" requestBody"),
				required: d.boolean(rb, "required", where+" requestBody"), content: d.content(rb, where+" requestBody")}
		}
	}
	if v, ok := m["responses"]; ok {
		op.responses = map[string]*response{}
		rs := d.object(v, where+" responses")
		for _, code := range sortedKeys(rs) {
			rv := rs[code]
			if strings.HasPrefix(code, "x-") {
				continue
			}
			rw := where + " response " + code
			rm := d.deref(rv, rw)
			if rm == nil {
				continue
			}
			r := &response{content: d.content(rm, rw)}
			if _, has := rm["description"]; has {
				desc := d.str(rm, "description", rw)
				r.description = &desc
			}
			op.responses[code] = r
		}
	}
	if v, ok := m["security"]; ok {
		sec := d.security(v, where+" security")
		if sec == nil {
			sec = []securityRequirement{}
		}
		op.security = &sec
	}
	return op
}

func (d *decoder) params(v any, where string) []*parameter {
	var out []*parameter
	for i, pv := range d.list(v, where+" parameters") {
		pw := fmt.Sprintf("%s parameters[%d]", where, i)
		m := d.deref(pv, pw)
		if m == nil {
			continue
		}
		p := &parameter{name: d.str(m, "name", pw), in: d.str(m, "in", pw), description: d.str(m, "description", pw),
			style: d.str(m, "style", pw), required: d.boolean(m, "required", pw), deprecated: d.boolean(m, "deprecated", pw),
			schema: m["schema"], content: d.content(m, pw)}
		if ev, ok := m["explode"]; ok {
			if b, ok := ev.(bool); ok {
				p.explode = &b
			} else {
				d.warn("%s: explode should be true or false, not %s", pw, kindOf(ev))
			}
		}
		out = append(out, p)
	}
	return out
}

// content reads an object's content map (media types and their schemas).
func (d *decoder) content(m map[string]any, where string) map[string]*mediaType {
	cm := d.objectField(m, "content", where)
	if cm == nil {
		return nil
	}
	out := make(map[string]*mediaType, len(cm))
	for _, mt := range sortedKeys(cm) {
		v := cm[mt]
		mm := d.object(v, where+" content "+mt)
		if mm == nil {
			continue
		}
		out[mt] = &mediaType{schema: mm["schema"]}
	}
	return out
}

// security reads a list of security requirements; nil when absent.
func (d *decoder) security(v any, where string) []securityRequirement {
	if v == nil {
		return nil
	}
	list := d.list(v, where)
	out := make([]securityRequirement, 0, len(list))
	for i, rv := range list {
		m := d.object(rv, fmt.Sprintf("%s[%d]", where, i))
		req := securityRequirement{}
		for _, name := range sortedKeys(m) {
			scopes := m[name]
			req[name] = d.strings(scopes, fmt.Sprintf("%s[%d].%s", where, i, name))
		}
		out = append(out, req)
	}
	return out
}

// deref resolves a reference (checked when the document was read) and
// returns the object reached.
func (d *decoder) deref(v any, where string) map[string]any {
	target, _, err := d.res.follow(v)
	if err != nil {
		d.warn("%s: %v", where, err)
		return nil
	}
	return d.object(target, where)
}

// object is v as an object; nil, with a warning, when it is not one.
func (d *decoder) object(v any, where string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		d.warn("%s should be an object, not %s", where, kindOf(v))
	}
	return m
}

// objectField is the object under m[key]; nil when absent or mistyped.
func (d *decoder) objectField(m map[string]any, key, where string) map[string]any {
	v, ok := m[key]
	if !ok {
		return nil
	}
	return d.object(v, where+"."+key)
}

// list is v as a list; nil, with a warning, when it is not one.
func (d *decoder) list(v any, where string) []any {
	l, ok := v.([]any)
	if !ok && v != nil {
		d.warn("%s should be a list, not %s", where, kindOf(v))
	}
	return l
}

// str is m[key] as a string. A number is taken as its text (a YAML
// version: 1.0 written without quotes), with a warning.
func (d *decoder) str(m map[string]any, key, where string) string {
	switch v := m[key].(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		d.warn("%s: %s should be a string, not the number %s (quote it)", where, key, formatNumber(v))
		return formatNumber(v)
	default:
		d.warn("%s: %s should be a string, not %s", where, key, kindOf(v))
		return ""
	}
}

func (d *decoder) boolean(m map[string]any, key, where string) bool {
	switch v := m[key].(type) {
	case nil:
		return false
	case bool:
		return v
	default:
		d.warn("%s: %s should be true or false, not %s", where, key, kindOf(v))
		return false
	}
}

// strings is a list of strings; other items are left out with a warning.
func (d *decoder) strings(v any, where string) []string {
	var out []string
	for _, e := range d.list(v, where) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		} else {
			d.warn("%s should list strings, not %s", where, kindOf(e))
		}
	}
	return out
}

// kindOf names the JSON type of a value for messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// formatNumber writes a number as JSON would.
func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

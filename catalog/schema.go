package catalog

import (
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
)

// direction tells request schemas from response schemas: a readOnly
// property is required only in responses, a writeOnly one only in
// requests.
type direction int

const (
	toServer direction = iota
	fromServer
)

// converter turns OpenAPI schemas (decoded data, $refs resolved as they
// are met) into JSON Schema 2020-12 maps, the dialect action input
// schemas are compiled with.
type converter struct {
	dir direction
	doc *document
	// open holds the schemas being converted, to cut recursion.
	open map[uintptr]bool
	// nodes counts the schemas converted; cut is set once there were more
	// than maxSchemaNodes.
	nodes int
	cut   bool
}

// maxSchemaNodes bounds the schemas one conversion inlines. References are
// inlined, so schemas that each refer to the next one twice expand to 2^n
// nodes: a document of a few hundred bytes would take the server's memory.
// The largest real-world operation schemas inline to a few thousand.
const maxSchemaNodes = 20000

func newConverter(doc *document, dir direction) *converter {
	return &converter{dir: dir, doc: doc, open: map[uintptr]bool{}}
}

// identity tells one decoded object from another: a schema reached twice
// through references is the same object.
func identity(m map[string]any) uintptr { return reflect.ValueOf(m).Pointer() }

// refSiblingAnnotations are the keywords next to an OpenAPI 3.1 $ref
// that replace the referenced schema's; any other keyword next to it
// must hold as well (it joins the schema's allOf).
var refSiblingAnnotations = map[string]bool{"$comment": true, "allowEmptyValue": true, "default": true,
	"deprecated": true, "description": true, "discriminator": true, "example": true, "examples": true,
	"externalDocs": true, "nullable": true, "readOnly": true, "title": true, "writeOnly": true, "xml": true}

// resolve follows a schema's references. It returns the schema to
// convert — in OpenAPI 3.1, with the keywords written next to the $ref
// applied — and the reference followed ("" for an inline schema).
func (c *converter) resolve(v any) (any, string) {
	target, ref, err := c.doc.res.follow(v)
	if err != nil {
		// Every reference was checked when the document was read.
		return map[string]any{}, ref
	}
	if ref == "" || !c.doc.openAPI31() {
		return target, ref
	}
	src := v.(map[string]any)
	if view, ok := c.doc.views[identity(src)]; ok {
		return view, ref
	}
	tm, ok := target.(map[string]any)
	if !ok {
		return target, ref
	}
	view := tm
	conj := map[string]any{}
	for k, x := range src {
		switch {
		case k == "$ref" || strings.HasPrefix(k, "x-"):
		case refSiblingAnnotations[k]:
			if identity(view) == identity(tm) {
				view = maps.Clone(tm)
			}
			view[k] = x
		default:
			conj[k] = x
		}
	}
	if len(conj) > 0 {
		if identity(view) == identity(tm) {
			view = maps.Clone(tm)
		}
		allOf, _ := tm["allOf"].([]any)
		view["allOf"] = append(slices.Clone(allOf), conj)
	}
	if identity(view) != identity(tm) {
		if c.doc.views == nil {
			c.doc.views = map[uintptr]map[string]any{}
		}
		c.doc.views[identity(src)] = view
	}
	return view, ref
}

// ref converts a schema that may be a reference; nil is the schema that
// accepts anything.
func (c *converter) ref(v any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	s, ref := c.resolve(v)
	return c.schema(s, ref)
}

func (c *converter) refs(v any) []any {
	list, _ := v.([]any)
	out := make([]any, 0, len(list))
	for _, r := range list {
		out = append(out, c.ref(r))
	}
	return out
}

func (c *converter) schemas(v any) map[string]any {
	m, _ := v.(map[string]any)
	out := make(map[string]any, len(m))
	for k, r := range m {
		out[k] = c.ref(r)
	}
	return out
}

// schema converts one schema. ref is where it came from, for the note
// that replaces a recursive occurrence.
func (c *converter) schema(v any, ref string) map[string]any {
	s, ok := v.(map[string]any)
	if !ok {
		if b, isBool := v.(bool); isBool && !b { // a 3.1 boolean schema
			return map[string]any{"not": map[string]any{}}
		}
		return map[string]any{}
	}
	if c.nodes++; c.nodes > maxSchemaNodes {
		c.cut = true
		note := "not expanded: the schema is too large to inline"
		if ref != "" {
			note += " (" + ref + ")"
		}
		return map[string]any{"description": note}
	}
	id := identity(s)
	if c.open[id] {
		// A JSON Schema could say this with $defs; inlining keeps every
		// action schema self-contained, and one level is what agents read.
		note := "recursive"
		if ref != "" {
			note += ": " + ref
		}
		return map[string]any{"description": note}
	}
	c.open[id] = true
	defer delete(c.open, id)

	out := map[string]any{}
	c.annotations(s, out)
	c.typeOf(s, out)
	c.numberKeywords(s, out)
	c.stringKeywords(s, out)
	c.arrayKeywords(s, out)
	c.objectKeywords(s, out)
	if l, ok := s["oneOf"].([]any); ok && len(l) > 0 {
		out["oneOf"] = c.refs(l)
	}
	if l, ok := s["anyOf"].([]any); ok && len(l) > 0 {
		out["anyOf"] = c.refs(l)
	}
	if x, ok := s["not"]; ok && x != nil {
		out["not"] = c.ref(x)
	}
	if x, ok := s["if"]; ok && x != nil {
		out["if"] = c.ref(x)
		if t, ok := s["then"]; ok && t != nil {
			out["then"] = c.ref(t)
		}
		if e, ok := s["else"]; ok && e != nil {
			out["else"] = c.ref(e)
		}
	}
	if l, ok := s["allOf"].([]any); ok && len(l) > 0 {
		parts := make([]map[string]any, 0, len(l))
		for _, r := range l {
			parts = append(parts, c.ref(r))
		}
		out = mergeAllOf(out, parts)
	}
	return out
}

func (c *converter) annotations(s, out map[string]any) {
	setString(out, "title", s["title"])
	setString(out, "description", s["description"])
	setString(out, "format", s["format"])
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		out["enum"] = slices.Clone(e)
	}
	if v := s["const"]; v != nil {
		out["const"] = v
	}
	if v := s["default"]; v != nil {
		out["default"] = v
	}
	if e, ok := s["examples"].([]any); ok && len(e) > 0 {
		out["examples"] = slices.Clone(e)
	} else if v := s["example"]; v != nil {
		out["examples"] = []any{v}
	}
	setTrue(out, "deprecated", s["deprecated"])
	setTrue(out, "readOnly", s["readOnly"])
	setTrue(out, "writeOnly", s["writeOnly"])
}

// typeOf writes type; OpenAPI 3.0's nullable becomes a "null" type.
func (c *converter) typeOf(s, out map[string]any) {
	var types []any
	switch t := s["type"].(type) {
	case string:
		types = []any{t}
	case []any:
		for _, x := range t {
			switch name := x.(type) {
			case string:
				types = append(types, name)
			case nil:
				// [string, null] in YAML: null unquoted is null, not "null".
				types = append(types, "null")
			}
		}
	}
	if len(types) == 0 {
		return
	}
	if s["nullable"] == true && !slices.Contains(types, any("null")) {
		types = append(types, "null")
		if e, ok := out["enum"].([]any); ok && !slices.Contains(e, nil) {
			out["enum"] = append(e, nil)
		}
	}
	if len(types) == 1 {
		out["type"] = types[0]
		return
	}
	out["type"] = types
}

func (c *converter) numberKeywords(s, out map[string]any) {
	setNumber(out, "minimum", s["minimum"])
	setNumber(out, "maximum", s["maximum"])
	setNumber(out, "multipleOf", s["multipleOf"])
	// 3.1 writes the bound; 3.0 flags minimum/maximum as exclusive.
	for _, k := range [...]struct{ exclusive, bound string }{{"exclusiveMinimum", "minimum"}, {"exclusiveMaximum", "maximum"}} {
		switch v := s[k.exclusive].(type) {
		case float64:
			out[k.exclusive] = v
		case bool:
			if bound, ok := s[k.bound].(float64); ok && v {
				out[k.exclusive] = bound
				delete(out, k.bound)
			}
		}
	}
}

func (c *converter) stringKeywords(s, out map[string]any) {
	setCount(out, "minLength", s["minLength"], false)
	setCount(out, "maxLength", s["maxLength"], true)
	setString(out, "pattern", s["pattern"])
	setString(out, "contentMediaType", s["contentMediaType"])
	setString(out, "contentEncoding", s["contentEncoding"])
}

func (c *converter) arrayKeywords(s, out map[string]any) {
	if x, ok := s["items"]; ok && x != nil {
		out["items"] = c.ref(x)
	}
	if l, ok := s["prefixItems"].([]any); ok && len(l) > 0 {
		out["prefixItems"] = c.refs(l)
	}
	if x, ok := s["contains"]; ok && x != nil {
		out["contains"] = c.ref(x)
	}
	setCount(out, "minItems", s["minItems"], false)
	setCount(out, "maxItems", s["maxItems"], true)
	setCount(out, "minContains", s["minContains"], true)
	setCount(out, "maxContains", s["maxContains"], true)
	setTrue(out, "uniqueItems", s["uniqueItems"])
	if b := c.boolSchema(s["unevaluatedItems"]); b != nil {
		out["unevaluatedItems"] = b
	}
}

func (c *converter) objectKeywords(s, out map[string]any) {
	props, _ := s["properties"].(map[string]any)
	if len(props) > 0 {
		out["properties"] = c.schemas(props)
	}
	var required []any
	list, _ := s["required"].([]any)
	for _, r := range list {
		name, ok := r.(string)
		if !ok {
			continue
		}
		if p, ok := props[name]; ok && p != nil {
			// A server-assigned id is required in what the server sends,
			// never of the caller.
			if pm, ok := c.peek(p); ok && ((c.dir == toServer && pm["readOnly"] == true) || (c.dir == fromServer && pm["writeOnly"] == true)) {
				continue
			}
		}
		required = append(required, name)
	}
	if len(required) > 0 {
		out["required"] = required
	}
	if b := c.boolSchema(s["additionalProperties"]); b != nil {
		out["additionalProperties"] = b
	}
	if b := c.boolSchema(s["unevaluatedProperties"]); b != nil {
		out["unevaluatedProperties"] = b
	}
	if m, ok := s["patternProperties"].(map[string]any); ok && len(m) > 0 {
		out["patternProperties"] = c.schemas(m)
	}
	if x, ok := s["propertyNames"]; ok && x != nil {
		out["propertyNames"] = c.ref(x)
	}
	if m, ok := s["dependentSchemas"].(map[string]any); ok && len(m) > 0 {
		out["dependentSchemas"] = c.schemas(m)
	}
	if m, ok := s["dependentRequired"].(map[string]any); ok && len(m) > 0 {
		dr := make(map[string]any, len(m))
		for k, v := range m {
			names, _ := v.([]any)
			list := []any{}
			for _, x := range names {
				if n, ok := x.(string); ok {
					list = append(list, n)
				}
			}
			dr[k] = list
		}
		out["dependentRequired"] = dr
	}
	setCount(out, "minProperties", s["minProperties"], false)
	setCount(out, "maxProperties", s["maxProperties"], true)
}

// peek is the object a schema resolves to, without converting it.
func (c *converter) peek(v any) (map[string]any, bool) {
	s, _ := c.resolve(v)
	m, ok := s.(map[string]any)
	return m, ok
}

// boolSchema converts additionalProperties-like keywords: a boolean or a
// schema; nil when absent.
func (c *converter) boolSchema(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		return x
	}
	return c.ref(v)
}

// mergeAllOf folds the parts of an allOf into one schema when they do
// not contradict each other — what allOf is used for in OpenAPI documents
// (a base object extended with more properties). Properties and required
// lists are united; an annotation keeps its first value; any other
// keyword must agree. When parts disagree the allOf is kept as it is,
// which validates the same but reads worse.
func mergeAllOf(base map[string]any, parts []map[string]any) map[string]any {
	merged := maps.Clone(base)
	for _, p := range parts {
		next, ok := mergeSchemas(merged, p)
		if !ok {
			kept := maps.Clone(base)
			list := make([]any, len(parts))
			for i, p := range parts {
				list[i] = p
			}
			kept["allOf"] = list
			return kept
		}
		merged = next
	}
	return merged
}

// annotationKeys keep the first value met when schemas are merged.
var annotationKeys = map[string]bool{"title": true, "description": true, "examples": true, "deprecated": true, "default": true}

// mergeSchemas returns dst and src as one schema, or false when they
// contradict. Neither argument is changed.
func mergeSchemas(dst, src map[string]any) (map[string]any, bool) {
	out := maps.Clone(dst)
	for k, v := range src {
		cur, has := out[k]
		switch {
		case !has:
			out[k] = v
		case k == "properties":
			props := maps.Clone(cur.(map[string]any))
			for name, ps := range v.(map[string]any) {
				if old, ok := props[name]; ok && !reflect.DeepEqual(old, ps) {
					props[name] = map[string]any{"allOf": []any{old, ps}}
					continue
				}
				props[name] = ps
			}
			out[k] = props
		case k == "required":
			req := slices.Clone(cur.([]any))
			for _, r := range v.([]any) {
				if !slices.Contains(req, r) {
					req = append(req, r)
				}
			}
			out[k] = req
		case annotationKeys[k]:
			// The first one stays.
		case !reflect.DeepEqual(cur, v):
			return nil, false
		}
	}
	return out, true
}

func setString(m map[string]any, k string, v any) {
	if s, ok := v.(string); ok && s != "" {
		m[k] = s
	}
}

func setTrue(m map[string]any, k string, v any) {
	if v == true {
		m[k] = true
	}
}

func setNumber(m map[string]any, k string, v any) {
	if f, ok := v.(float64); ok {
		m[k] = f
	}
}

// setCount writes a count keyword (minLength, maxItems…): a whole number
// of at least 0 — at least 1 unless zero means something (a maximum).
func setCount(m map[string]any, k string, v any, zeroMeans bool) {
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || (f == 0 && !zeroMeans) {
		return
	}
	m[k] = f
}

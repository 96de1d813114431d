package catalog

import (
	"maps"
	"reflect"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// direction tells request schemas from response schemas: a readOnly
// property is required only in responses, a writeOnly one only in
// requests.
type direction int

const (
	toServer direction = iota
	fromServer
)

// converter turns OpenAPI schemas (already resolved by the loader: every
// $ref has its Value) into JSON Schema 2020-12 maps, the dialect action
// input schemas are compiled with.
type converter struct {
	dir direction
	// open holds the schemas being converted, to cut recursion.
	open map[*openapi3.Schema]bool
}

func newConverter(dir direction) *converter {
	return &converter{dir: dir, open: map[*openapi3.Schema]bool{}}
}

// ref converts a schema reference.
func (c *converter) ref(r *openapi3.SchemaRef) map[string]any {
	if r == nil || r.Value == nil {
		return map[string]any{}
	}
	return c.schema(r.Value, r.Ref)
}

func (c *converter) refs(rs openapi3.SchemaRefs) []any {
	out := make([]any, 0, len(rs))
	for _, r := range rs {
		out = append(out, c.ref(r))
	}
	return out
}

func (c *converter) schemas(m openapi3.Schemas) map[string]any {
	out := make(map[string]any, len(m))
	for k, r := range m {
		out[k] = c.ref(r)
	}
	return out
}

// schema converts one schema. ref is where it came from, for the note
// that replaces a recursive occurrence.
func (c *converter) schema(s *openapi3.Schema, ref string) map[string]any {
	if s.Always != nil { // a 3.1 boolean schema
		if *s.Always {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	}
	if c.open[s] {
		// A JSON Schema could say this with $defs; inlining keeps every
		// action schema self-contained, and one level is what agents read.
		note := "recursive"
		if ref != "" {
			note += ": " + ref
		}
		return map[string]any{"description": note}
	}
	c.open[s] = true
	defer delete(c.open, s)

	out := map[string]any{}
	c.annotations(s, out)
	c.typeOf(s, out)
	c.numberKeywords(s, out)
	c.stringKeywords(s, out)
	c.arrayKeywords(s, out)
	c.objectKeywords(s, out)
	if len(s.OneOf) > 0 {
		out["oneOf"] = c.refs(s.OneOf)
	}
	if len(s.AnyOf) > 0 {
		out["anyOf"] = c.refs(s.AnyOf)
	}
	if s.Not != nil {
		out["not"] = c.ref(s.Not)
	}
	if s.If != nil {
		out["if"] = c.ref(s.If)
		if s.Then != nil {
			out["then"] = c.ref(s.Then)
		}
		if s.Else != nil {
			out["else"] = c.ref(s.Else)
		}
	}
	if len(s.AllOf) > 0 {
		parts := make([]map[string]any, 0, len(s.AllOf))
		for _, r := range s.AllOf {
			parts = append(parts, c.ref(r))
		}
		out = mergeAllOf(out, parts)
	}
	return out
}

func (c *converter) annotations(s *openapi3.Schema, out map[string]any) {
	setString(out, "title", s.Title)
	setString(out, "description", s.Description)
	setString(out, "format", s.Format)
	if len(s.Enum) > 0 {
		out["enum"] = slices.Clone(s.Enum)
	}
	if s.Const != nil {
		out["const"] = s.Const
	}
	if s.Default != nil {
		out["default"] = s.Default
	}
	switch {
	case len(s.Examples) > 0:
		out["examples"] = slices.Clone(s.Examples)
	case s.Example != nil:
		out["examples"] = []any{s.Example}
	}
	setTrue(out, "deprecated", s.Deprecated)
	setTrue(out, "readOnly", s.ReadOnly)
	setTrue(out, "writeOnly", s.WriteOnly)
}

// typeOf writes type; OpenAPI 3.0's nullable becomes a "null" type.
func (c *converter) typeOf(s *openapi3.Schema, out map[string]any) {
	if s.Type == nil || len(*s.Type) == 0 {
		return
	}
	types := slices.Clone([]string(*s.Type))
	if s.Nullable && !slices.Contains(types, "null") {
		types = append(types, "null")
		if e, ok := out["enum"].([]any); ok && !slices.Contains(e, nil) {
			out["enum"] = append(e, nil)
		}
	}
	if len(types) == 1 {
		out["type"] = types[0]
		return
	}
	list := make([]any, len(types))
	for i, t := range types {
		list[i] = t
	}
	out["type"] = list
}

func (c *converter) numberKeywords(s *openapi3.Schema, out map[string]any) {
	if s.Min != nil {
		out["minimum"] = *s.Min
	}
	if s.Max != nil {
		out["maximum"] = *s.Max
	}
	if s.MultipleOf != nil {
		out["multipleOf"] = *s.MultipleOf
	}
	// 3.1 writes the bound; 3.0 flags minimum/maximum as exclusive.
	if v := s.ExclusiveMin.Value; v != nil {
		out["exclusiveMinimum"] = *v
	} else if s.ExclusiveMin.IsTrue() && s.Min != nil {
		out["exclusiveMinimum"] = *s.Min
		delete(out, "minimum")
	}
	if v := s.ExclusiveMax.Value; v != nil {
		out["exclusiveMaximum"] = *v
	} else if s.ExclusiveMax.IsTrue() && s.Max != nil {
		out["exclusiveMaximum"] = *s.Max
		delete(out, "maximum")
	}
}

func (c *converter) stringKeywords(s *openapi3.Schema, out map[string]any) {
	if s.MinLength > 0 {
		out["minLength"] = s.MinLength
	}
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	setString(out, "pattern", s.Pattern)
	setString(out, "contentMediaType", s.ContentMediaType)
	setString(out, "contentEncoding", s.ContentEncoding)
}

func (c *converter) arrayKeywords(s *openapi3.Schema, out map[string]any) {
	if s.Items != nil {
		out["items"] = c.ref(s.Items)
	}
	if len(s.PrefixItems) > 0 {
		out["prefixItems"] = c.refs(s.PrefixItems)
	}
	if s.Contains != nil {
		out["contains"] = c.ref(s.Contains)
	}
	if s.MinItems > 0 {
		out["minItems"] = s.MinItems
	}
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	if s.MinContains != nil {
		out["minContains"] = *s.MinContains
	}
	if s.MaxContains != nil {
		out["maxContains"] = *s.MaxContains
	}
	setTrue(out, "uniqueItems", s.UniqueItems)
	if b := c.boolSchema(s.UnevaluatedItems); b != nil {
		out["unevaluatedItems"] = b
	}
}

func (c *converter) objectKeywords(s *openapi3.Schema, out map[string]any) {
	if len(s.Properties) > 0 {
		out["properties"] = c.schemas(s.Properties)
	}
	var required []any
	for _, name := range s.Required {
		if p := s.Properties[name]; p != nil && p.Value != nil {
			// A server-assigned id is required in what the server sends,
			// never of the caller.
			if (c.dir == toServer && p.Value.ReadOnly) || (c.dir == fromServer && p.Value.WriteOnly) {
				continue
			}
		}
		required = append(required, name)
	}
	if len(required) > 0 {
		out["required"] = required
	}
	if b := c.boolSchema(s.AdditionalProperties); b != nil {
		out["additionalProperties"] = b
	}
	if b := c.boolSchema(s.UnevaluatedProperties); b != nil {
		out["unevaluatedProperties"] = b
	}
	if len(s.PatternProperties) > 0 {
		out["patternProperties"] = c.schemas(s.PatternProperties)
	}
	if s.PropertyNames != nil {
		out["propertyNames"] = c.ref(s.PropertyNames)
	}
	if len(s.DependentSchemas) > 0 {
		out["dependentSchemas"] = c.schemas(s.DependentSchemas)
	}
	if len(s.DependentRequired) > 0 {
		dr := make(map[string]any, len(s.DependentRequired))
		for k, v := range s.DependentRequired {
			list := make([]any, len(v))
			for i, x := range v {
				list[i] = x
			}
			dr[k] = list
		}
		out["dependentRequired"] = dr
	}
	if s.MinProps > 0 {
		out["minProperties"] = s.MinProps
	}
	if s.MaxProps != nil {
		out["maxProperties"] = *s.MaxProps
	}
}

// boolSchema converts additionalProperties-like keywords: a boolean or a
// schema; nil when absent.
func (c *converter) boolSchema(b openapi3.BoolSchema) any {
	switch {
	case b.Has != nil:
		return *b.Has
	case b.Schema != nil:
		return c.ref(b.Schema)
	}
	return nil
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

func setString(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}

func setTrue(m map[string]any, k string, v bool) {
	if v {
		m[k] = true
	}
}

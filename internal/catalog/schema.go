package catalog

import (
	"maps"
	"math"
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

// converter turns OpenAPI schemas, as the library loaded them (references
// resolved, OpenAPI 3.1's keywords next to a $ref applied), into JSON
// Schema 2020-12 maps, the dialect action input schemas are compiled with.
type converter struct {
	dir direction
	// open holds the schemas being converted, to cut recursion, with
	// their depth.
	open map[*openapi3.Schema]int
	// nodes counts the schemas converted; cut is set once there were more
	// than maxSchemaNodes.
	nodes int
	cut   bool
	// memo holds the conversions that did not depend on where they were
	// made, shared by the converters of one import and direction.
	memo map[*openapi3.Schema]*memoized
	// hit is the smallest depth of an open schema a recursion cut met in
	// the schema being converted; trail lists the schemas converted, in
	// order, those of a memoized conversion as its list.
	hit   int
	trail []*openapi3.Schema
}

// memoized is a conversion that did not depend on where it was made: it
// met no schema open above it and was not cut. It may be used again where
// none of its schemas is open (else the recursion would be cut inside).
type memoized struct {
	out     map[string]any
	nodes   int
	schemas []*openapi3.Schema // distinct
}

// minMemoNodes: smaller conversions are made again rather than remembered.
const minMemoNodes = 8

// maxSchemaNodes bounds the schemas one conversion inlines. References are
// inlined, so schemas that each refer to the next one twice expand to 2^n
// nodes: a document of a few hundred bytes would take the server's memory.
// The largest real-world operation schemas inline to a few thousand.
const maxSchemaNodes = 20000

func newConverter(dir direction, memo map[*openapi3.Schema]*memoized) *converter {
	return &converter{dir: dir, open: map[*openapi3.Schema]int{}, memo: memo, hit: math.MaxInt}
}

// remembered is the memoized conversion of s if it may be used here.
func (c *converter) remembered(s *openapi3.Schema) *memoized {
	m := c.memo[s]
	if m == nil || c.nodes+m.nodes > maxSchemaNodes {
		return nil
	}
	for _, x := range m.schemas {
		if c.open[x] > 0 {
			return nil
		}
	}
	return m
}

// remember keeps the conversion of s, begun at trail position start and
// at depth depth, when it did not depend on where it was made.
func (c *converter) remember(s *openapi3.Schema, out map[string]any, nodes, start, depth, hit int) {
	if c.memo == nil || nodes < minMemoNodes || hit < depth || c.nodes > maxSchemaNodes {
		return
	}
	seen := map[*openapi3.Schema]bool{}
	var schemas []*openapi3.Schema
	for _, x := range c.trail[start:] {
		if !seen[x] {
			seen[x] = true
			schemas = append(schemas, x)
		}
	}
	c.memo[s] = &memoized{out: out, nodes: nodes, schemas: schemas}
}

// ref converts a schema that may be a reference; nil is the schema that
// accepts anything.
func (c *converter) ref(r *openapi3.SchemaRef) map[string]any {
	if r == nil || r.Value == nil {
		return map[string]any{}
	}
	return c.schema(r.Value, r.Ref)
}

func (c *converter) refs(list openapi3.SchemaRefs) []any {
	out := make([]any, 0, len(list))
	for _, r := range list {
		out = append(out, c.ref(r))
	}
	return out
}

func (c *converter) schemas(m openapi3.Schemas) map[string]any {
	out := make(map[string]any, len(m))
	// In name order: where a large schema is cut depends on it.
	for _, k := range sortedKeys(m) {
		out[k] = c.ref(m[k])
	}
	return out
}

// schema converts one schema. ref is where it came from, for the note
// that replaces a recursive occurrence.
func (c *converter) schema(s *openapi3.Schema, ref string) map[string]any {
	if s.Always != nil { // a 3.1 boolean schema
		if !*s.Always {
			return map[string]any{"not": map[string]any{}}
		}
		return map[string]any{}
	}
	if m := c.remembered(s); m != nil {
		c.nodes += m.nodes
		c.trail = append(c.trail, m.schemas...)
		return m.out
	}
	if c.nodes++; c.nodes > maxSchemaNodes {
		c.cut = true
		note := "not expanded: the schema is too large to inline"
		if ref != "" {
			note += " (" + ref + ")"
		}
		return map[string]any{"description": note}
	}
	if d := c.open[s]; d > 0 {
		// A JSON Schema could say this with $defs; inlining keeps every
		// action schema self-contained, and one level is what agents read.
		c.hit = min(c.hit, d)
		note := "recursive"
		if ref != "" {
			note += ": " + ref
		}
		return map[string]any{"description": note}
	}
	depth := len(c.open) + 1
	c.open[s] = depth
	c.trail = append(c.trail, s)
	start, nodes, outerHit := len(c.trail)-1, c.nodes, c.hit
	c.hit = math.MaxInt
	out := c.convert(s)
	delete(c.open, s)
	c.remember(s, out, c.nodes-nodes+1, start, depth, c.hit)
	c.hit = min(c.hit, outerHit)
	return out
}

// convert converts one schema's keywords.
func (c *converter) convert(s *openapi3.Schema) map[string]any {
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
		out["enum"] = plain(s.Enum)
	}
	if s.Const != nil {
		out["const"] = plain(s.Const)
	}
	if s.Default != nil {
		out["default"] = plain(s.Default)
	}
	if len(s.Examples) > 0 {
		out["examples"] = plain(s.Examples)
	} else if s.Example != nil {
		out["examples"] = []any{plain(s.Example)}
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
	types := make([]any, 0, len(*s.Type)+1)
	for _, t := range *s.Type {
		if t == "" {
			t = "null" // [string, null] in YAML: null unquoted is null, not "null"
		}
		types = append(types, t)
	}
	if s.Nullable && !slices.Contains(types, any("null")) {
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

func (c *converter) numberKeywords(s *openapi3.Schema, out map[string]any) {
	setNumber(out, "minimum", s.Min)
	setNumber(out, "maximum", s.Max)
	setNumber(out, "multipleOf", s.MultipleOf)
	// 3.1 writes the bound; 3.0 flags minimum/maximum as exclusive.
	for _, k := range [...]struct {
		exclusive, bound string
		b                openapi3.ExclusiveBound
		v                *float64
	}{{"exclusiveMinimum", "minimum", s.ExclusiveMin, s.Min}, {"exclusiveMaximum", "maximum", s.ExclusiveMax, s.Max}} {
		switch {
		case k.b.Value != nil:
			out[k.exclusive] = *k.b.Value
		case k.b.Bool != nil && *k.b.Bool && k.v != nil:
			out[k.exclusive] = *k.v
			delete(out, k.bound)
		}
	}
}

func (c *converter) stringKeywords(s *openapi3.Schema, out map[string]any) {
	setCount(out, "minLength", &s.MinLength, false)
	setCount(out, "maxLength", s.MaxLength, true)
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
	setCount(out, "minItems", &s.MinItems, false)
	setCount(out, "maxItems", s.MaxItems, true)
	setCount(out, "minContains", s.MinContains, true)
	setCount(out, "maxContains", s.MaxContains, true)
	setTrue(out, "uniqueItems", s.UniqueItems)
	if b := c.boolSchema(s.UnevaluatedItems.Has, s.UnevaluatedItems.Schema); b != nil {
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
	if b := c.boolSchema(s.AdditionalProperties.Has, s.AdditionalProperties.Schema); b != nil {
		out["additionalProperties"] = b
	}
	if b := c.boolSchema(s.UnevaluatedProperties.Has, s.UnevaluatedProperties.Schema); b != nil {
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
		for k, names := range s.DependentRequired {
			list := make([]any, 0, len(names))
			for _, n := range names {
				list = append(list, n)
			}
			dr[k] = list
		}
		out["dependentRequired"] = dr
	}
	setCount(out, "minProperties", &s.MinProps, false)
	setCount(out, "maxProperties", s.MaxProps, true)
}

// boolSchema converts additionalProperties-like keywords: a boolean or a
// schema; nil when absent.
func (c *converter) boolSchema(has *bool, schema *openapi3.SchemaRef) any {
	switch {
	case schema != nil:
		return c.ref(schema)
	case has != nil:
		return *has
	}
	return nil
}

// plain is a value of the document (an enum, a default, an example) as
// JSON data: the library keeps what the decoder made of it.
func plain(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[text(k, ",")] = plain(e)
		}
		return out
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	}
	return v
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

func setNumber(m map[string]any, k string, v *float64) {
	if v != nil && !math.IsInf(*v, 0) && !math.IsNaN(*v) {
		m[k] = *v
	}
}

// setCount writes a count keyword (minLength, maxItems…), a whole number
// — unless zero, which means something only for a maximum.
func setCount(m map[string]any, k string, v *uint64, zeroMeans bool) {
	if v == nil || (*v == 0 && !zeroMeans) {
		return
	}
	m[k] = float64(*v)
}

package mcpserver

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// schemaKeys name the keywords whose value is one subschema, a list of them
// or a map of them.
var (
	subschemaKeys     = []string{"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"}
	subschemaListKeys = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
	subschemaMapKeys  = []string{"properties", "patternProperties", "$defs", "definitions"}
)

// objectSchema renders a schema as JSON with every subschema an object.
// jsonschema-go writes the empty schema as the boolean `true`, which JSON
// Schema allows but some MCP clients (the TypeScript SDK) reject in tool
// schemas; `{}` means the same and every client accepts it.
func objectSchema(s *jsonschema.Schema) (map[string]any, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, err
	}
	m, ok := booleanToObject(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema is %s, not an object", data)
	}
	return m, nil
}

// booleanToObject rewrites a schema value (true → {}, false → {"not": {}})
// and, recursively, its subschemas.
func booleanToObject(v any) any {
	switch s := v.(type) {
	case bool:
		if s {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	case map[string]any:
		rewriteSubschemas(s, "", booleanToObject)
	}
	return v
}

// rewriteSubschemas replaces each immediate subschema of s (every keyword
// that holds one, a list or a map of them) but the keyword skip with f's
// result.
func rewriteSubschemas(s map[string]any, skip string, f func(any) any) {
	for _, k := range subschemaKeys {
		if k == skip {
			continue
		}
		if sub, ok := s[k]; ok {
			s[k] = f(sub)
		}
	}
	for _, k := range subschemaListKeys {
		if list, ok := s[k].([]any); ok {
			for i := range list {
				list[i] = f(list[i])
			}
		}
	}
	for _, k := range subschemaMapKeys {
		if m, ok := s[k].(map[string]any); ok {
			for name, sub := range m {
				m[name] = f(sub)
			}
		}
	}
}

// anyJSON is the schema of any JSON value spelled so that it constrains
// (see portable): one branch per type.
func anyJSON() []any {
	var out []any
	for _, t := range []string{"string", "number", "boolean", "object", "array", "null"} {
		out = append(out, map[string]any{"type": t})
	}
	return out
}

// portable rewrites an object-form schema (objectSchema's) in place into
// the form every client takes, the rules schemaFindings checks:
//   - `type` is one name: a list drops "null" (an argument given as null
//     is still accepted: arguments are checked against the Go types'
//     schema, not this one) and becomes anyOf when more than one is left;
//   - additionalProperties is a boolean: {"not": {}} becomes false and {}
//     (any value) goes, as absent means the same;
//   - a schema that constrains nothing (any JSON value) becomes an anyOf
//     of every type, keeping its description.
//
// Under `not`, {} stays: `not: {}` is the always-false schema.
func portable(v any) any {
	s, ok := v.(map[string]any)
	if !ok {
		return v
	}
	if types, ok := s["type"].([]any); ok {
		types = slices.DeleteFunc(types, func(t any) bool { return t == "null" })
		switch len(types) {
		case 0:
			s["type"] = "null"
		case 1:
			s["type"] = types[0]
		default:
			delete(s, "type")
			var branches []any
			for _, t := range types {
				branches = append(branches, map[string]any{"type": t})
			}
			s["anyOf"] = branches
		}
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		switch {
		case len(ap) == 0:
			delete(s, "additionalProperties")
		case len(ap) == 1 && isEmptyObject(ap["not"]):
			s["additionalProperties"] = false
		}
	}
	rewriteSubschemas(s, "not", portableSub)
	return s
}

// portableSub is portable for a subschema, which must also constrain.
func portableSub(v any) any {
	s, ok := portable(v).(map[string]any)
	if !ok || constrains(s) {
		return v
	}
	s["anyOf"] = anyJSON()
	return s
}

func isEmptyObject(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// constrainingKeys are the keywords that make a schema check something
// (JSON Schema 2020-12's assertions, applicators and references).
var constrainingKeys = []string{
	"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
	"maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding", "contentSchema",
	"maxItems", "minItems", "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties",
	"required", "dependentRequired", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems", "contains",
	"additionalItems", "unevaluatedItems", "properties", "patternProperties", "additionalProperties",
	"unevaluatedProperties", "propertyNames", "dependentSchemas", "dependencies", "$ref", "$dynamicRef", "$recursiveRef",
}

// constrains reports whether a schema checks anything (an `if` counts
// only with a `then` or `else`).
func constrains(s map[string]any) bool {
	for _, k := range constrainingKeys {
		if _, ok := s[k]; ok {
			return true
		}
	}
	_, then := s["then"]
	_, els := s["else"]
	_, cond := s["if"]
	return cond && (then || els)
}

// inputSchema is a tool's input schema as listed: the Go type's, portable.
func inputSchema(in *jsonschema.Schema) (map[string]any, error) {
	m, err := objectSchema(in)
	if err != nil {
		return nil, err
	}
	return portable(m).(map[string]any), nil
}

// errorRequired are the fields every ToolError has, which an output
// schema's second branch requires.
var errorRequired = []any{"error_code", "message"}

// outputShape is a tool's output schema: the result's top-level fields
// with their types (nested shapes are documented, not listed: they cost
// every agent's context on every session and no client checks them
// usefully), and which are required — of a result, or of the ToolError
// an isError result carries (clients check structured content against
// the output schema, error results included).
func outputShape(result *jsonschema.Schema) (map[string]any, error) {
	full, err := objectSchema(result)
	if err != nil {
		return nil, err
	}
	props := map[string]any{}
	required, _ := full["required"].([]any)
	if ps, ok := full["properties"].(map[string]any); ok {
		for name, p := range ps {
			p, _ := p.(map[string]any)
			if types, ok := p["type"].([]any); ok {
				var branches []any
				for _, t := range types {
					// A field that may be left out is left out
					// rather than null; a required one may be null.
					if t != "null" || slices.Contains(required, any(name)) {
						branches = append(branches, map[string]any{"type": t})
					}
				}
				delete(p, "type")
				if len(branches) == 1 {
					p["type"] = branches[0].(map[string]any)["type"]
				} else {
					p["anyOf"] = branches
				}
			}
			shallow := map[string]any{}
			for _, k := range []string{"type", "anyOf", "enum", "format", "description"} {
				if v, ok := p[k]; ok {
					shallow[k] = v
				}
			}
			if !constrains(shallow) {
				shallow["anyOf"] = anyJSON()
			}
			props[name] = shallow
		}
	}
	out := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		out["anyOf"] = []any{map[string]any{"required": required}, map[string]any{"required": errorRequired}}
	}
	return out, nil
}

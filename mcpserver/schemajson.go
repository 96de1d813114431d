package mcpserver

import (
	"encoding/json"
	"fmt"

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
		for _, k := range subschemaKeys {
			if sub, ok := s[k]; ok {
				s[k] = booleanToObject(sub)
			}
		}
		for _, k := range subschemaListKeys {
			if list, ok := s[k].([]any); ok {
				for i := range list {
					list[i] = booleanToObject(list[i])
				}
			}
		}
		for _, k := range subschemaMapKeys {
			if m, ok := s[k].(map[string]any); ok {
				for name, sub := range m {
					m[name] = booleanToObject(sub)
				}
			}
		}
	}
	return v
}

// resultOrError is a tool's output schema: its result or, when isError is
// set, the ToolError. Clients check structured content against the output
// schema even for error results, so the schema must admit both.
func resultOrError(result *jsonschema.Schema) (map[string]any, error) {
	ok, err := objectSchema(result)
	if err != nil {
		return nil, err
	}
	errSchema, err := jsonschema.For[ToolError](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		return nil, err
	}
	failed, err := objectSchema(errSchema)
	if err != nil {
		return nil, err
	}
	failed["description"] = "the result when isError is true"
	return map[string]any{"type": "object", "anyOf": []any{ok, failed}}, nil
}

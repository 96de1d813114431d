package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

// The rules the MCP Inspector (npm @modelcontextprotocol/inspector 2.x,
// core/json/schemaLint.ts: its CLI prints them for tools/list with
// --strict) applies to every tool's inputSchema and outputSchema, each at
// the root and at every subschema:
//
//   - boolean-schema: no bare true or false where a schema goes, except as
//     the value of additionalProperties, unevaluatedProperties,
//     additionalItems and unevaluatedItems (clients such as the TypeScript
//     SDK refuse a tools/list holding one);
//   - type-union: `type` is one name, not a list (single-type dialects,
//     such as Gemini's OpenAPI subset, drop or refuse a list);
//   - remote-ref: no `$ref` outside the document;
//   - untyped-schema: every schema constrains something (a type, enum,
//     const, bound, applicator, …; `if` only with `then` or `else`), except
//     directly under `not`, where {} is the always-false schema's half.
var (
	lintBooleanOK = []string{"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
	lintOne       = []string{"items", "contains", "not", "propertyNames", "if", "then", "else", "additionalProperties",
		"unevaluatedProperties", "additionalItems", "unevaluatedItems", "contentSchema"}
	lintList      = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	lintMap       = []string{"properties", "patternProperties", "dependentSchemas", "dependencies", "$defs", "definitions"}
	lintConstrain = []string{"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
		"maxLength", "minLength", "pattern", "format", "contentMediaType", "contentEncoding", "contentSchema", "maxItems",
		"minItems", "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
		"dependentRequired", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems", "contains", "additionalItems",
		"unevaluatedItems", "properties", "patternProperties", "additionalProperties", "unevaluatedProperties",
		"propertyNames", "dependentSchemas", "dependencies", "$ref", "$dynamicRef", "$recursiveRef"}
)

// schemaFindings lists where a schema breaks the rules above.
func schemaFindings(v any, path, keyword string) []string {
	if b, ok := v.(bool); ok {
		if slices.Contains(lintBooleanOK, keyword) {
			return nil
		}
		return []string{fmt.Sprintf("%s: boolean-schema %v", path, b)}
	}
	s, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	if _, ok := s["type"].([]any); ok {
		out = append(out, path+": type-union")
	}
	if ref, ok := s["$ref"].(string); ok && ref != "" && !strings.HasPrefix(ref, "#") {
		out = append(out, path+": remote-ref "+ref)
	}
	constrained := slices.ContainsFunc(lintConstrain, func(k string) bool { _, ok := s[k]; return ok })
	if _, cond := s["if"]; cond {
		_, then := s["then"]
		_, els := s["else"]
		constrained = constrained || then || els
	}
	if !constrained && keyword != "not" {
		out = append(out, path+": untyped-schema")
	}
	for _, k := range lintMap {
		m, _ := s[k].(map[string]any)
		for name, sub := range m {
			out = append(out, schemaFindings(sub, path+"."+k+"."+name, k)...)
		}
	}
	for _, k := range lintList {
		list, _ := s[k].([]any)
		for i, sub := range list {
			out = append(out, schemaFindings(sub, fmt.Sprintf("%s.%s[%d]", path, k, i), k)...)
		}
	}
	for _, k := range lintOne {
		sub, ok := s[k]
		if !ok {
			continue
		}
		if list, isList := sub.([]any); isList && k == "items" {
			for i, item := range list {
				out = append(out, schemaFindings(item, fmt.Sprintf("%s.items[%d]", path, i), k)...)
			}
			continue
		}
		out = append(out, schemaFindings(sub, path+"."+k, k)...)
	}
	return out
}

// TestSchemaFindingsCatchEachRule checks the checker: each rule fires on
// a schema breaking it, and not on its portable spelling.
func TestSchemaFindingsCatchEachRule(t *testing.T) {
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":true}}`, "boolean-schema"},
		{`{"type":"object","properties":{"a":{"type":["null","boolean"]}}}`, "type-union"},
		{`{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "remote-ref"},
		{`{"type":"object","properties":{"a":{"description":"anything"}}}`, "untyped-schema"},
		{`{"type":"object","additionalProperties":{}}`, "untyped-schema"},
		{`{"type":"object","properties":{"a":{"if":{"type":"string"}}}}`, "untyped-schema"},
		{`{"type":"object","additionalProperties":false,"properties":{"a":{"type":"boolean"},"b":{"not":{}}}}`, ""},
	} {
		var v any
		if err := json.Unmarshal([]byte(c.schema), &v); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(schemaFindings(v, "$", ""), "; ")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: findings %q, want %q", c.schema, got, c.want)
		}
	}
}

// TestToolSchemasPortable lists every tool (wf_ tools too, and each
// profile) as a client does and checks each input and output schema
// against the Inspector's rules.
func TestToolSchemasPortable(t *testing.T) {
	e := newEnv(t, Options{ExposeWorkflows: true}, service.Options{})
	res, err := e.connect(nil).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) < 20 || !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return strings.HasPrefix(tl.Name, exposedPrefix) }) {
		t.Fatalf("%d tools listed, want the built-in ones and wf_ tools", len(res.Tools))
	}
	for _, tool := range res.Tools {
		for kind, schema := range map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema} {
			if schema == nil {
				continue
			}
			data, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatal(err)
			}
			for _, f := range schemaFindings(v, kind, "") {
				t.Errorf("tool %s: %s", tool.Name, f)
			}
		}
	}
}

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/service"
)

// TestToolSchemasHaveNoBooleanSubschemas guards the TypeScript SDK's
// client, which refuses a tools/list whose schemas hold `true`.
func TestToolSchemasHaveNoBooleanSubschemas(t *testing.T) {
	e := newEnv(t, Options{ExposeWorkflows: true}, service.Options{})
	cs := e.connect(nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) < 10 {
		t.Fatalf("only %d tools", len(res.Tools))
	}
	for _, tool := range res.Tools {
		for kind, schema := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
			if schema == nil {
				continue
			}
			data, _ := json.Marshal(schema)
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				t.Fatal(err)
			}
			if path, ok := booleanSubschema(v, kind); ok {
				t.Errorf("tool %s: %s schema has a boolean subschema at %s", tool.Name, kind, path)
			}
		}
	}
}

func booleanSubschema(v any, path string) (string, bool) {
	if _, ok := v.(bool); ok {
		return path, true
	}
	s, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	for _, k := range subschemaKeys {
		if sub, ok := s[k]; ok {
			if p, found := booleanSubschema(sub, path+"."+k); found {
				return p, true
			}
		}
	}
	for _, k := range subschemaListKeys {
		list, _ := s[k].([]any)
		for _, sub := range list {
			if p, found := booleanSubschema(sub, path+"."+k+"[]"); found {
				return p, true
			}
		}
	}
	for _, k := range subschemaMapKeys {
		m, _ := s[k].(map[string]any)
		for name, sub := range m {
			if p, found := booleanSubschema(sub, path+"."+k+"."+name); found {
				return p, true
			}
		}
	}
	return "", false
}

func TestObjectSchemaRewritesNestedBooleans(t *testing.T) {
	in := map[string]any{"type": "object", "default": true, "properties": map[string]any{
		"a": true, "b": map[string]any{"items": false, "const": true}}}
	out := booleanToObject(in).(map[string]any)
	data, _ := json.Marshal(out)
	want := `{"default":true,"properties":{"a":{},"b":{"const":true,"items":{"not":{}}}},"type":"object"}`
	if string(data) != want {
		t.Fatalf("got %s\nwant %s", data, want)
	}
}

func TestSetLevelRefusesUnknownLevels(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "bogus"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("setLevel bogus: %v, want invalid params", err)
	}
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"}); err != nil {
		t.Fatalf("setLevel warning: %v", err)
	}
}

package mcpserver

//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but stays for clients of earlier protocols (issue 23)

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

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

func TestPortableRewrites(t *testing.T) {
	in := `{"type":"object","additionalProperties":{"not":{}},"properties":{` +
		`"opt":{"type":["null","boolean"]},"two":{"type":["string","number"]},` +
		`"free":{"type":"object","additionalProperties":{}},"any":{"description":"d"},` +
		`"never":{"not":{}}}}`
	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(portable(v))
	want := `{"additionalProperties":false,"properties":{` +
		`"any":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"boolean"},{"type":"object"},{"type":"array"},{"type":"null"}],"description":"d"},` +
		`"free":{"type":"object"},"never":{"not":{}},"opt":{"type":"boolean"},` +
		`"two":{"anyOf":[{"type":"string"},{"type":"number"}]}},"type":"object"}`
	if string(data) != want {
		t.Fatalf("got  %s\nwant %s", data, want)
	}
}

//go:build linux

package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Item 7: results an agent cannot hold. Every tool result and resource
// read is at most 256 KiB (what does not fit is paged), and an error
// quotes a caller's value cut short.
const (
	maxResult = 256 << 10
	maxError  = 8 << 10
)

// huge is the 3 MiB value item 7's cases send as an id, a token or a name.
func huge() string { return strings.Repeat("r", 3<<20) }

// smallToolError calls name with args and wants a structured tool error
// of at most maxError bytes that does not carry the caller's value whole;
// its code is the outcome.
func smallToolError(name string, args map[string]any) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		m, err := c.Request(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
		if err != nil {
			return "", err
		}
		if m.Error != nil {
			return "", fmt.Errorf("%s: %w", name, m.Error)
		}
		var r ToolResult
		if err := json.Unmarshal(m.Result, &r); err != nil {
			return "", err
		}
		if !r.IsError {
			return "", fmt.Errorf("%s answered without an error", name)
		}
		if err := small(m.Result); err != nil {
			return r.ErrorCode(), err
		}
		return r.ErrorCode(), nil
	}
}

// small checks an answer's size and that it does not echo a value of
// huge whole or nearly.
func small(answer []byte) error {
	if len(answer) > maxError {
		return fmt.Errorf("an error of %d bytes, want at most %d: %.200s", len(answer), maxError, answer)
	}
	if strings.Contains(string(answer), strings.Repeat("r", 200)) {
		return fmt.Errorf("the error carries the caller's value: %.200s", answer)
	}
	return nil
}

// unknownHugeTool calls a tool whose name is 3 MiB: a JSON-RPC error,
// small; the outcome is "rpc CODE".
func unknownHugeTool(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
	m, err := c.Request(ctx, "tools/call", map[string]any{"name": huge(), "arguments": map[string]any{}})
	if err != nil {
		return "", err
	}
	if m.Error == nil {
		return "", fmt.Errorf("a tool of a 3 MiB name answered: %.200s", m.Result)
	}
	data, _ := json.Marshal(m.Error)
	return fmt.Sprintf("rpc %d", m.Error.Code), small(data)
}

// bigOpenAPI is an OpenAPI 3.0 document of n operations (n even), each
// pair a GET and a POST of one path with a description, two parameters
// and, for the POST, a body of twelve fields: about 1.6 KB per operation.
func bigOpenAPI(n int) string {
	paths := map[string]any{}
	desc := strings.Repeat("Lists the things of a repository, page by page. ", 2)
	params := []any{
		map[string]any{"name": "owner", "in": "path", "required": true, "schema": map[string]any{"type": "string"}},
		map[string]any{"name": "per_page", "in": "query", "schema": map[string]any{"type": "integer"}},
	}
	props := map[string]any{}
	for j := range 12 {
		props[fmt.Sprintf("field_%d", j)] = map[string]any{"type": "string", "description": "A field of the thing."}
	}
	ok := map[string]any{"200": map[string]any{"description": "OK"}}
	for i := 0; i < n; i += 2 {
		tag := fmt.Sprintf("tag%02d", (i/2)%20)
		paths[fmt.Sprintf("/repos/{owner}/things%d", i)] = map[string]any{
			"get": map[string]any{"operationId": fmt.Sprintf("list-things-%d", i), "description": desc,
				"tags": []any{tag}, "parameters": params, "responses": ok},
			"post": map[string]any{"operationId": fmt.Sprintf("create-thing-%d", i), "description": desc,
				"tags": []any{tag}, "parameters": params, "responses": ok,
				"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{
					"schema": map[string]any{"type": "object", "properties": props}}}}},
		}
	}
	data, _ := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Big", "version": "1"},
		"servers": []any{map[string]any{"url": "https://api.example.com"}}, "paths": paths})
	return string(data)
}

// bigCatalogOps is the size of item 7's catalog (GitHub's has 1,221).
const bigCatalogOps = 1500

// sizedTool calls name with args and wants a result that is not an error,
// of at most maxResult bytes.
func sizedTool(ctx context.Context, c *Conn, name string, args map[string]any) (map[string]any, error) {
	m, err := c.Request(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		return nil, fmt.Errorf("%s: %w", name, m.Error)
	}
	if len(m.Result) > maxResult {
		return nil, fmt.Errorf("%s: a result of %d bytes, over %d", name, len(m.Result), maxResult)
	}
	var r ToolResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return nil, err
	}
	if r.IsError {
		return nil, fmt.Errorf("%s: %s: %.300v", name, r.ErrorCode(), r.Structured)
	}
	return r.Structured, nil
}

// catalogSized calls a catalog tool with the big document inline and
// wants its result under the ceiling and counting every operation; then
// stepwise://actions after an import. The outcome is "under 256 KiB".
func catalogSized(name string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		args := map[string]any{"source": bigOpenAPI(bigCatalogOps)}
		if name != "catalog_validate" {
			args["title"] = "Big"
		}
		r, err := sizedTool(ctx, c, name, args)
		if err != nil {
			return "", err
		}
		ops := r["operations"]
		if name == "catalog_preview" {
			ops = r["operations_total"]
		}
		if ops != float64(bigCatalogOps) {
			return "", fmt.Errorf("%s: %v operations, want %d", name, ops, bigCatalogOps)
		}
		if name == "catalog_import" {
			return actionsPaged(ctx, c)
		}
		return "under 256 KiB", nil
	}
}

// actionsPaged reads stepwise://actions and wants its first page under
// the ceiling with a next cursor.
func actionsPaged(ctx context.Context, c *Conn) (string, error) {
	m, err := c.Request(ctx, "resources/read", map[string]any{"uri": "stepwise://actions"})
	if err != nil {
		return "", err
	}
	if m.Error != nil {
		return "", fmt.Errorf("read stepwise://actions: %w", m.Error)
	}
	if len(m.Result) > maxResult {
		return "", fmt.Errorf("stepwise://actions: %d bytes, over %d", len(m.Result), maxResult)
	}
	var res struct {
		Contents []struct {
			Text string `json:"text"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Contents) != 1 {
		return "", fmt.Errorf("stepwise://actions: %.200s (%v)", m.Result, err)
	}
	var page struct {
		Total int    `json:"total"`
		Next  string `json:"next"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &page); err != nil {
		return "", fmt.Errorf("stepwise://actions: %w", err)
	}
	if page.Next == "" || page.Total < bigCatalogOps {
		return "", fmt.Errorf("stepwise://actions: total %d, next %q: want every action, paged", page.Total, page.Next)
	}
	return "under 256 KiB, paged", nil
}

// resultCases are item 7's cases.
func resultCases() []Case {
	return []Case{
		{Name: "results: run_get of a 3 MiB run id", Transport: Stdio, Want: "RUN_NOT_FOUND", Run: smallToolError("run_get", map[string]any{"run_id": huge()})},
		{
			Name: "results: run_continue of a 3 MiB token", Transport: Stdio, Want: "TOKEN_INVALID",
			Run: smallToolError("run_continue", map[string]any{"token": huge(), "value": "x"}),
		},
		{Name: "results: tools/call of a 3 MiB tool name", Transport: Stdio, Want: "rpc -32602", Run: unknownHugeTool},
		{Name: "results: catalog_validate of 1,500 operations", Transport: Stdio, Want: "under 256 KiB", Run: catalogSized("catalog_validate")},
		{Name: "results: catalog_preview of 1,500 operations", Transport: Stdio, Want: "under 256 KiB", Run: catalogSized("catalog_preview")},
		{
			Name: "results: catalog_import of 1,500 operations, stepwise://actions", Transport: Stdio, Want: "under 256 KiB, paged",
			Run: catalogSized("catalog_import"),
		},
	}
}

package mcpserver

//go:generate go test -run ^TestToolSchemasCurrent$ -update-tool-schemas .

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolSchema is a built-in tool's input and output schema, compact JSON as
// tools/list shows them.
type toolSchema struct {
	Input, Output string
}

// setToolSchemas gives t its input schema and, unless it has one, its
// output schema if it is one of outputSchemaTools: from builtinSchemas (toolschemas_gen.go, generated from
// the Go types by go generate; TestToolSchemasCurrent fails when it is
// stale), or derived from In and Out by reflection when the server is told
// to (the generator is) or the generated file does not know the tool yet.
// prebuilt reports the first case. Deriving and marshalling the schemas
// took about 30 ms and 12 MB of allocations on every start; even parsing
// them from embedded JSON took several milliseconds.
func setToolSchemas[In, Out any](s *Server, t *mcp.Tool) (prebuilt bool, err error) {
	if ts, ok := builtinSchemas[t.Name]; ok && !s.opts.deriveSchemas && t.OutputSchema == nil && !(s.opts.Stateless && statelessTools[t.Name]) {
		t.InputSchema = json.RawMessage(ts.Input)
		if ts.Output != "" {
			t.OutputSchema = json.RawMessage(ts.Output)
		}
		return true, nil
	}
	return false, deriveToolSchemas[In, Out](t)
}

// addPrebuilt registers a tool whose schemas come from toolschemas_gen.go.
// The SDK's AddTool re-parses a tool's schemas three times to check them
// (an object input schema, JSON output schema, valid x-mcp-header
// annotations), each parse allocating a fresh 32 KB buffer: for the
// built-in tools, 2.5 MB and 600 page faults of every start, on schemas
// that cannot change after the build. The same schemas pass those checks
// in TestToolSchemasCurrent, where the deriving server registers them with
// AddTool; here the tool is registered with minimal schemas that pass them
// at once, and then given its real ones. The SDK keeps the *Tool it is
// given and lists it as it is (the same test checks that tools/list shows
// the generated schemas); no session exists yet while New runs.
func addPrebuilt(srv *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) {
	in, out := t.InputSchema, t.OutputSchema
	t.InputSchema = &jsonschema.Schema{Type: "object"}
	if out != nil {
		t.OutputSchema = &jsonschema.Schema{}
	}
	srv.AddTool(t, h)
	t.InputSchema, t.OutputSchema = in, out
}

// outputSchemaTools are the tools listed with an output schema: those
// returning the run shape, whose status, pause and outputs a client
// program branches on. The others' results are described in their
// descriptions and docs/MCP.md: an output schema costs every session's
// context and tells an agent, which reads the JSON, nothing more.
var outputSchemaTools = map[string]bool{
	"run_start": true, "run_continue": true, "run_get": true, "run_cancel": true,
	"run_retry": true, "run_fork": true, "run_pause": true, "run_resume": true,
	"run_rewind": true, "run_restart": true,
}

// deriveToolSchemas derives t's schemas from the Go types of its
// arguments and result (the result's only for outputSchemaTools).
func deriveToolSchemas[In, Out any](t *mcp.Tool) error {
	opts := &jsonschema.ForOptions{TypeSchemas: schemaTypes}
	in, err := jsonschema.For[In](opts)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if t.InputSchema, err = inputSchema(in); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if t.OutputSchema == nil && outputSchemaTools[t.Name] {
		out, err := jsonschema.For[Out](opts)
		if err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
		if t.OutputSchema, err = outputShape(out); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
	}
	return nil
}

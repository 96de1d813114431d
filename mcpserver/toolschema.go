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
// output schema: from builtinSchemas (toolschemas_gen.go, generated from
// the Go types by go generate; TestToolSchemasCurrent fails when it is
// stale), or derived from In and Out by reflection when the server is told
// to (the generator is) or the generated file does not know the tool yet.
// Deriving and marshalling the schemas took about 30 ms and 12 MB of
// allocations on every start; parsing them from embedded JSON still took
// several milliseconds.
func setToolSchemas[In, Out any](s *Server, t *mcp.Tool) error {
	if ts, ok := builtinSchemas[t.Name]; ok && !s.opts.deriveSchemas && (t.OutputSchema != nil || ts.Output != "") {
		t.InputSchema = json.RawMessage(ts.Input)
		if t.OutputSchema == nil {
			t.OutputSchema = json.RawMessage(ts.Output)
		}
		return nil
	}
	return deriveToolSchemas[In, Out](t)
}

// deriveToolSchemas derives t's schemas from the Go types of its
// arguments and result.
func deriveToolSchemas[In, Out any](t *mcp.Tool) error {
	opts := &jsonschema.ForOptions{TypeSchemas: schemaTypes}
	in, err := jsonschema.For[In](opts)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if t.InputSchema, err = objectSchema(in); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if t.OutputSchema == nil {
		out, err := jsonschema.For[Out](opts)
		if err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
		if t.OutputSchema, err = resultOrError(out); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
	}
	return nil
}

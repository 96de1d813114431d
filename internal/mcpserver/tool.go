package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/workflow"
)

// summarizer is implemented by outputs that have a one-line text form.
type summarizer interface{ Summary() string }

// inputNeeded is returned by a handler that needs the client to fulfil
// input requests (elicitation) before it can finish: the tool result then
// carries them instead of content (multi round-trip requests).
type inputNeeded struct {
	requests mcp.InputRequestMap
	state    string
}

func (*inputNeeded) Error() string { return "input needed" }

// handlerFor is a typed tool handler.
type handlerFor[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, error)

// schemaTypes fixes how Go types the tools use appear in schemas.
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[time.Time](): {Type: "string", Format: "date-time"},
	reflect.TypeFor[any]():       {},
	// Raw JSON arguments keep their key order (a schema's properties).
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
}

// addTool registers a typed tool. Unlike the SDK's generic AddTool it maps
// every failure — arguments that do not fit the schema included — to the
// structured ToolError, and it adds a short text summary before the JSON.
//
// The schemas clients see come from toolschemas_gen.go, derived from the
// Go types at build time (see setToolSchemas). The resolved input schema
// that checks arguments is built on the tool's first call. A tool the
// server's profile does not offer is not registered; its handler is
// returned all the same.
func addTool[In, Out any](s *Server, t *mcp.Tool, h handlerFor[In, Out]) mcp.ToolHandler {
	prebuilt, err := setToolSchemas[In, Out](s, t)
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", t.Name, err))
	}
	resolve := sync.OnceValues(func() (*jsonschema.Resolved, error) {
		in, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
		if err != nil {
			return nil, fmt.Errorf("input schema of %s: %w", t.Name, err)
		}
		return in.Resolve(nil)
	})
	handler := s.toolHandler(t.Name, func(ctx context.Context, req *mcp.CallToolRequest) (any, error) {
		var input In
		args := req.Params.Arguments
		if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
			args = json.RawMessage("{}")
		}
		var generic any
		if err := json.Unmarshal(args, &generic); err != nil {
			return nil, argumentsError("", "the arguments are not JSON: "+err.Error())
		}
		resolved, err := resolve()
		if err != nil {
			return nil, fmt.Errorf("input schema of %s: %w", t.Name, err)
		}
		if err := resolved.Validate(generic); err != nil {
			return nil, argumentsError("", "the arguments do not fit the tool's input schema",
				workflow.Violation{Rule: "arguments", Message: err.Error()})
		}
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&input); err != nil {
			return nil, argumentsError("", "the arguments do not fit the tool's input schema: "+err.Error())
		}
		return h(ctx, req, input)
	})
	if !s.offers(t.Name) {
		return handler
	}
	if prebuilt {
		addPrebuilt(s.mcp, t, handler)
		return handler
	}
	s.mcp.AddTool(t, handler)
	return handler
}

// toolHandler turns a handler's (output, error) into the tool result.
func (s *Server) toolHandler(name string, h func(context.Context, *mcp.CallToolRequest) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out, err := h(ctx, req)
		if need, ok := err.(*inputNeeded); ok {
			return &mcp.CallToolResult{InputRequests: need.requests, RequestState: need.state}, nil
		}
		if err != nil {
			return errorResult(toolError(s.log, name, err)), nil
		}
		res, err := boundResult(name, out)
		if err != nil {
			return errorResult(toolError(s.log, name, err)), nil
		}
		return res, nil
	}
}

func ptr[T any](v T) *T { return &v }

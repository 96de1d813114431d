package mcpserver

//lint:file-ignore SA1019 MCP logging is deprecated from 2026-07-28 (SEP-2577) but stays for clients of earlier protocols (issue 23)

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logLevels are the levels logging/setLevel accepts (RFC 5424 names).
var logLevels = map[mcp.LoggingLevel]bool{"debug": true, "info": true, "notice": true, "warning": true,
	"error": true, "critical": true, "alert": true, "emergency": true}

// checkSetLevel refuses logging/setLevel with a level that does not exist
// (invalid params), which the SDK would otherwise accept silently.
func checkSetLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "logging/setLevel" {
			if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && !logLevels[p.Level] {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("unknown log level %q: want debug, info, notice, warning, error, critical, alert or emergency", p.Level)}
			}
		}
		return next(ctx, method, req)
	}
}

package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readiness lets a server built before its service answer the handshake
// at once and hold every other request until Start (or until Fail says
// the service will never come). An MCP client that spawns `serve` waits
// for the initialize answer, often under a short timeout; opening the
// store and resuming interrupted runs need not be inside that wait.
type readiness struct {
	once sync.Once
	done chan struct{}
	err  error // why the server will never be ready; set before done closes
}

func newReadiness() *readiness { return &readiness{done: make(chan struct{})} }

// open lets held and later requests through; err, when not nil, is what
// they are answered instead.
func (r *readiness) open(err error) {
	r.once.Do(func() {
		r.err = err
		close(r.done)
	})
}

// isOpen reports whether the server is ready and its service open.
func (r *readiness) isOpen() bool {
	select {
	case <-r.done:
		return r.err == nil
	default:
		return false
	}
}

// handshake reports whether method is answered before the server is
// ready: the lifecycle requests, which need no service, and every
// notification (the SDK handles those synchronously on its reader, so
// holding one would hold the connection).
func handshake(method string) bool {
	switch method {
	case "initialize", "ping", "server/discover":
		return true
	}
	return strings.HasPrefix(method, "notifications/")
}

// middleware holds a request until the server is ready. Calls reach it
// on their own goroutines (the SDK dispatches them asynchronously), so a
// held call holds nothing else.
func (r *readiness) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !handshake(method) {
			select {
			case <-r.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if r.err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("stepwise could not start: %v", r.err)}
			}
		}
		return next(ctx, method, req)
	}
}

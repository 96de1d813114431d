// Package mcpclienttest provides an MCP server for tests of the mcp action:
// in process (for httptest) or as a stdio subprocess made of the test
// binary itself, which records when it starts and stops so that tests can
// count subprocesses and see them exit.
package mcpclienttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env names the variables that turn a test binary into the stdio helper
// server (see Main) and where it records its life.
const (
	EnvHelper = "STEPWISE_MCPTEST_SERVER"
	EnvLog    = "STEPWISE_MCPTEST_LOG"
)

// Stats counts what a server saw.
type Stats struct {
	// Connections counts sessions opened (initialize requests). This
	// server does not offer the stateless protocol 2026-07-28 (opt-in in
	// the SDK), so a client's server/discover finds no common version and
	// every session initializes.
	Connections atomic.Int64
	// Calls counts tool calls.
	Calls atomic.Int64
}

type (
	addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	addOut struct {
		Sum float64 `json:"sum"`
	}
	textIn struct {
		Text string `json:"text"`
	}
	failIn struct {
		Message string `json:"message"`
	}
	nameIn struct {
		Name string `json:"name"`
	}
	valueOut struct {
		Value string `json:"value"`
		Set   bool   `json:"set"`
	}
	sleepIn struct {
		Ms int `json:"ms"`
	}
)

// NewServer returns a server with the test tools: add {a, b} → {sum};
// echo {text} → text content only; fail {message} → a result with isError;
// env {name} → {value, set} of the server's environment; header {name} →
// {value, set} of the HTTP request's header; sleep {ms}. With crash, a tool
// crash exits the process (helper subprocesses only).
func NewServer(stats *Stats, crash bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "initialize":
				stats.Connections.Add(1)
			case "tools/call":
				stats.Calls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "a + b"}, func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "the text back, as text content"}, func(_ context.Context, _ *mcp.CallToolRequest, in textIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}, &mcp.TextContent{Text: "done"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "a tool error"}, func(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New(in.Message)
	})
	mcp.AddTool(s, &mcp.Tool{Name: "env", Description: "an environment variable of the server"}, func(_ context.Context, _ *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, valueOut, error) {
		v, ok := os.LookupEnv(in.Name)
		return nil, valueOut{Value: v, Set: ok}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "header", Description: "a header of the HTTP request"}, func(_ context.Context, req *mcp.CallToolRequest, in nameIn) (*mcp.CallToolResult, valueOut, error) {
		if req.Extra == nil || req.Extra.Header == nil {
			return nil, valueOut{}, nil
		}
		v := req.Extra.Header.Get(in.Name)
		return nil, valueOut{Value: v, Set: v != ""}, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sleep", Description: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, struct{}, error) {
		select {
		case <-ctx.Done():
			return nil, struct{}{}, ctx.Err()
		case <-time.After(time.Duration(in.Ms) * time.Millisecond):
		}
		return nil, struct{}{}, nil
	})
	if crash {
		mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "exit the server process"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	}
	return s
}

// Main serves the test tools over stdio and exits when the process was
// started as the helper (EnvHelper set); otherwise it returns at once.
// Call it first in TestMain. It appends "start PID" and, when its stdin
// closes, "stop PID" to the file named by EnvLog.
func Main() {
	if os.Getenv(EnvHelper) == "" {
		return
	}
	note := func(what string) {
		if f, err := os.OpenFile(os.Getenv(EnvLog), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err == nil {
			fmt.Fprintf(f, "%s %d\n", what, os.Getpid())
			f.Close()
		}
	}
	note("start")
	fmt.Fprintln(os.Stderr, "mcptest helper: serving on stdio")
	err := NewServer(&Stats{}, true).Run(context.Background(), &mcp.StdioTransport{})
	note("stop")
	if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(0)
}

// Helper returns how to start the current test binary as the helper
// server, recording its life in logFile: a command, no arguments, and the
// environment it needs (to add to a servers file or a step's with.env).
func Helper(logFile string) (command string, env map[string]string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("the test binary: %w", err)
	}
	return exe, map[string]string{EnvHelper: "1", EnvLog: logFile}, nil
}

// Lives reads the helper's record in logFile: the pids that started and
// those that stopped, in order.
func Lives(logFile string) (started, stopped []int, err error) {
	data, err := os.ReadFile(logFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var what string
		var pid int
		if _, err := fmt.Sscanf(line, "%s %d", &what, &pid); err != nil {
			continue
		}
		if what == "start" {
			started = append(started, pid)
		} else {
			stopped = append(stopped, pid)
		}
	}
	return started, stopped, nil
}

// Package mcpclient is stepwise as an MCP client: the built-in `mcp`
// action, which calls a tool of another MCP server, the servers file
// (servers.yaml in the home directory) that names the servers an operator
// set up, and the per-run pool that reuses a connection across the steps
// of a run and closes it when the run's driver exits.
package mcpclient

import (
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/action"
)

// Config wires the mcp action.
type Config struct {
	// ServersFile is the path of servers.yaml; it is read at every call,
	// so edits apply to the next step.
	ServersFile string
	// AllowInlineCommands lets with.command start a program. Starting a
	// program is running a command, so it is the operator's decision: the
	// CLI allows it, `stepwise serve` only with --allow-shell. Servers of
	// the servers file are always allowed (the operator wrote them).
	AllowInlineCommands bool
	// LookupEnv resolves $NAME references and gives stdio servers PATH and
	// HOME (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// InlineEnv resolves the $NAME references of a server the step defines
	// itself (with.url or with.command, their env and headers), which
	// whoever wrote the workflow chose (default LookupEnv). `stepwise serve`
	// restricts it to the variables the operator allows, as it does every
	// read of the environment by workflows; the servers file is the
	// operator's and reads LookupEnv.
	InlineEnv func(string) (string, bool)
	// InlineEnvHint, when not nil, says how the variable of a reference
	// InlineEnv does not resolve is allowed; it is added to the error.
	InlineEnvHint func(name string) string
	// InlineTransport connects to a server the step names by with.url
	// (default http.DefaultTransport): `stepwise serve` gives its network
	// policy's, so that a workflow cannot reach addresses the operator
	// did not allow. Servers of the servers file connect through
	// http.DefaultTransport: the operator wrote them.
	InlineTransport http.RoundTripper
	// Version is the client version told to servers (default "dev").
	Version string
}

// Action is the `mcp` action.
type Action struct {
	cfg    Config
	client *mcp.Client
}

// New returns the mcp action.
func New(cfg Config) *Action {
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	if cfg.InlineEnv == nil {
		cfg.InlineEnv = cfg.LookupEnv
	}
	if cfg.InlineTransport == nil {
		cfg.InlineTransport = http.DefaultTransport
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	// No sampling, elicitation or roots handlers: the client declares no
	// capabilities, so a server has nothing to ask a step for.
	client := mcp.NewClient(&mcp.Implementation{Name: "stepwise", Version: cfg.Version}, nil)
	return &Action{cfg: cfg, client: client}
}

// Name implements action.Action.
func (*Action) Name() string { return "mcp" }

// Description implements action.Action.
func (*Action) Description() string {
	return "Call a tool of another MCP server. with: {server: a name from servers.yaml | command, args?, env? (stdio) | url, headers? (streamable HTTP), " +
		"tool, arguments?, timeout? (default 60s)}. Output: the tool's structuredContent, else {text, content}. A tool result with isError fails the step."
}

// Safety implements action.Action. A remote tool may do anything, and what
// it declares of itself (readOnlyHint) is the remote server's claim, not
// something stepwise can check: the tier stays mutating.
func (*Action) Safety() string { return action.Mutating }

// InputSchema implements action.Described.
func (*Action) InputSchema() map[string]any {
	strMap := map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}}
	with := func(s map[string]any, desc string) map[string]any {
		out := map[string]any{"description": desc}
		for k, v := range s {
			out[k] = v
		}
		return out
	}
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"tool"},
		"properties": map[string]any{
			"server":    map[string]any{"type": "string", "minLength": 1, "description": "a server named in servers.yaml (home directory)"},
			"command":   map[string]any{"type": "string", "minLength": 1, "description": "an inline stdio server: the program to start (only where the operator allows inline commands)"},
			"args":      map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "the program's arguments"},
			"env":       with(strMap, "the program's environment besides PATH and HOME; values may use $NAME references to stepwise's environment"),
			"url":       map[string]any{"type": "string", "pattern": "^https?://", "description": "an inline streamable HTTP server's endpoint"},
			"headers":   with(strMap, "HTTP headers sent to url; values may use $NAME references to stepwise's environment ($$ is a $)"),
			"tool":      map[string]any{"type": "string", "minLength": 1, "description": "the tool's name"},
			"arguments": map[string]any{"type": "object", "description": "the tool's arguments"},
			"timeout":   map[string]any{"type": "string", "default": "60s", "description": "how long connecting and the call may take, e.g. 30s, 5m"},
		},
		// Exactly one way to reach the server (two given match two
		// branches), and the keys that go with it.
		"oneOf":             []any{req("server"), req("command"), req("url")},
		"dependentRequired": map[string]any{"args": []any{"command"}, "env": []any{"command"}, "headers": []any{"url"}},
	}
}

func req(key string) map[string]any { return map[string]any{"required": []any{key}} }

// OutputSchema implements action.Described.
func (*Action) OutputSchema() map[string]any {
	return map[string]any{
		"description": "the tool result's structuredContent when it has one; otherwise {text: the text parts joined by newlines, content: the content items}",
	}
}

package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/workflow"
)

// defaultTimeout bounds connecting and calling when with.timeout is not
// given.
const defaultTimeout = 60 * time.Second

// metaIdempotencyKey carries the step's idempotency key in the call's
// _meta, for servers that want to recognize a repeated call (a step runs
// again after a crash).
const metaIdempotencyKey = "dev.stepwise/idempotency_key"

// request is a step's `with`, read and checked.
type request struct {
	name      string // the servers file's name, "" for an inline server
	server    Server
	tool      string
	arguments map[string]any
	timeout   time.Duration
}

// key identifies the server in the run's pool.
func (r *request) key() string {
	if r.name != "" {
		return "server:" + r.name
	}
	return r.server.identity()
}

// what names the server in messages.
func (r *request) what() string {
	if r.name != "" {
		return fmt.Sprintf("server %q", r.name)
	}
	return r.server.describe()
}

// Run implements action.Action.
func (a *Action) Run(ctx context.Context, c action.Call) (any, error) {
	req, err := a.request(c.Input)
	if err != nil {
		return nil, &action.Error{Err: fmt.Errorf("mcp: %w", err)}
	}
	lookup := a.cfg.LookupEnv
	if req.name == "" {
		lookup = a.cfg.InlineEnv
	}
	r, err := resolve(req.server, lookup)
	if err != nil {
		var unset *unsetError
		if req.name == "" && a.cfg.InlineEnvHint != nil && errors.As(err, &unset) {
			if hint := a.cfg.InlineEnvHint(unset.name); hint != "" {
				err = fmt.Errorf("%w, or %s", err, hint)
			}
		}
		return nil, &action.Error{Err: fmt.Errorf("mcp: %s: %w", req.what(), err)}
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	log = log.With("mcp_server", req.what())
	callCtx, cancel := context.WithTimeout(ctx, req.timeout)
	defer cancel()
	res, err := a.call(callCtx, c, req, r, log)
	if err != nil {
		// A new error, not the one returned: a failed connection's error
		// is shared by the steps that waited for it.
		msg, retryable, code := err.Error(), true, ""
		var ae *action.Error
		if errors.As(err, &ae) {
			retryable, code = ae.Retryable, ae.Code
		}
		if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			msg, retryable = fmt.Sprintf("tool %q of %s did not answer within %s", req.tool, req.what(), req.timeout), true
		}
		return nil, &action.Error{Err: errors.New("mcp: " + r.mask.Mask(msg)), Retryable: retryable, Code: code}
	}
	if res.IsError {
		return nil, &action.Error{Err: fmt.Errorf("mcp: tool %q of %s failed: %s", req.tool, req.what(), r.mask.Mask(errorText(res)))}
	}
	if len(res.InputRequests) > 0 {
		return nil, &action.Error{Err: fmt.Errorf("mcp: tool %q of %s asked for input (elicitation), which a workflow step cannot give", req.tool, req.what())}
	}
	return r.mask.MaskValue(output(res)), nil
}

// call opens (or reuses) the session and calls the tool.
func (a *Action) call(ctx context.Context, c action.Call, req *request, r *resolved, log *slog.Logger) (*mcp.CallToolResult, error) {
	open := func(ctx context.Context) (*session, error) {
		transport := http.DefaultTransport
		if req.name == "" {
			transport = a.cfg.InlineTransport
		}
		s, err := dial(ctx, a.client, r, a.cfg.LookupEnv, transport, log)
		if err != nil {
			if errors.Is(err, action.ErrNetworkNotAllowed) {
				return nil, &action.Error{Err: fmt.Errorf("connect to %s: %w", req.what(), err), Code: action.CodeNetworkNotAllowed}
			}
			return nil, &action.Error{Err: fmt.Errorf("connect to %s: %w", req.what(), err), Retryable: true}
		}
		log.Debug("mcp: connected")
		return s, nil
	}
	params := &mcp.CallToolParams{Name: req.tool, Arguments: req.arguments}
	if c.IdempotencyKey != "" {
		params.Meta = mcp.Meta{metaIdempotencyKey: c.IdempotencyKey}
	}
	v, inScope := c.Scope.Value(poolKey{}, func() io.Closer { return newPool() })
	if !inScope {
		// No run scope to keep it in: a connection for this call only.
		s, err := open(ctx)
		if err != nil {
			return nil, err
		}
		defer s.close()
		return callTool(ctx, s, params, req)
	}
	p := v.(*pool)
	s, err := p.get(ctx, req.key(), open)
	if err != nil {
		return nil, err
	}
	res, err := callTool(ctx, s, params, req)
	if err != nil && action.Retryable(err) && ctx.Err() == nil {
		p.drop(req.key(), s) // the connection broke: the next try reconnects
	}
	return res, err
}

// poolKey is the mcp action's key in a run's scope.
type poolKey struct{}

// callTool calls the tool and sorts its failures: an error the server
// answered (an unknown tool, invalid arguments) will not change by trying
// again; a failed connection may.
func callTool(ctx context.Context, s *session, params *mcp.CallToolParams, req *request) (*mcp.CallToolResult, error) {
	res, err := s.cs.CallTool(ctx, params)
	if err == nil {
		return res, nil
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return nil, &action.Error{Err: fmt.Errorf("tool %q of %s: %s", req.tool, req.what(), rpc.Message)}
	}
	return nil, &action.Error{Err: fmt.Errorf("call tool %q of %s: %w", req.tool, req.what(), err), Retryable: true}
}

// request reads the step's input. The registry has checked it against the
// input schema; the checks here are the ones a schema cannot say, and the
// servers file. Its errors are the step's to fix: Run makes them final
// (not retryable).
func (a *Action) request(in map[string]any) (*request, error) {
	req := &request{timeout: defaultTimeout}
	req.tool, _ = in["tool"].(string)
	if req.tool == "" {
		return nil, errors.New("with.tool: the tool's name is required")
	}
	if args, ok := in["arguments"].(map[string]any); ok {
		req.arguments = args
	}
	if t, ok := in["timeout"].(string); ok {
		d, err := workflow.ParseDuration(t)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("with.timeout %q: want a positive duration such as 30s", t)
		}
		req.timeout = d
	}
	if name, ok := in["server"].(string); ok && name != "" {
		if in["command"] != nil || in["url"] != nil {
			return nil, errors.New("give with.server, with.command or with.url, only one")
		}
		servers, err := LoadServers(a.cfg.ServersFile)
		if err != nil {
			return nil, err
		}
		s, ok := servers[name]
		if !ok {
			return nil, fmt.Errorf("no server named %q in %s (%s)", name, a.cfg.ServersFile, known(servers))
		}
		req.name, req.server = name, s
		return req, nil
	}
	s := Server{URL: str(in["url"]), Command: str(in["command"]), Env: strMap(in["env"]), Headers: strMap(in["headers"])}
	for _, v := range list(in["args"]) {
		s.Args = append(s.Args, str(v))
	}
	if ps := s.problems(); len(ps) > 0 {
		return nil, errors.New("with: " + strings.Join(ps, "; "))
	}
	if s.Command != "" && !a.cfg.AllowInlineCommands {
		return nil, errors.New("with.command starts a program on this machine, and this server does not allow inline commands " +
			"(the server needs --allow-shell); call a server the operator named in servers.yaml with with.server instead")
	}
	req.server = s
	return req, nil
}

// known lists the servers file's names for a message.
func known(servers map[string]Server) string {
	if len(servers) == 0 {
		return "it names no servers"
	}
	return "known: " + strings.Join(slices.Sorted(maps.Keys(servers)), ", ")
}

// str, strMap and list read values the schema has already typed.
func str(v any) string {
	s, _ := v.(string)
	return s
}

func strMap(v any) map[string]string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		out[k] = str(e)
	}
	return out
}

func list(v any) []any {
	switch l := v.(type) {
	case []any:
		return l
	case []string:
		out := make([]any, len(l))
		for i, e := range l {
			out[i] = e
		}
		return out
	}
	return nil
}

// output is what the step returns: structuredContent when the tool gives
// it, else the content items and their text.
func output(res *mcp.CallToolResult) any {
	if res.StructuredContent != nil {
		return jsonData(res.StructuredContent)
	}
	items := make([]any, 0, len(res.Content))
	var texts []string
	for _, c := range res.Content {
		items = append(items, jsonData(c))
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	return map[string]any{"text": strings.Join(texts, "\n"), "content": items}
}

// errorText is the message of a result with isError: its text parts, else
// its structured content.
func errorText(res *mcp.CallToolResult) string {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok && t.Text != "" {
			texts = append(texts, t.Text)
		}
	}
	if len(texts) > 0 {
		return strings.Join(texts, "\n")
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return "the tool reported an error without a message"
}

// jsonData turns a value into the JSON data model (maps, lists, float64).
func jsonData(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return string(b)
	}
	return out
}

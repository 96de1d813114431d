// Package mcptasks serves the MCP Tasks extension
// (io.modelcontextprotocol/tasks) on a go-sdk server, through the SDK's
// public extension points only: a receiving middleware (the capability
// check of every request, and tools/call results replaced by a
// CreateTaskResult), custom methods (tasks/get, tasks/update,
// tasks/cancel) and the server's advertised extensions.
//
// It knows the protocol and nothing of what a task stands for: a Handler
// maps task ids to the application's work. A tool handler that wants its
// call to become a task calls Create with the task's seed state; the call
// then answers with that task instead of the tool's result — only for a
// client that declared the extension on that request (Declared), never
// for another.
package mcptasks

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension is the extension's identifier, in capabilities.
const Extension = "io.modelcontextprotocol/tasks"

// The methods the extension adds.
const (
	MethodGet          = "tasks/get"
	MethodUpdate       = "tasks/update"
	MethodCancel       = "tasks/cancel"
	NotificationStatus = "notifications/tasks"
)

// Status is a task's status.
type Status string

// The statuses of a task. Completed, Failed and Cancelled are terminal.
const (
	Working       Status = "working"
	InputRequired Status = "input_required"
	Completed     Status = "completed"
	Failed        Status = "failed"
	Cancelled     Status = "cancelled"
)

// Task is a task's metadata: what CreateTaskResult carries and what every
// DetailedTask starts with.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        Status `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	// CreatedAt and LastUpdatedAt are ISO 8601 timestamps (see Time).
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is the time to live from creation in milliseconds; nil is
	// unlimited (sent as null, never omitted).
	TTLMs *int64 `json:"ttlMs"`
	// PollIntervalMs is the suggested polling interval; 0 leaves it out.
	PollIntervalMs int64 `json:"pollIntervalMs,omitempty"`
}

// Time formats t as the extension's timestamps (RFC 3339, UTC, with
// milliseconds).
func Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// DetailedTask is a task with what its status carries: the outstanding
// input requests (InputRequired), the result (Completed) or the JSON-RPC
// error (Failed).
type DetailedTask struct {
	Task
	InputRequests mcp.InputRequestMap `json:"inputRequests,omitempty"`
	// Result is the result the original request would have returned
	// (for tools/call, a CallToolResult — isError results included).
	Result any `json:"result,omitempty"`
	// Error is the JSON-RPC error the request failed with.
	Error *jsonrpc.Error `json:"error,omitempty"`
}

// CreateTaskResult answers a request with a task instead of its result.
type CreateTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"` // always "task"
	Task
}

// GetTaskResult is tasks/get's result.
type GetTaskResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"` // always "complete"
	DetailedTask
}

// AckResult is the empty acknowledgement of tasks/update and tasks/cancel.
type AckResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"` // always "complete"
}

// GetParams are tasks/get's and tasks/cancel's parameters.
type GetParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

// UpdateParams are tasks/update's parameters.
type UpdateParams struct {
	mcp.ParamsBase
	TaskID         string         `json:"taskId"`
	InputResponses InputResponses `json:"inputResponses"`
}

// InputResponses are tasks/update's input responses, read leniently: a
// response that is not one the SDK can read (an elicitation, sampling or
// roots result) is left out instead of refusing the request, since keys
// that are not outstanding are to be ignored whatever they carry, and an
// outstanding request whose response is left out stays outstanding.
type InputResponses mcp.InputResponseMap

// UnmarshalJSON reads every response of the object on its own (see
// InputResponses); data that is no object is an error.
func (r *InputResponses) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(InputResponses, len(raw))
	for k, v := range raw {
		one, err := json.Marshal(map[string]json.RawMessage{k: v})
		if err != nil {
			continue
		}
		var m mcp.InputResponseMap
		if json.Unmarshal(one, &m) == nil && m[k] != nil {
			out[k] = m[k]
		}
	}
	*r = out
	return nil
}

// ErrUnknownTask is what a Handler returns for a task id it does not know
// (or that is forged, or expired): the client gets -32602.
var ErrUnknownTask = errors.New("task not found")

// Handler is the application's side of the extension. Its methods are
// called only for clients that declared the extension.
type Handler interface {
	// Get returns the task's current state; ErrUnknownTask when there is
	// no such task.
	Get(ctx context.Context, taskID string) (*DetailedTask, error)
	// Update applies input responses. Keys that are not outstanding must
	// be ignored; a response the application refuses leaves the task
	// input_required (with a request under a new key) and is no error.
	Update(ctx context.Context, taskID string, responses mcp.InputResponseMap) error
	// Cancel asks the task to stop; it may finish otherwise.
	Cancel(ctx context.Context, taskID string) error
}

// Advertise adds the extension to a server's capabilities (initialize and
// server/discover): call it on the ServerOptions' Capabilities before
// mcp.NewServer.
func Advertise(caps *mcp.ServerCapabilities) { caps.AddExtension(Extension, map[string]any{}) }

// Install registers tasks/get, tasks/update and tasks/cancel on s, served
// by h, and the middleware that checks the client's capability and turns
// tools/call results into tasks (see Create). Call Advertise too.
func Install(s *mcp.Server, h Handler) error {
	err := errors.Join(
		mcp.AddReceivingCustomMethod(s, MethodGet, func(ctx context.Context, _ *mcp.ServerSession, p *GetParams) (*GetTaskResult, error) {
			t, err := h.Get(ctx, p.TaskID)
			if err != nil {
				return nil, wireError(err)
			}
			return &GetTaskResult{ResultType: "complete", DetailedTask: *t}, nil
		}),
		mcp.AddReceivingCustomMethod(s, MethodUpdate, func(ctx context.Context, _ *mcp.ServerSession, p *UpdateParams) (*AckResult, error) {
			if err := h.Update(ctx, p.TaskID, mcp.InputResponseMap(p.InputResponses)); err != nil {
				return nil, wireError(err)
			}
			return &AckResult{ResultType: "complete"}, nil
		}),
		mcp.AddReceivingCustomMethod(s, MethodCancel, func(ctx context.Context, _ *mcp.ServerSession, p *GetParams) (*AckResult, error) {
			if err := h.Cancel(ctx, p.TaskID); err != nil {
				return nil, wireError(err)
			}
			return &AckResult{ResultType: "complete"}, nil
		}),
	)
	if err != nil {
		return err
	}
	s.AddReceivingMiddleware(Middleware)
	return nil
}

func wireError(err error) error {
	var we *jsonrpc.Error
	switch {
	case errors.As(err, &we):
		return we
	case errors.Is(err, ErrUnknownTask):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// MissingCapability is the -32021 error naming the extension as the
// capability a request needs.
func MissingCapability() *jsonrpc.Error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{
		RequiredCapabilities: &mcp.ClientCapabilities{Extensions: map[string]any{Extension: map[string]any{}}},
	})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: "Missing required client capability: " + Extension, Data: data}
}

// Declares reports whether the request's client declared the extension
// in the request's own capabilities. The extension is one of protocol
// 2026-07-28 and later (its results are told apart by resultType): a
// client of an earlier protocol that lists it in its initialize has not
// declared it.
func Declares(req mcp.Request) bool {
	r, ok := req.(interface {
		ClientCapabilities() *mcp.ClientCapabilities
		ProtocolVersion() string
	})
	if !ok || r.ProtocolVersion() < minProtocol {
		return false
	}
	caps := r.ClientCapabilities()
	if caps == nil {
		return false
	}
	_, ok = caps.Extensions[Extension]
	return ok
}

// minProtocol is the first protocol version the extension applies to.
const minProtocol = "2026-07-28"

// slot is where a tools/call of a declaring client may leave its task.
type slot struct {
	mu   sync.Mutex
	task *Task
}

type slotKey struct{}

// Declared reports whether ctx is a tools/call's (passed through
// Install's middleware) from a client that declared the extension on that
// request: one that may be answered with a task.
func Declared(ctx context.Context) bool {
	_, ok := ctx.Value(slotKey{}).(*slot)
	return ok
}

// Create makes the tools/call of ctx answer with t (as a
// CreateTaskResult) instead of the tool's result, which is discarded.
// Call it only once t is durably created: a tasks/get for it resolves.
// It reports false, and does nothing, when the call may not be answered
// with a task (see Declared).
func Create(ctx context.Context, t Task) bool {
	sl, ok := ctx.Value(slotKey{}).(*slot)
	if !ok {
		return false
	}
	sl.mu.Lock()
	sl.task = &t
	sl.mu.Unlock()
	return true
}

// Middleware is the receiving middleware Install adds: tasks/* requests
// of clients that did not declare the extension get -32021, and a
// tools/call of a declaring client may become a task (Create).
func Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch {
		case strings.HasPrefix(method, "tasks/"):
			if !Declares(req) {
				return nil, MissingCapability()
			}
		case method == "tools/call" && Declares(req):
			sl := &slot{}
			res, err := next(context.WithValue(ctx, slotKey{}, sl), method, req)
			sl.mu.Lock()
			t := sl.task
			sl.mu.Unlock()
			if err != nil || t == nil {
				return res, err
			}
			return &CreateTaskResult{ResultType: "task", Task: *t}, nil
		}
		return next(ctx, method, req)
	}
}

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/clip"
	"stepwise.dev/stepwise/internal/service"
	"stepwise.dev/stepwise/internal/workflow"
)

// The ceiling of what the server sends back. A client holds a result
// whole (the TypeScript SDK's stdio reader gives up past 10 MB, ending the
// session); an agent reads it into its context. Every tool result and
// every resource read passes through boundResult or boundResource, the
// one place it is enforced: results that would be larger are refused with
// RESULT_TOO_LARGE, which names the argument or URI that pages them.
const (
	// maxResultBytes bounds a tool result's JSON (its structured content,
	// which the text content repeats) and a resource's contents.
	maxResultBytes = 256 << 10
	// maxSummaryBytes bounds the summary line before a result's JSON.
	maxSummaryBytes = 1 << 10
)

// CodeResultTooLarge: a result would be over the ceiling; the suggested
// action names the paging argument (or URI) that makes it smaller.
const CodeResultTooLarge = "RESULT_TOO_LARGE"

// paging says, per tool, which argument asks for a smaller result and how.
var paging = map[string]struct{ arg, hint string }{
	"run_get":           {"steps_cursor", "read the run's steps page by page: run_get with steps_cursor and a smaller steps_limit; outputs too large to return whole stay in the run, for its later steps"},
	"run_start":         {"wait_seconds", "the run goes on: read it with run_get and steps_cursor, page by page; outputs too large to return whole stay in the run, for its later steps"},
	"run_continue":      {"wait_seconds", "the run goes on: read it with run_get and steps_cursor, page by page; outputs too large to return whole stay in the run, for its later steps"},
	"run_list":          {"limit", "call run_list with a smaller limit and page with cursor"},
	"action_search":     {"limit", "call action_search with a smaller limit or more precise words"},
	"catalog_preview":   {"operations_limit", "call catalog_preview with a smaller operations_limit and page with operations_cursor"},
	"workflow_list":     {"pattern", "call workflow_list with a pattern that matches fewer workflows"},
	"workflow_get":      {"name", "the workflow is larger than a result holds: split it into sub-workflows (a workflow: step calls one)"},
	"workflow_validate": {"content", "the violations are more than a result holds: validate a part of the workflow (a few steps at a time) and fix what it reports"},
	"workflow_save":     {"content", "the violations are more than a result holds: validate a part of the workflow (a few steps at a time) with workflow_validate and fix what it reports"},
	"workflow_plan":     {"steps_limit", "call workflow_plan with a smaller steps_limit and page with steps_cursor"},
}

// resultTooLarge is the error of a result of size bytes that is over the
// ceiling; arg names the argument that makes it smaller, if any.
func resultTooLarge(what string, size int, arg, hint string) *service.Error {
	if hint == "" {
		hint = "ask for less: use the tool's paging or filtering arguments, or read the matching resource"
	}
	return &service.Error{Code: CodeResultTooLarge, Category: code.CategoryValidation, Argument: arg,
		Message:    fmt.Sprintf("the result of %s would be %d bytes, over the %d bytes a result may hold", what, size, maxResultBytes),
		Suggestion: hint}
}

// boundResult turns a tool's output into its result, or refuses it when
// its JSON is over maxResultBytes. The summary line is cut to
// maxSummaryBytes.
func boundResult(tool string, out any) (*mcp.CallToolResult, error) {
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	limit := maxResultBytes
	if sc, ok := out.(stateCarrier); ok {
		limit += sc.stateLen() // bounded on its own (stateless.go)
	}
	if sh, ok := out.(shrinker); ok && len(data) > limit {
		// Rather the result without its largest values than none: a run's
		// status and its pause's token must reach the agent.
		out = sh.shrink()
		if data, err = json.Marshal(out); err != nil {
			return nil, err
		}
	}
	if len(data) > limit {
		p := paging[tool]
		err := resultTooLarge(tool, len(data), p.arg, p.hint)
		if r, ok := out.(interface{ runRef() string }); ok {
			// The run exists: the error names it, so that it can be read.
			err.RunID = r.runRef()
		}
		return nil, err
	}
	var text string
	if sm, ok := out.(summarizer); ok {
		// The summary line, then the JSON: one copy of it, not two.
		sum := clip.Text(sm.Summary(), maxSummaryBytes)
		var b strings.Builder
		b.Grow(len(sum) + 1 + len(data))
		b.WriteString(sum)
		b.WriteByte('\n')
		b.Write(data)
		text = b.String()
	} else {
		text = string(data)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(data)}, nil
}

// shrinker is implemented by outputs that have a smaller form, without
// their largest values, for when the whole is over the ceiling.
type shrinker interface{ shrink() any }

// maxShownValue bounds a value a shrunk result still shows whole.
const maxShownValue = 8 << 10

// shrink is the run result with every output, step output and answer and
// pause context whose JSON is over maxShownValue replaced by a note of its
// size (the values stay in the run, for its later steps).
func (r RunResult) shrink() any {
	if r.Outputs != nil {
		outs := make(map[string]any, len(r.Outputs))
		for k, v := range r.Outputs {
			outs[k] = shownValue(v)
		}
		r.Outputs = outs
	}
	if r.Steps != nil {
		st := *r.Steps
		st.Recent, st.Page = shownSteps(st.Recent), shownSteps(st.Page)
		r.Steps = &st
	}
	if r.Pause != nil {
		p := *r.Pause
		p.Context = shownValue(p.Context)
		r.Pause = &p
	}
	r.Next = "Values over " + strconv.Itoa(maxShownValue) + " bytes are not shown: the result would be over what a result may hold. " + r.Next
	return r
}

// shownSteps is steps with their large outputs and answers replaced.
func shownSteps(steps []service.StepView) []service.StepView {
	if steps == nil {
		return nil
	}
	out := make([]service.StepView, len(steps))
	for i, s := range steps {
		s.Output, s.Answer = shownValue(s.Output), shownValue(s.Answer)
		out[i] = s
	}
	return out
}

// shownValue is v, or a note of its size when its JSON is over
// maxShownValue.
func shownValue(v any) any {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) <= maxShownValue {
		return v
	}
	return fmt.Sprintf("(not shown: %d bytes of JSON, over the %d a shrunk result shows)", len(b), maxShownValue)
}

// addResource registers a resource whose reads are bounded (boundResource).
func (s *Server) addResource(r *mcp.Resource, h mcp.ResourceHandler) {
	s.mcp.AddResource(r, s.boundResource(h))
}

// addResourceTemplate registers a resource template whose reads are
// bounded (boundResource).
func (s *Server) addResourceTemplate(t *mcp.ResourceTemplate, h mcp.ResourceHandler) {
	s.mcp.AddResourceTemplate(t, s.boundResource(h))
}

// boundResource refuses a read whose contents are over maxResultBytes,
// with RESULT_TOO_LARGE as a JSON-RPC error's data (as a prompt's errors).
func (s *Server) boundResource(h mcp.ResourceHandler) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil {
			return res, err
		}
		size := 0
		for _, c := range res.Contents {
			size += len(c.Text) + len(c.Blob)
		}
		if size <= maxResultBytes {
			return res, nil
		}
		uri := clip.Value(req.Params.URI)
		te := toolError(s.log, "", resultTooLarge(uri, size, "", resourceHint(req.Params.URI)))
		te.Context.URI = uri
		data, _ := json.Marshal(te)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: te.ErrorCode + ": " + te.Message, Data: data}
	}
}

// resourceHint says how to read less than a resource that is too large.
func resourceHint(uri string) string {
	switch {
	case strings.HasPrefix(uri, uriActions):
		return "read " + uriActions + " page by page (its next URI), and one action at a time as " + uriActions + "/{name}"
	case strings.HasPrefix(uri, uriRunPrefix):
		return "read the run with run_get, its steps page by page with steps_cursor"
	case strings.HasPrefix(uri, uriWorkflows+"/"):
		return "read the workflow with workflow_get; a file this large is better split into sub-workflows"
	case strings.HasPrefix(uri, uriWorkflows):
		return "list the workflows with workflow_list and a pattern that matches fewer"
	}
	return "read a smaller resource"
}

// Bounds of what an error says about a caller's values: a run id of
// megabytes must not come back in the error, three times.
const (
	// maxMessageBytes bounds an error's message, suggestion and each
	// violation's texts.
	maxMessageBytes = 2 << 10
	// maxViolations bounds the violations an error lists.
	maxViolations = 100
)

// boundError bounds what a tool error carries: the values it names, its
// message and suggestion, its violations.
func boundError(te *ToolError) {
	te.Message = clip.Words(te.Message, maxMessageBytes)
	te.SuggestedAction = clip.Words(te.SuggestedAction, maxMessageBytes)
	c := &te.Context
	for _, f := range []*string{&c.Tool, &c.Prompt, &c.URI, &c.Workflow, &c.CurrentVersion, &c.CurrentRevision,
		&c.RunID, &c.StepID, &c.Name, &c.Argument} {
		*f = clip.Value(*f)
	}
	c.Path = clipPointer(c.Path)
	if len(c.Closest) > 0 {
		// A copy: the slice is the internal error's.
		closest := make([]string, min(len(c.Closest), 10))
		for i := range closest {
			closest[i] = clip.Value(c.Closest[i])
		}
		c.Closest = closest
	}
	if len(te.Violations) > maxViolations {
		te.ViolationsTotal = len(te.Violations)
		te.Violations = te.Violations[:maxViolations:maxViolations]
	}
	if len(te.Violations) > 0 {
		vs := make([]workflow.Violation, len(te.Violations))
		for i, v := range te.Violations {
			v.Path, v.Rule = clipPointer(v.Path), clip.Value(v.Rule)
			v.Message, v.Hint = clip.Words(v.Message, maxMessageBytes), clip.Words(v.Hint, maxMessageBytes)
			v.Expected, v.Actual = clip.Words(v.Expected, maxMessageBytes/4), clip.Words(v.Actual, maxMessageBytes/4)
			vs[i] = v
		}
		te.Violations = vs
	}
}

// clipPointer bounds a JSON pointer: each of its segments (a key may be a
// caller's) cut like a value, the whole to maxMessageBytes/2; a deep
// pointer of short segments stays whole.
func clipPointer(p string) string {
	if len(p) <= clip.ValueBytes {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = clip.Value(s)
	}
	return clip.Text(strings.Join(segs, "/"), maxMessageBytes/2)
}

// boundReplies bounds what every request gets back but tool results and
// resources (bounded where they are made): a prompt's messages, as a
// resource's contents, and the JSON-RPC errors, the SDK's own included (an
// unknown tool, prompt or resource is named in its error), whose message
// and the texts of their data are cut like a tool error's, so that a
// caller's value of megabytes does not come back whole.
func (s *Server) boundReplies(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := res.(*mcp.GetPromptResult); ok && err == nil {
			size := 0
			for _, m := range p.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					size += len(tc.Text)
				}
			}
			if size > maxResultBytes {
				name := ""
				if gp, ok := req.GetParams().(*mcp.GetPromptParams); ok {
					name = gp.Name
				}
				return nil, promptError(s.log, name, resultTooLarge("the prompt", size, "",
					"read the workflow with workflow_get and work on it without the prompt; a workflow this large is better split into sub-workflows"))
			}
		}
		if err == nil {
			return res, nil
		}
		var we *jsonrpc.Error
		if !errors.As(err, &we) {
			if len(err.Error()) <= maxMessageBytes {
				return res, err
			}
			// As the SDK would send it: an internal error with its text.
			return res, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: clip.Words(err.Error(), maxMessageBytes)}
		}
		if len(we.Message) <= maxMessageBytes && len(we.Data) <= maxMessageBytes {
			return res, err
		}
		bounded := &jsonrpc.Error{Code: we.Code, Message: clip.Words(we.Message, maxMessageBytes), Data: we.Data}
		if len(we.Data) > maxMessageBytes {
			var data any
			if json.Unmarshal(we.Data, &data) == nil {
				bounded.Data, _ = json.Marshal(clipStrings(data))
			}
			if len(bounded.Data) > 4*maxMessageBytes {
				bounded.Data = nil
			}
		}
		return res, bounded
	}
}

// clipStrings cuts every string of a JSON value (clip.Words).
func clipStrings(v any) any {
	switch v := v.(type) {
	case string:
		return clip.Words(v, maxMessageBytes)
	case []any:
		for i := range v {
			v[i] = clipStrings(v[i])
		}
	case map[string]any:
		for k, e := range v {
			v[k] = clipStrings(e)
		}
	}
	return v
}

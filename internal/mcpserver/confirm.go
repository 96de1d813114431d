package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// Codes of destructive calls that were not confirmed.
const (
	CodeConfirmationRequired = "CONFIRMATION_REQUIRED"
	CodeConfirmationDeclined = "CONFIRMATION_DECLINED"
)

// confirmState marks a tool call retried with the person's confirmation
// (multi round-trip requests).
const confirmState = "confirm"

// confirmDestructive makes sure a person agreed to a destructive call
// before it changes anything. When the client can elicit, the person is
// asked (whatever the arguments say: an agent cannot confirm for them);
// otherwise the call needs confirm: true, which the agent sets only after
// asking the person itself. what describes the change ("delete workflow
// deploy").
//
// It returns nil when confirmed; an *inputNeeded to send the question in
// the tool result (protocol 2026-07-28); or a structured error that
// changes nothing.
func (s *Server) confirmDestructive(ctx context.Context, req *mcp.CallToolRequest, confirm bool, what string) error {
	if req.Params.RequestState == confirmState {
		res, _ := req.Params.InputResponses[confirmState].(*mcp.ElicitResult)
		return confirmedBy(res, what)
	}
	ss := req.Session
	if ss == nil || !canElicitForm(req) {
		if confirm {
			return nil
		}
		return &service.Error{Code: CodeConfirmationRequired, Category: code.CategoryValidation, Argument: "confirm",
			Message:    "this would " + what + "; it needs the person's confirmation",
			Suggestion: "ask the person; if they agree, call again with confirm: true"}
	}
	params := &mcp.ElicitParams{Mode: "form",
		Message: "stepwise is about to " + what + ". Go ahead?",
		RequestedSchema: map[string]any{"type": "object", "required": []string{"confirm"}, "properties": map[string]any{
			"confirm": map[string]any{"type": "boolean", "title": "Yes, " + what, "default": false}}}}
	if !legacy(req) {
		return &inputNeeded{requests: mcp.InputRequestMap{confirmState: params}, state: confirmState}
	}
	res, err := ss.Elicit(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("confirmation by elicitation failed", "what", what, "error", err)
		res = nil
	}
	return confirmedBy(res, what)
}

// confirmedBy reads the person's answer to a confirmation.
func confirmedBy(res *mcp.ElicitResult, what string) error {
	if res != nil && res.Action == "accept" && res.Content["confirm"] == true {
		return nil
	}
	return &service.Error{Code: CodeConfirmationDeclined, Category: code.CategoryValidation, Argument: "confirm",
		Message:    "the person did not confirm: nothing was changed (" + what + ")",
		Suggestion: "do not retry unless the person asks for it"}
}

// canElicitForm reports whether the calling client declared form
// elicitation.
func canElicitForm(req *mcp.CallToolRequest) bool {
	c := req.ClientCapabilities()
	if c == nil || c.Elicitation == nil {
		return false
	}
	caps := c.Elicitation
	return caps.Form != nil || caps.URL == nil // an empty capability means form
}

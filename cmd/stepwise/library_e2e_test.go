//go:build unix

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const e2eDraft = `version: 1
name: hello
tags: [demo]
inputs:
  who: {type: string}
steps:
  - id: say
    uses: log
    with: {message: 'hi ${{ inputs.whom }}'}
outputs:
  said: ${{ steps.say.output.message }}
`

// libraryFlow authors, saves, plans, runs, renames and deletes a workflow
// through the MCP tools of the built binary.
func libraryFlow(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	r, isErr := callTool(t, cs, "workflow_save", map[string]any{"content": e2eDraft, "draft": true}, nil)
	if isErr || !r.Draft || r.Valid || len(r.Violations) == 0 {
		t.Fatalf("save draft: %+v", r)
	}
	if r, isErr = callTool(t, cs, "workflow_save", map[string]any{"content": e2eDraft}, nil); !isErr || r.ErrorCode != "WORKFLOW_INVALID" {
		t.Fatalf("save invalid: %+v", r)
	}
	fixed := strings.Replace(e2eDraft, "inputs.whom", "inputs.who", 1)
	if r, isErr = callTool(t, cs, "workflow_save", map[string]any{"content": fixed}, nil); isErr || !r.Valid || !r.DraftRemoved {
		t.Fatalf("save fixed: %+v", r)
	}
	version := r.Version
	if r, isErr = callTool(t, cs, "workflow_save", map[string]any{"content": strings.Replace(fixed, "[demo]", "[demo, x]", 1)}, nil); !isErr || r.ErrorCode != "VERSION_CONFLICT" || r.Context.CurrentVersion != version {
		t.Fatalf("save over: %+v", r)
	}
	if r, isErr = callTool(t, cs, "workflow_plan", map[string]any{"name": "hello"}, nil); isErr || r.Ready || len(r.Missing) != 1 || r.Missing[0] != "who" {
		t.Fatalf("plan without inputs: %+v", r)
	}
	r, isErr = callTool(t, cs, "workflow_plan", map[string]any{"name": "hello", "inputs": map[string]any{"who": "Ada"}}, nil)
	var steps []struct {
		ID   string         `json:"id"`
		With map[string]any `json:"with"`
	}
	_ = json.Unmarshal(r.Steps, &steps)
	if isErr || !r.Ready || len(steps) != 1 || steps[0].With["message"] != "hi Ada" {
		t.Fatalf("plan: %+v %s", r, r.Steps)
	}
	if r, isErr = callTool(t, cs, "run_start", map[string]any{"workflow": "hello", "inputs": map[string]any{"who": "Ada"}}, nil); isErr || r.Status != "succeeded" || r.Outputs["said"] != "hi Ada" {
		t.Fatalf("run: %+v", r)
	}
	if r, isErr = callTool(t, cs, "workflow_rename", map[string]any{"name": "hello", "new_name": "greeting"}, nil); isErr || r.Name != "greeting" {
		t.Fatalf("rename: %+v", r)
	}
	if r, isErr = callTool(t, cs, "workflow_delete", map[string]any{"name": "greeting"}, nil); !isErr || r.ErrorCode != "CONFIRMATION_REQUIRED" {
		t.Fatalf("delete unconfirmed: %+v", r)
	}
	if r, isErr = callTool(t, cs, "workflow_delete", map[string]any{"name": "greeting", "confirm": true}, nil); isErr {
		t.Fatalf("delete: %+v", r)
	}
	if r, isErr = callTool(t, cs, "workflow_get", map[string]any{"name": "../etc/passwd"}, nil); !isErr || r.Category != "security" {
		t.Fatalf("unsafe name: %+v", r)
	}
}

package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/internal/service"
)

const planDeploy = `version: 1
name: deploy
description: Deploys to a region.
inputs:
  region: {type: string, enum: [fsn1, nbg1], description: Where to deploy}
  replicas: {type: integer, default: 2}
steps:
  - id: create
    uses: transform
    with: {value: {region: '${{ inputs.region }}', replicas: '${{ inputs.replicas }}'}}
  - id: announce
    uses: log
    with: {message: 'deployed ${{ steps.create.output.region }} to ${{ inputs.region }}'}
`

// planText calls workflow_plan and returns its text content too.
func planText(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "workflow_plan", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// The acceptance case: a missing required input makes the plan not ready
// and is named; once supplied the plan is ready with the steps rendered.
// Nothing is recorded either way.
func TestWorkflowPlanNamesMissingInputsThenIsReady(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	if err := os.WriteFile(filepath.Join(e.svc.Home.WorkflowsDir(), "deploy.yaml"), []byte(planDeploy), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := e.connect(nil)

	var p WorkflowPlanOut
	if call(t, cs, "workflow_plan", map[string]any{"name": "deploy"}, &p) {
		t.Fatalf("workflow_plan returned an error: %+v", p)
	}
	if !p.Valid || p.Ready || len(p.Missing) != 1 || p.Missing[0] != "region" {
		t.Fatalf("plan: %s", toText(p))
	}
	if len(p.Violations) != 1 || p.Violations[0].Path != "/inputs/region" || !strings.Contains(p.Violations[0].Message, `"region" is required`) {
		t.Fatalf("violations: %+v", p.Violations)
	}
	if !strings.Contains(p.Next, "give region") {
		t.Fatalf("next: %q", p.Next)
	}
	text, _ := planText(t, cs, map[string]any{"name": "deploy"})
	if !strings.HasPrefix(text, "Not ready (2 steps: 2 run, 0 skipped, 0 decided at run time). Inputs: give region") {
		t.Fatalf("summary: %s", text)
	}

	p = WorkflowPlanOut{}
	if call(t, cs, "workflow_plan", map[string]any{"name": "deploy", "inputs": map[string]any{"region": "nbg1"}}, &p) {
		t.Fatalf("workflow_plan returned an error: %+v", p)
	}
	if !p.Ready || len(p.Violations) != 0 || len(p.Steps) != 2 {
		t.Fatalf("plan: %s", toText(p))
	}
	if got := toText(p.Steps[0].With); got != `{"value":{"region":"nbg1","replicas":2}}` {
		t.Fatalf("create's with: %s", got)
	}
	if got := p.Steps[1].With.(map[string]any)["message"]; got != "deployed ${{ steps.create.output.region }} to nbg1" {
		t.Fatalf("announce's message: %v", got)
	}
	if !strings.Contains(p.Next, `run_start {workflow: "deploy", inputs}`) {
		t.Fatalf("next: %q", p.Next)
	}

	var runs RunListOut
	if call(t, cs, "run_list", map[string]any{}, &runs) || len(runs.Runs) != 0 {
		t.Fatalf("a plan started runs: %+v", runs)
	}
}

func TestWorkflowPlanAnswersForInvalidContentAndRefusesUnsafeNames(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)

	var p WorkflowPlanOut
	if call(t, cs, "workflow_plan", map[string]any{"content": "version: 1\nname: x\nsteps:\n  - id: a\n    uses: nope\n"}, &p) {
		t.Fatal("an invalid workflow is a tool error")
	}
	if p.Valid || p.Ready || len(p.Violations) != 1 || p.Violations[0].Rule != "unknown-action" || p.Violations[0].Line != 5 {
		t.Fatalf("plan: %s", toText(p))
	}

	for _, tc := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"name": "../greet"}, "UNSAFE_NAME"},
		{map[string]any{"name": "/etc/passwd"}, "UNSAFE_NAME"},
		{map[string]any{"name": "nope"}, "WORKFLOW_NOT_FOUND"},
		{map[string]any{"name": "greet", "content": "version: 1"}, "ARGUMENTS_INVALID"},
		{map[string]any{}, "ARGUMENTS_INVALID"},
	} {
		var te ToolError
		if !call(t, cs, "workflow_plan", tc.args, &te) || te.ErrorCode != tc.code {
			t.Errorf("%v: %+v, want %s", tc.args, te, tc.code)
		}
		if tc.code == "UNSAFE_NAME" && te.Category != "security" {
			t.Errorf("%v: category %s", tc.args, te.Category)
		}
	}
}

func TestWorkflowPlanIsAnnotatedReadOnly(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == "workflow_plan" {
			if a := tool.Annotations; a == nil || !a.ReadOnlyHint || a.DestructiveHint != nil && *a.DestructiveHint {
				t.Fatalf("annotations %+v", a)
			}
			return
		}
	}
	t.Fatal("workflow_plan is not listed")
}

// A plan of more steps than a result holds comes in pages: every step is
// reached once, in order, each page under the result ceiling, and the
// summary counts them all.
func TestPlanStepsArePaged(t *testing.T) {
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	var b strings.Builder
	b.WriteString("version: 1\nname: long\nsteps:\n")
	const n = 2300
	for i := range n {
		fmt.Fprintf(&b, "  - id: s%d\n    uses: log\n    with: {message: 'step %d of a long plan, with some words to make it weigh'}\n", i, i)
	}
	var ids []string
	cursor := ""
	pages := 0
	for {
		args := map[string]any{"content": b.String()}
		if cursor != "" {
			args["steps_cursor"] = cursor
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "workflow_plan", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("page %d: %v %+v", pages, err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !strings.Contains(text, fmt.Sprintf("%d steps: %d run", n, n)) {
			t.Errorf("page %d: the summary does not count every step: %.200s", pages, text)
		}
		data, _ := json.Marshal(res.StructuredContent)
		if len(data) > maxResultBytes {
			t.Fatalf("page %d: %d bytes, over the ceiling", pages, len(data))
		}
		var out struct {
			Steps      []struct{ ID string } `json:"steps"`
			StepsTotal int                   `json:"steps_total"`
			StepsFrom  int                   `json:"steps_from"`
			Next       string                `json:"steps_next_cursor"`
		}
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		if out.StepsTotal != n || out.StepsFrom != len(ids) || len(out.Steps) == 0 || len(out.Steps) > maxPlanSteps {
			t.Fatalf("page %d: total %d, from %d, %d steps (read %d so far)", pages, out.StepsTotal, out.StepsFrom, len(out.Steps), len(ids))
		}
		for _, s := range out.Steps {
			ids = append(ids, s.ID)
		}
		pages++
		if cursor = out.Next; cursor == "" {
			break
		}
	}
	if len(ids) != n || pages < 3 {
		t.Fatalf("%d steps in %d pages, want %d in at least 3", len(ids), pages, n)
	}
	for i, id := range ids {
		if id != fmt.Sprintf("s%d", i) {
			t.Fatalf("step %d is %s", i, id)
		}
	}
	var te ToolError
	if !call(t, cs, "workflow_plan", map[string]any{"content": b.String(), "steps_cursor": "bogus"}, &te) || te.ErrorCode != CodeArgumentsInvalid || te.Context.Argument != "steps_cursor" {
		t.Fatalf("a bad cursor: %+v", te)
	}
}

package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// WorkflowPlanIn are workflow_plan's arguments.
type WorkflowPlanIn struct {
	Name    string         `json:"name,omitempty" jsonschema:"a library workflow or draft; or content"`
	Content string         `json:"content,omitempty" jsonschema:"YAML or JSON text; or name"`
	Inputs  map[string]any `json:"inputs,omitempty"`
	// StepsCursor and StepsLimit page the plan's steps.
	StepsCursor string `json:"steps_cursor,omitempty" jsonschema:"steps_next_cursor of the previous plan"`
	StepsLimit  int    `json:"steps_limit,omitempty" jsonschema:"default 500, max 1000"`
}

// Plan step pages: a plan holds at most maxPlanSteps steps, and no more
// than fit planPageBytes of JSON, so a plan of any workflow fits a result.
const (
	defaultPlanSteps = 500
	maxPlanSteps     = 1000
	planPageBytes    = 192 << 10
)

// WorkflowPlanOut is workflow_plan's result.
type WorkflowPlanOut struct {
	*service.Plan
	// StepsTotal counts the plan's steps; Steps holds those from StepsFrom
	// on, and StepsNextCursor reads the next page.
	StepsTotal      int    `json:"steps_total"`
	StepsFrom       int    `json:"steps_from,omitempty"`
	StepsNextCursor string `json:"steps_next_cursor,omitempty"`
	// Next says in one sentence what to do now.
	Next string `json:"next"`
	// counts of every step's decision, the pages' as well.
	counts map[string]int
}

// Summary implements summarizer.
func (o WorkflowPlanOut) Summary() string {
	p := o.Plan
	if !p.Valid {
		return fmt.Sprintf("Invalid: %d violations. %s", len(p.Violations), o.Next)
	}
	count := o.counts
	steps := fmt.Sprintf("%d steps: %d run, %d skipped, %d decided at run time", o.StepsTotal,
		count[service.DecisionRun], count[service.DecisionSkip], count[service.DecisionRuntime])
	if n := count[service.DecisionError]; n > 0 {
		steps += fmt.Sprintf(", %d fail", n)
	}
	if p.Draft {
		steps = "the draft; " + steps
	}
	if p.Ready {
		return fmt.Sprintf("Ready (%s). %s", steps, o.Next)
	}
	return fmt.Sprintf("Not ready (%s). %s", steps, o.Next)
}

// planNext is the advice that ends a plan.
func planNext(p *service.Plan, in WorkflowPlanIn) string {
	if !p.Valid {
		return "Fix each violation (path, line, column, hint) and plan again."
	}
	if p.Ready {
		if in.Name != "" {
			return fmt.Sprintf("Start it with run_start {workflow: %q, inputs} with the same inputs.", in.Name)
		}
		return "Start it with run_start {definition, inputs} with the same content and inputs."
	}
	var what []string
	if len(p.Missing) > 0 {
		what = append(what, "give "+strings.Join(p.Missing, ", ")+" (ask the person for what you do not know)")
	}
	var invalid []string
	for _, i := range p.Inputs {
		if !i.Valid && i.Source != code.SourceMissing && len(i.Problems) > 0 {
			invalid = append(invalid, i.Name)
		}
	}
	if len(invalid) > 0 {
		what = append(what, "fix "+strings.Join(invalid, ", "))
	}
	if len(p.UnknownInputs) > 0 {
		what = append(what, "drop "+strings.Join(p.UnknownInputs, ", ")+" (not declared)")
	}
	if len(what) == 0 {
		return "It cannot start as it is: see violations."
	}
	return "Inputs: " + strings.Join(what, "; ") + ". Then plan again."
}

func (s *Server) addPlanTool() {
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	addTool(s, &mcp.Tool{Name: "workflow_plan", Title: "Plan a run", Annotations: readOnly,
		Description: "Preview a run, starting nothing: name or content, and inputs as for run_start. Returns ready (run_start would start), each input's value and source, missing and unknown inputs, violations, and each step's decision (run, skip, runtime, error) with its reason and rendered with/prompt. Shows which inputs to ask for."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in WorkflowPlanIn) (WorkflowPlanOut, error) {
			req := service.PlanRequest{Name: in.Name, Inputs: in.Inputs}
			switch {
			case in.Content != "" && in.Name != "":
				return WorkflowPlanOut{}, argumentsError("content", "give content or name, not both")
			case in.Content != "":
				req.Content = []byte(in.Content)
			case in.Name == "":
				return WorkflowPlanOut{}, argumentsError("name", "give name (a library workflow) or content (YAML or JSON text)")
			}
			p, err := s.svc.Plan(ctx, req)
			if err != nil {
				return WorkflowPlanOut{}, err
			}
			return pagePlan(p, in)
		})
}

// pagePlan is the plan with the page of its steps that in asks for.
func pagePlan(p *service.Plan, in WorkflowPlanIn) (WorkflowPlanOut, error) {
	out := WorkflowPlanOut{StepsTotal: len(p.Steps), Next: planNext(p, in), counts: map[string]int{}}
	for _, s := range p.Steps {
		out.counts[s.Decision]++
	}
	page, from, next, err := service.Page(p.Steps, in.StepsCursor, in.StepsLimit, defaultPlanSteps, maxPlanSteps, planPageBytes)
	if err != nil {
		return WorkflowPlanOut{}, argumentsError("steps_cursor", "the steps cursor is not valid: use steps_next_cursor exactly as returned")
	}
	paged := *p
	paged.Steps = page
	out.Plan, out.StepsFrom, out.StepsNextCursor = &paged, from, next
	if next != "" {
		out.Next = fmt.Sprintf("Steps %d–%d of %d are shown: call workflow_plan again with steps_cursor: %q for the next ones. %s", from+1, from+len(page), len(p.Steps), next, out.Next)
	}
	return out, nil
}

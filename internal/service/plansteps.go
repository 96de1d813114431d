package service

import (
	"fmt"
	"strings"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/workflow"
)

// Decisions of a planned step: whether it runs, as far as the values known
// before the run (inputs, environment) tell.
const (
	// DecisionRun: its if holds (or it has none) and nothing known keeps
	// the run from reaching it.
	DecisionRun = "run"
	// DecisionSkip: its if is false, its group is skipped, a switch jumps
	// over it, or a step before it fails the run.
	DecisionSkip = "skip"
	// DecisionRuntime: it depends on what happens during the run (step
	// outputs, answers, run fields, items).
	DecisionRuntime = "runtime"
	// DecisionError: its if cannot be evaluated with the known values, so
	// the step fails when it is reached.
	DecisionError = "error"
)

// Decisions of a switch case (besides DecisionRuntime and DecisionError).
const (
	CaseTaken    = "taken"
	CaseNotTaken = "not_taken"
)

// PlanStep is one step of a plan.
type PlanStep struct {
	ID string `json:"id"`
	// Path is the step's JSON pointer in the document (/steps/2/steps/0).
	Path string `json:"path"`
	// Parent is the id of the parallel or foreach step that holds it.
	Parent string `json:"parent,omitempty"`
	Kind   string `json:"kind"`
	Title  string `json:"title,omitempty"`
	// Uses names the action of a uses step; Workflow the sub-workflow.
	Uses     string `json:"uses,omitempty"`
	Workflow string `json:"workflow,omitempty"`
	// If is the condition as written.
	If string `json:"if,omitempty"`
	// Decision is run, skip, runtime or error; Reason says why.
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
	// With, Prompt, Fields, Instructions, Context, Message and Sleep are the
	// step's arguments rendered with the known values; an expression that
	// reads something known only at run time keeps its ${{ … }} text.
	With         any         `json:"with,omitempty"`
	Prompt       string      `json:"prompt,omitempty"`
	Fields       []PlanField `json:"fields,omitempty"`
	Persona      string      `json:"persona,omitempty"`
	Instructions string      `json:"instructions,omitempty"`
	Context      any         `json:"context,omitempty"`
	Message      string      `json:"message,omitempty"`
	Sleep        string      `json:"sleep,omitempty"`
	// Foreach is a foreach step's items: the list when the inputs give it
	// (ItemsKnown), else the expression rendered as far as known.
	Foreach    any  `json:"foreach,omitempty"`
	ItemsKnown bool `json:"items_known,omitempty"`
	// Cases are a switch's cases in order, each with its decision.
	Cases []PlanCase `json:"cases,omitempty"`
	// Problems are what will fail the step although the workflow is valid
	// (an argument whose expression fails with the known values).
	Problems []string `json:"problems,omitempty"`
}

// PlanField is one question of a form.
type PlanField struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Prompt string `json:"prompt"`
}

// PlanCase is one case of a switch.
type PlanCase struct {
	If   string `json:"if,omitempty"`
	Goto string `json:"goto"`
	// Decision is taken, not_taken, runtime or error.
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// stepPlanner works out the steps of a plan. Conditions are decided with
// every input that has a valid value (secrets included: only a decision
// comes out) and the environment; arguments are rendered with the
// non-secret inputs only. The environment is not rendered: a plan is a
// read-only look that must not become a way to read the server's
// variables, which may hold credentials the workflow does not mark secret.
type stepPlanner struct {
	decideEnv, renderEnv map[string]any
	values, clear        map[string]any
	mask                 *secret.Masker
	// inputProblem is the engine's check of an action's rendered input.
	inputProblem func(uses string, input map[string]any) string
	out          []PlanStep
	steps        []*workflow.Step
	// owns and endings hold each step's own verdict and ending once
	// worked out.
	owns    map[*workflow.Step]verdict
	endings map[*workflow.Step]ending
}

// reach is whether the run gets to a step, as far as is known.
type reach struct{ state, reason string }

func newStepPlanner(wf *workflow.Workflow, values, envVars map[string]any, mask *secret.Masker,
	inputProblem func(uses string, input map[string]any) string) *stepPlanner {
	clear := map[string]any{}
	for name, v := range values {
		if in := wf.Inputs[name]; in != nil && !in.Secret {
			clear[name] = v
		}
	}
	return &stepPlanner{
		decideEnv: map[string]any{"inputs": values, "env": envVars},
		renderEnv: map[string]any{"inputs": clear},
		values:    values, clear: clear, mask: mask, inputProblem: inputProblem, steps: wf.Steps,
		owns: map[*workflow.Step]verdict{}, endings: map[*workflow.Step]ending{},
	}
}

func (p *stepPlanner) plan() []PlanStep {
	p.planList(p.steps, "", reach{state: DecisionRun})
	return p.out
}

func (p *stepPlanner) decidable(r expr.Ref) bool {
	switch r.Root {
	case "inputs":
		if len(r.Path) == 0 {
			return false
		}
		_, ok := p.values[r.Path[0]]
		return ok
	case "env":
		return true
	}
	return false
}

func (p *stepPlanner) renderable(r expr.Ref) bool {
	if r.Root != "inputs" || len(r.Path) == 0 {
		return false
	}
	_, ok := p.clear[r.Path[0]]
	return ok
}

// planList plans a list of steps run in order (the top level, a foreach
// body, one parallel branch), which the run reaches as in says.
func (p *stepPlanner) planList(steps []*workflow.Step, parent string, in reach) {
	nodes := p.analyze(steps)
	reaches := flowReaches(nodes, in)
	for i, n := range nodes {
		idx := len(p.out)
		p.out = append(p.out, p.step(n, parent, reaches[i]))
		ps := &p.out[idx]
		inner := groupReach(ps)
		switch n.s.Kind() {
		case workflow.KindParallel:
			for _, b := range n.s.Parallel {
				p.planList([]*workflow.Step{b}, n.s.ID, inner)
			}
		case workflow.KindForeach:
			if items, _ := ps.Foreach.([]any); ps.ItemsKnown && len(items) == 0 && inner.state != DecisionSkip {
				inner = reach{DecisionSkip, fmt.Sprintf("foreach %s has no items", n.s.ID)}
			}
			p.planList(n.s.Steps, n.s.ID, inner)
		}
	}
}

// step plans one step: its decision, cases and rendered arguments.
func (p *stepPlanner) step(n node, parent string, rc reach) PlanStep {
	s := n.s
	ps := PlanStep{ID: s.ID, Path: s.Path, Parent: parent, Kind: s.Kind(), Title: s.Title, Uses: s.Uses, Workflow: s.Workflow, If: string(s.If),
		Cases: n.cases}
	ps.Decision, ps.Reason = decide(rc, n.own)
	if ps.Decision == DecisionSkip {
		for i := range ps.Cases {
			ps.Cases[i].Decision, ps.Cases[i].Reason = CaseNotTaken, "the switch is skipped"
		}
	}
	p.render(&ps, s)
	return ps
}

// verdict is what is known of a condition: "true", "false", runtime or
// error, and why.
type verdict struct{ state, reason string }

func (p *stepPlanner) cond(c workflow.Cond) verdict {
	if c == "" {
		return verdict{state: "true"}
	}
	src, _, err := expr.Condition(string(c))
	if err != nil {
		return verdict{DecisionError, p.mask.Mask(err.Error())}
	}
	unknown, err := expr.Unknown(src, p.decidable)
	if err != nil {
		return verdict{DecisionError, p.mask.Mask(err.Error())}
	}
	if len(unknown) > 0 {
		return verdict{DecisionRuntime, "reads " + p.describe(unknown)}
	}
	ok, err := engine.EvalCondition(string(c), p.decideEnv)
	if err != nil {
		return verdict{DecisionError, p.mask.Mask(err.Error())}
	}
	return verdict{state: fmt.Sprint(ok)}
}

// describe lists references for a reason, saying which inputs lack a
// value (they are what the caller can still give).
func (p *stepPlanner) describe(refs []expr.Ref) string {
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.String()
		if r.Root == "inputs" && len(r.Path) > 0 {
			if _, ok := p.values[r.Path[0]]; !ok {
				parts[i] += " (no valid value yet)"
			}
		}
	}
	return strings.Join(parts, ", ")
}

// decide combines whether the run reaches a step with its own condition.
func decide(rc reach, v verdict) (string, string) {
	switch {
	case rc.state == DecisionSkip:
		return DecisionSkip, rc.reason
	case v.state == DecisionError:
		return DecisionError, "its if cannot be evaluated with the known values (the step fails when reached): " + v.reason
	case v.state == "false":
		return DecisionSkip, "its if is false"
	case v.state == DecisionRuntime:
		reason := "its if " + v.reason
		if rc.state == DecisionRuntime {
			reason += "; " + rc.reason
		}
		return DecisionRuntime, reason
	case rc.state == DecisionRuntime:
		return DecisionRuntime, rc.reason
	}
	return DecisionRun, ""
}

// groupReach is whether the run gets to the steps inside a group.
func groupReach(ps *PlanStep) reach {
	switch ps.Decision {
	case DecisionSkip:
		return reach{DecisionSkip, fmt.Sprintf("%s %s is skipped", ps.Kind, ps.ID)}
	case DecisionRuntime:
		return reach{DecisionRuntime, fmt.Sprintf("whether %s %s runs is decided at run time", ps.Kind, ps.ID)}
	case DecisionError:
		return reach{DecisionSkip, fmt.Sprintf("%s %s fails before it", ps.Kind, ps.ID)}
	}
	return reach{state: DecisionRun}
}

// cases decides a switch's cases in order: the first that holds is taken.
func (p *stepPlanner) cases(s *workflow.Step) []PlanCase {
	out := make([]PlanCase, 0, len(s.Switch))
	closed, open := "", false // closed: why no later case is taken; open: an earlier case may be
	for _, c := range s.Switch {
		pc := PlanCase{If: string(c.If), Goto: c.Goto}
		switch {
		case closed != "":
			pc.Decision, pc.Reason = CaseNotTaken, closed
		default:
			v := p.cond(c.If)
			switch v.state {
			case "true":
				closed = "an earlier case is taken"
				pc.Decision = CaseTaken
				if open {
					pc.Decision, pc.Reason = DecisionRuntime, "taken unless an earlier case is"
				}
			case "false":
				pc.Decision, pc.Reason = CaseNotTaken, "its if is false"
			case DecisionRuntime:
				open = true
				pc.Decision, pc.Reason = DecisionRuntime, "its if "+v.reason
			default:
				closed = "the switch fails at an earlier case"
				pc.Decision, pc.Reason = DecisionError, "its if cannot be evaluated with the known values (the switch fails when reached): "+v.reason
			}
		}
		out = append(out, pc)
	}
	return out
}

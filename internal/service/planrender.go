package service

import (
	"fmt"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/workflow"
)

// render fills a planned step's arguments, rendered with the known values
// the way the run renders them. An expression that fails with known values
// becomes a problem of the step (the run would fail it there) and the
// argument stays as written.
func (p *stepPlanner) render(ps *PlanStep, s *workflow.Step) {
	value := func(field string, v any) any {
		out, _, err := p.renderKnown(ps, field, v)
		if err != nil {
			return p.mask.MaskValue(v)
		}
		return p.mask.MaskValue(out)
	}
	text := func(field, t string) string { return expr.Text(value(field, t)) }
	switch s.Kind() {
	case workflow.KindUses:
		p.renderAction(ps, s)
	case workflow.KindWorkflow:
		if s.With != nil {
			ps.With = value("with", s.With)
		}
	case workflow.KindAsk:
		ps.Prompt = text("prompt", s.Ask.Prompt)
		for _, f := range s.Ask.Fields {
			ps.Fields = append(ps.Fields, PlanField{Name: f.Name, Type: f.QuestionType(), Prompt: text("fields."+f.Name+".prompt", f.Prompt)})
		}
	case workflow.KindAgent:
		ps.Persona = s.Agent.Persona
		ps.Instructions = text("instructions", s.Agent.Instructions)
		if s.Agent.Context != nil {
			ps.Context = value("context", s.Agent.Context)
		}
	case workflow.KindFail:
		ps.Message = text("fail", *s.Fail)
	case workflow.KindSleep:
		if s.Sleep.Until != "" {
			ps.Sleep = "until " + text("sleep.until", s.Sleep.Until)
		} else {
			ps.Sleep = text("sleep", s.Sleep.Duration)
		}
	case workflow.KindForeach:
		p.items(ps, s)
	}
}

// renderKnown renders a value with the known values; an error becomes a
// problem of the step, named after the field.
func (p *stepPlanner) renderKnown(ps *PlanStep, field string, v any) (any, []expr.Ref, error) {
	out, unknown, err := expr.RenderValueKnown(v, p.renderEnv, p.renderable)
	if err != nil {
		ps.Problems = append(ps.Problems, field+": "+p.mask.Mask(err.Error()))
	}
	return out, unknown, err
}

// renderAction renders a uses step's with; when it reads only known values
// it is also checked against the action's input schema, as the run will
// check it.
func (p *stepPlanner) renderAction(ps *PlanStep, s *workflow.Step) {
	var input map[string]any
	if s.With != nil {
		out, unknown, err := p.renderKnown(ps, "with", s.With)
		if err != nil {
			ps.With = p.mask.MaskValue(s.With)
			return
		}
		ps.With = p.mask.MaskValue(out)
		if len(unknown) > 0 {
			return
		}
		input, _ = out.(map[string]any)
	}
	if msg := p.inputProblem(s.Uses, input); msg != "" {
		ps.Problems = append(ps.Problems, p.mask.Mask(msg))
	}
}

// items fills a foreach's items when the known values give them;
// otherwise the expression rendered as far as known.
func (p *stepPlanner) items(ps *PlanStep, s *workflow.Step) {
	items, known, err := p.foreachItems(s)
	switch {
	case err != nil:
		ps.Problems = append(ps.Problems, p.mask.Mask(err.Error()))
		ps.Foreach = p.mask.MaskValue(s.Foreach)
	case known:
		ps.Foreach, ps.ItemsKnown = p.mask.MaskValue(items), true
	default:
		partial, _, _ := expr.RenderValueKnown(s.Foreach, p.renderEnv, p.renderable)
		ps.Foreach = p.mask.MaskValue(partial)
	}
}

// foreachItems computes a foreach's items with the engine's own rule for
// what a foreach yields, when the known values give them (known); an error
// is what would fail the step.
func (p *stepPlanner) foreachItems(s *workflow.Step) ([]any, bool, error) {
	_, unknown, err := expr.RenderValueKnown(s.Foreach, p.renderEnv, p.renderable)
	if err != nil {
		return nil, false, fmt.Errorf("foreach: %w", err)
	}
	if len(unknown) > 0 {
		return nil, false, nil
	}
	items, err := engine.ForeachItems(s, p.renderEnv)
	if err != nil {
		return nil, false, err
	}
	if items == nil {
		items = []any{}
	}
	return items, true, nil
}

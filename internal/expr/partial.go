package expr

import (
	"maps"
	"slices"
	"strings"
)

// Partial rendering serves previews (a workflow's plan before its run):
// some values are known (the inputs), others exist only at run time (step
// outputs). An expression that reads anything unknown is left as it was
// written, so the result shows what is known and names what is not, instead
// of failing on the first step output.

// Unknown returns the references of an expression for which known reports
// false, in order of appearance, each once (by root and path).
func Unknown(src string, known func(Ref) bool) ([]Ref, error) {
	a, err := Analyze(src)
	if err != nil {
		return nil, err
	}
	var out []Ref
	for _, r := range a.Refs {
		if !known(r) {
			out = appendNew(out, r)
		}
	}
	return out, nil
}

// appendNew appends the references that list does not hold yet (by root
// and path).
func appendNew(list []Ref, refs ...Ref) []Ref {
	for _, r := range refs {
		if !slices.ContainsFunc(list, func(l Ref) bool { return l.String() == r.String() }) {
			list = append(list, r)
		}
	}
	return list
}

// String writes the reference as an expression would (root.a.b).
func (r Ref) String() string {
	if len(r.Path) == 0 {
		return r.Root
	}
	return r.Root + "." + strings.Join(r.Path, ".")
}

// RenderKnown renders a template like Render, except that an expression
// reading a reference known rejects is kept as its original ${{ … }} text.
// It returns the rendering and the unknown references, each once (none:
// the result is exactly what Render gives). When some are kept, every ${{
// that is not one of them — escaped in the literal text, or inside a
// rendered value — comes out escaped ($${{), so the result is still a
// template that renders to the full text once the unknown values exist.
// Errors are those of evaluating the known expressions.
func RenderKnown(tmpl string, env map[string]any, known func(Ref) bool) (any, []Ref, error) {
	return renderKnown(tmpl, env, known, newBudget())
}

func renderKnown(tmpl string, env map[string]any, known func(Ref) bool, b *budget) (any, []Ref, error) {
	if !strings.Contains(tmpl, openDelim) {
		return tmpl, nil, nil
	}
	segs, err := Scan(tmpl)
	if err != nil {
		return nil, nil, &EvalError{Expr: tmpl, Err: err}
	}
	var unknown []Ref
	keep := make([]bool, len(segs))
	for i, sg := range segs {
		if !sg.Expr {
			continue
		}
		refs, err := Unknown(sg.Text, known)
		if err != nil {
			return nil, nil, &EvalError{Expr: sg.Text, Err: err}
		}
		keep[i] = len(refs) > 0
		unknown = appendNew(unknown, refs...)
	}
	if len(unknown) == 0 {
		v, err := render(tmpl, env, b, nil)
		return v, nil, err
	}
	if _, ok := Single(segs); ok {
		return tmpl, unknown, nil
	}
	escape := func(s string) string { return strings.ReplaceAll(s, openDelim, "$"+openDelim) }
	var out strings.Builder
	for i, sg := range segs {
		switch {
		case !sg.Expr:
			out.WriteString(escape(sg.Text))
		case keep[i]:
			out.WriteString(openDelim + sg.Text + closeDelim)
		default:
			v, err := eval(sg.Text, env, b)
			if err != nil {
				return nil, nil, err
			}
			var text strings.Builder
			if err := spliceText(&text, v, b); err != nil {
				return nil, nil, &EvalError{Expr: sg.Text, Err: err}
			}
			out.WriteString(escape(text.String()))
		}
	}
	return out.String(), unknown, nil
}

// RenderValueKnown is RenderValue with RenderKnown's rule: it renders every
// string inside a JSON-like value, keeping the expressions that read
// unknown references, and returns the unknown references of all of them,
// each once, map keys taken in sorted order.
// Its expressions share one memory budget.
func RenderValueKnown(v any, env map[string]any, known func(Ref) bool) (any, []Ref, error) {
	return renderValueKnown(v, env, known, newBudget())
}

func renderValueKnown(v any, env map[string]any, known func(Ref) bool, b *budget) (any, []Ref, error) {
	switch x := v.(type) {
	case string:
		return renderKnown(x, env, known, b)
	case map[string]any:
		out := make(map[string]any, len(x))
		var unknown []Ref
		for _, k := range slices.Sorted(maps.Keys(x)) { // sorted: the unknown references come in a stable order
			r, u, err := renderValueKnown(x[k], env, known, b)
			if err != nil {
				return nil, nil, err
			}
			out[k] = r
			unknown = appendNew(unknown, u...)
		}
		return out, unknown, nil
	case []any:
		out := make([]any, len(x))
		var unknown []Ref
		for i, e := range x {
			r, u, err := renderValueKnown(e, env, known, b)
			if err != nil {
				return nil, nil, err
			}
			out[i] = r
			unknown = appendNew(unknown, u...)
		}
		return out, unknown, nil
	default:
		return v, nil, nil
	}
}

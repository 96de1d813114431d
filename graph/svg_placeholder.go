package graph

import (
	"bytes"
	"fmt"
	"html"

	"stepwise.dev/stepwise/workflow"
)

// SVGOptions style a drawing.
type SVGOptions struct {
	Status map[string]string
	Link   func(stepID string) string
}

// SVG draws w as a standalone SVG document.
//
// Placeholder until the layered drawing lands: the steps in a column, each
// a <g class="step status-X" data-step="ID" data-status="X">.
func SVG(w *workflow.Workflow, o SVGOptions) ([]byte, error) {
	var ids []string
	var walk func(steps []*workflow.Step)
	walk = func(steps []*workflow.Step) {
		for _, s := range steps {
			ids = append(ids, s.ID)
			walk(s.Parallel)
			walk(s.Steps)
		}
	}
	walk(w.Steps)
	var b bytes.Buffer
	h := 40*len(ids) + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="320" height="%d" viewBox="0 0 320 %d">`, h, h)
	for i, id := range ids {
		st := "pending"
		if s, ok := o.Status[id]; ok && s != "" {
			st = s
		}
		e := html.EscapeString
		fmt.Fprintf(&b, `<g class="step status-%s" data-step="%s" data-status="%s">`, e(st), e(id), e(st))
		if o.Link != nil {
			fmt.Fprintf(&b, `<a href="%s">`, e(o.Link(id)))
		}
		fmt.Fprintf(&b, `<rect x="10" y="%d" width="300" height="30" rx="6"/><text x="20" y="%d">%s</text>`, 10+40*i, 30+40*i, e(id))
		if o.Link != nil {
			b.WriteString(`</a>`)
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.Bytes(), nil
}

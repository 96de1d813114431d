// Package graph draws workflows: Mermaid flowcharts of their steps,
// branches, loops, groups and failure paths, for people to see a workflow
// before they run it.
package graph

import (
	"strings"

	"stepwise.dev/stepwise/workflow"
)

// Mermaid returns a Mermaid flowchart (flowchart TD) of the workflow.
//
// The chart has a start and an end node and one node per step, shaped by
// kind; parallel groups (entered at a fork node) and foreach loops are
// subgraphs; an if condition
// is a small decision node whose labelled edge enters the step and whose
// else edge skips it; switch cases are labelled edges to their goto
// targets, and backward ones (loops) are thick and name their max_visits;
// compensations, on_failure hooks and fail steps lead, dashed, to a
// separate "on failure" subgraph. The same workflow always gives the same
// text: everything follows document order.
//
// The workflow should be valid (workflow.Load); an invalid one is drawn as
// far as it can be, without failing.
func Mermaid(w *workflow.Workflow) string {
	b := newBuilder(w)
	b.line("flowchart TD")
	b.depth++
	start := "wf_start"
	b.node(start, stadium, lines("start", text(w.Name, 0), text(w.Title, maxText)), "")
	exits := b.seq(w.Steps, []exit{{from: start}})
	exits = b.onSuccess(w.OnSuccess, exits)
	b.node("wf_end", stadium, "end", "")
	b.connect(exits, "wf_end")
	b.failurePath()
	return b.String()
}

// Node shapes: the opening and closing delimiters around a quoted label.
type shape struct{ open, close string }

var (
	rect          = shape{"[", "]"}
	stadium       = shape{"([", "])"} // start, end, failed, fail steps: terminals
	parallelogram = shape{"[/", "/]"} // a question: input from a person
	reversed      = shape{`[\`, `\]`} // a compensation: undoing
	hexagon       = shape{"{{", "}}"} // an agent step
	rhombus       = shape{"{", "}"}   // switch and if: decisions
	subroutine    = shape{"[[", "]]"} // a sub-workflow
	rounded       = shape{"(", ")"}   // a sleep
	circle        = shape{"((", "))"} // a parallel group's fork
)

// Edge styles.
const (
	solid  = "-->"
	dashed = "-.->" // the failure path
	thick  = "==>"  // loops: backward gotos and repeat
)

type edge struct{ from, to, label, style string }

// exit is an edge that leaves a step and does not know its target yet:
// whatever comes next in the flow. label is already escaped.
type exit struct{ from, label string }

// Classes give kinds that matter to a reader a colour; they are declared
// only when used, in this order.
var classDefs = []struct{ name, style string }{
	{"ask", "fill:#e8f0fe,stroke:#3367d6"},
	{"agent", "fill:#f3e8fd,stroke:#8430ce"},
	{"fail", "fill:#fce8e6,stroke:#c5221f"},
	{"undo", "fill:#fef7e0,stroke:#b06000,stroke-dasharray: 4 3"},
}

// builder writes node declarations as it walks the workflow (subgraphs
// need nesting) and collects edges to write after them: an edge written
// before its nodes are declared could pull a node out of its subgraph.
type builder struct {
	decl    strings.Builder
	depth   int
	edges   []edge
	classes map[string][]string
	// steps finds goto targets by id; the first of duplicate ids wins.
	steps map[string]*workflow.Step
	// order is each step's position in workflow.Flatten order.
	order map[*workflow.Step]int
	// failure lists the nodes of the failure path, in the order they run.
	failure []pathNode
}

func newBuilder(w *workflow.Workflow) *builder {
	b := &builder{classes: map[string][]string{}, steps: map[string]*workflow.Step{}, order: map[*workflow.Step]int{}}
	for i, s := range workflow.Flatten(w.Steps) {
		b.order[s] = i
		if _, dup := b.steps[s.ID]; !dup {
			b.steps[s.ID] = s
		}
	}
	b.failure = failurePlan(w)
	return b
}

func (b *builder) line(s string) {
	b.decl.WriteString(strings.Repeat("  ", b.depth))
	b.decl.WriteString(s)
	b.decl.WriteByte('\n')
}

// node declares a node; label is already escaped.
func (b *builder) node(id string, sh shape, label, class string) {
	b.line(id + sh.open + `"` + label + `"` + sh.close)
	if class != "" {
		b.classes[class] = append(b.classes[class], id)
	}
}

// subgraph declares a group around what body declares.
func (b *builder) subgraph(id, label string, body func()) {
	b.line("subgraph " + id + `["` + label + `"]`)
	b.depth++
	body()
	b.depth--
	b.line("end")
}

func (b *builder) edge(from, to, label, style string) {
	b.edges = append(b.edges, edge{from: from, to: to, label: label, style: style})
}

// connect joins every pending exit to the step that comes next. There is
// always one target (a parallel group is entered at its fork), so the
// edges grow with the steps, never with their product.
func (b *builder) connect(exits []exit, target string) {
	for _, e := range exits {
		b.edge(e.from, target, e.label, solid)
	}
}

// String writes the declarations, then the edges, then the classes.
func (b *builder) String() string {
	var out strings.Builder
	out.WriteString(b.decl.String())
	for _, e := range b.edges {
		out.WriteString("  " + e.from + " " + e.style)
		if e.label != "" {
			out.WriteString(`|"` + e.label + `"|`)
		}
		out.WriteString(" " + e.to + "\n")
	}
	for _, c := range classDefs {
		ids := b.classes[c.name]
		if len(ids) == 0 {
			continue
		}
		out.WriteString("  classDef " + c.name + " " + c.style + "\n")
		out.WriteString("  class " + strings.Join(ids, ",") + " " + c.name + "\n")
	}
	return out.String()
}

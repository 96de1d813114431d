// Package graph draws workflows — their steps, branches, loops, groups
// and failure paths — for people to see a workflow before they run it and
// while it runs: as Mermaid flowcharts, and as SVG images laid out here,
// with each step's status.
package graph

import (
	"stepwise.dev/stepwise/internal/workflow"
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
	return build(w).mermaid()
}

// build walks the workflow into the diagram every format draws.
func build(w *workflow.Workflow) *diagram {
	b := newBuilder(w)
	start := "wf_start"
	b.node(start, stadium, []string{"start", clip(w.Name, 0), clip(w.Title, maxText)}, "", nil)
	exits := b.seq(w.Steps, []exit{{from: start}})
	exits = b.onSuccess(w.OnSuccess, exits)
	b.node("wf_end", stadium, []string{"end"}, "", nil)
	b.connect(exits, "wf_end")
	b.failurePath()
	return b.chart
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

// exit is an edge that leaves a step and does not know its target yet:
// whatever comes next in the flow. label is raw.
type exit struct{ from, label string }

// Classes give kinds that matter to a reader a colour; they are declared
// only when used, in this order.
var classDefs = []struct{ name, style string }{
	{"ask", "fill:#e8f0fe,stroke:#3367d6"},
	{"agent", "fill:#f3e8fd,stroke:#8430ce"},
	{"fail", "fill:#fce8e6,stroke:#c5221f"},
	{"undo", "fill:#fef7e0,stroke:#b06000,stroke-dasharray: 4 3"},
}

// builder walks the workflow into a chart.
type builder struct {
	chart *diagram
	// cur is the cluster that node and subgraph add to.
	cur *cluster
	// steps finds goto targets by id; the first of duplicate ids wins.
	steps map[string]*workflow.Step
	// order is each step's position in workflow.Flatten order.
	order map[*workflow.Step]int
	// failure lists the nodes of the failure path, in the order they run.
	failure []pathNode
}

func newBuilder(w *workflow.Workflow) *builder {
	c := &diagram{root: &cluster{}}
	b := &builder{chart: c, cur: c.root, steps: map[string]*workflow.Step{}, order: map[*workflow.Step]int{}}
	for i, s := range workflow.Flatten(w.Steps) {
		b.order[s] = i
		if _, dup := b.steps[s.ID]; !dup {
			b.steps[s.ID] = s
		}
	}
	b.failure = failurePlan(w)
	return b
}

// node declares a node in the current cluster; label holds its lines,
// raw (not escaped), empty ones left out when written.
func (b *builder) node(id string, sh shape, label []string, class string, step *workflow.Step) {
	b.cur.items = append(b.cur.items, item{node: &node{id: id, shape: sh, label: label, class: class, step: step}})
}

// subgraph declares a group around what body declares.
func (b *builder) subgraph(id, label string, step *workflow.Step, body func()) {
	c := &cluster{id: id, label: label, step: step}
	b.cur.items = append(b.cur.items, item{cluster: c})
	outer := b.cur
	b.cur = c
	body()
	b.cur = outer
}

func (b *builder) edge(from, to, label, style string) {
	b.chart.edges = append(b.chart.edges, edge{from: from, to: to, label: label, style: style})
}

// connect joins every pending exit to the step that comes next. There is
// always one target (a parallel group is entered at its fork), so the
// edges grow with the steps, never with their product.
func (b *builder) connect(exits []exit, target string) {
	for _, e := range exits {
		b.edge(e.from, target, e.label, solid)
	}
}

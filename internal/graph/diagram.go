package graph

import (
	"strings"

	"stepwise.dev/stepwise/internal/workflow"
)

// diagram is a workflow as the formats draw it: nodes and clusters nested
// and in declaration order, then the edges between them. Labels are raw
// text (one line each, already shortened); each format escapes them.
type diagram struct {
	root  *cluster // the chart itself: no id, no label
	edges []edge
}

// cluster is a group of nodes: a parallel group, a foreach, on_success,
// the failure path.
type cluster struct {
	id, label string
	// step is the group's step, nil for the groups that are not steps.
	step  *workflow.Step
	items []item
}

// item is a node or a cluster.
type item struct {
	node    *node
	cluster *cluster
}

// node is a box of the chart.
type node struct {
	id    string
	shape shape
	label []string // its lines; empty ones are left out
	class string
	// step is the step the node is, nil for if, fork, start, end, hooks
	// and the failure path.
	step *workflow.Step
}

// edge joins two nodes or clusters, by id. short, when set, is a
// shorter label for drawings that have less room than Mermaid's.
type edge struct{ from, to, label, short, style string }

// mermaid writes the diagram as a Mermaid flowchart: the declarations, then
// the edges (an edge written before its nodes are declared could pull a
// node out of its subgraph), then the classes.
func (c *diagram) mermaid() string {
	var out strings.Builder
	out.WriteString("flowchart TD\n")
	classes := map[string][]string{}
	var walk func(items []item, depth int)
	walk = func(items []item, depth int) {
		indent := strings.Repeat("  ", depth)
		for _, it := range items {
			if n := it.node; n != nil {
				out.WriteString(indent + n.id + n.shape.open + `"` + mermaidLines(n.label) + `"` + n.shape.close + "\n")
				if n.class != "" {
					classes[n.class] = append(classes[n.class], n.id)
				}
				continue
			}
			out.WriteString(indent + "subgraph " + it.cluster.id + `["` + escape(it.cluster.label) + `"]` + "\n")
			walk(it.cluster.items, depth+1)
			out.WriteString(indent + "end\n")
		}
	}
	walk(c.root.items, 1)
	for _, e := range c.edges {
		out.WriteString("  " + e.from + " " + e.style)
		if e.label != "" {
			out.WriteString(`|"` + escape(e.label) + `"|`)
		}
		out.WriteString(" " + e.to + "\n")
	}
	for _, cd := range classDefs {
		ids := classes[cd.name]
		if len(ids) == 0 {
			continue
		}
		out.WriteString("  classDef " + cd.name + " " + cd.style + "\n")
		out.WriteString("  class " + strings.Join(ids, ",") + " " + cd.name + "\n")
	}
	return out.String()
}

// mermaidLines escapes a label's lines and joins them with Mermaid's line
// break, leaving out empty ones.
func mermaidLines(parts []string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, escape(p))
		}
	}
	return strings.Join(out, "<br>")
}

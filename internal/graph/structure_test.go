package graph

import (
	"fmt"
	"regexp"
	"strings"
)

// chart is a flowchart read back from Mermaid's text by parseChart: just
// enough of the grammar to check what Mermaid() writes.
type chart struct {
	nodes     map[string]string // id → label
	shapes    map[string]string // id → opening delimiter
	subgraphs map[string]string // id → label
	parent    map[string]string // node or subgraph id → enclosing subgraph ("" at the top)
	edges     []chartEdge
	classes   map[string][]string // class → node ids
}

type chartEdge struct{ from, to, style, label string }

var (
	idPat       = `([A-Za-z][A-Za-z0-9_]*)`
	labelPat    = `"([^"]*)"`
	subgraphRE  = regexp.MustCompile(`^subgraph ` + idPat + `\[` + labelPat + `\]$`)
	nodeRE      = regexp.MustCompile(`^` + idPat + `(\(\(|\(\[|\[\[|\[/|\[\\|\{\{|\[|\{|\()` + labelPat + `(\)\)|\]\)|\]\]|/\]|\\\]|\}\}|\]|\}|\))$`)
	edgeRE      = regexp.MustCompile(`^` + idPat + ` (-->|-\.->|==>)(?:\|` + labelPat + `\|)? ` + idPat + `$`)
	classDefRE  = regexp.MustCompile(`^classDef ([a-z]+) \S.*$`)
	classRE     = regexp.MustCompile(`^class ([A-Za-z0-9_,]+) ([a-z]+)$`)
	entityRE    = regexp.MustCompile(`#[A-Za-z0-9]+;`)
	closeOfOpen = map[string]string{"((": "))", "([": "])", "[[": "]]", "[/": "/]", `[\`: `\]`, "{{": "}}", "[": "]", "{": "}", "(": ")"}
	// Mermaid keywords that break a flowchart when used as a node id.
	keywords = map[string]bool{"end": true, "subgraph": true, "graph": true, "flowchart": true, "style": true,
		"classDef": true, "class": true, "click": true, "linkStyle": true, "direction": true, "default": true, "call": true, "href": true}
)

// parseChart reads Mermaid() output and checks its structure: the header,
// every line one of the forms Mermaid() writes, subgraph/end balanced,
// every id declared once and safe, every edge between declared ids, and
// every label escaped (no raw quote, angle bracket or backtick besides
// <br>, every # the start of an entity code).
func parseChart(text string) (*chart, error) {
	c := &chart{nodes: map[string]string{}, shapes: map[string]string{}, subgraphs: map[string]string{},
		parent: map[string]string{}, classes: map[string][]string{}}
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("output does not end with a newline")
	}
	all := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if all[0] != "flowchart TD" {
		return nil, fmt.Errorf("line 1 is %q, want flowchart TD", all[0])
	}
	var stack []string
	declare := func(id, label string, n int) error {
		if _, dup := c.nodes[id]; dup {
			return fmt.Errorf("line %d: %s declared twice", n, id)
		}
		if _, dup := c.subgraphs[id]; dup {
			return fmt.Errorf("line %d: %s declared twice", n, id)
		}
		if keywords[id] || strings.HasPrefix(id, "o") || strings.HasPrefix(id, "x") {
			return fmt.Errorf("line %d: node id %q is a Mermaid keyword or starts an edge ending", n, id)
		}
		if err := checkLabel(label); err != nil {
			return fmt.Errorf("line %d: %v", n, err)
		}
		if len(stack) > 0 {
			c.parent[id] = stack[len(stack)-1]
		}
		return nil
	}
	for i, l := range all[1:] {
		n := i + 2
		l = strings.TrimLeft(l, " ")
		if m := subgraphRE.FindStringSubmatch(l); m != nil {
			if err := declare(m[1], m[2], n); err != nil {
				return nil, err
			}
			c.subgraphs[m[1]] = m[2]
			stack = append(stack, m[1])
			continue
		}
		if l == "end" {
			if len(stack) == 0 {
				return nil, fmt.Errorf("line %d: end without subgraph", n)
			}
			stack = stack[:len(stack)-1]
			continue
		}
		if m := nodeRE.FindStringSubmatch(l); m != nil {
			if closeOfOpen[m[2]] != m[4] {
				return nil, fmt.Errorf("line %d: shape %s…%s does not match", n, m[2], m[4])
			}
			if err := declare(m[1], m[3], n); err != nil {
				return nil, err
			}
			c.nodes[m[1]], c.shapes[m[1]] = m[3], m[2]
			continue
		}
		if m := edgeRE.FindStringSubmatch(l); m != nil {
			if err := checkLabel(m[3]); err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			c.edges = append(c.edges, chartEdge{from: m[1], style: m[2], label: m[3], to: m[4]})
			continue
		}
		if classDefRE.MatchString(l) {
			continue
		}
		if m := classRE.FindStringSubmatch(l); m != nil {
			c.classes[m[2]] = append(c.classes[m[2]], strings.Split(m[1], ",")...)
			continue
		}
		return nil, fmt.Errorf("line %d: unexpected %q", n, l)
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("subgraph %s is not closed", stack[len(stack)-1])
	}
	for _, e := range c.edges {
		for _, id := range []string{e.from, e.to} {
			if !c.declared(id) {
				return nil, fmt.Errorf("edge %s %s %s: %s is not declared", e.from, e.style, e.to, id)
			}
		}
	}
	for class, ids := range c.classes {
		for _, id := range ids {
			if _, ok := c.nodes[id]; !ok {
				return nil, fmt.Errorf("class %s names %s, which is not a node", class, id)
			}
		}
	}
	return c, nil
}

func (c *chart) declared(id string) bool {
	_, node := c.nodes[id]
	_, group := c.subgraphs[id]
	return node || group
}

func checkLabel(label string) error {
	bare := entityRE.ReplaceAllString(strings.ReplaceAll(label, "<br>", ""), "")
	if i := strings.IndexAny(bare, "\"<>`#\n\r"); i >= 0 {
		return fmt.Errorf("label %q has a raw %q", label, bare[i])
	}
	return nil
}

// out lists the edges that leave id.
func (c *chart) out(id string) []chartEdge {
	var out []chartEdge
	for _, e := range c.edges {
		if e.from == id {
			out = append(out, e)
		}
	}
	return out
}

// edge finds the edge from → to, or reports false.
func (c *chart) edge(from, to string) (chartEdge, bool) {
	for _, e := range c.edges {
		if e.from == from && e.to == to {
			return e, true
		}
	}
	return chartEdge{}, false
}

// firstLine is a label's first line: a step's or group's id.
func firstLine(label string) string {
	first, _, _ := strings.Cut(label, "<br>")
	return first
}

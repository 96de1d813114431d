// Package yamlsize measures what a YAML node tree stands for once its
// aliases are expanded, without expanding them: a few lines of anchors and
// aliases can name gigabytes (a megabyte scalar aliased thousands of times,
// or aliases of aliases — "billion laughs"), and every reader that turns the
// tree into data must refuse such a document before it builds anything.
package yamlsize

import "go.yaml.in/yaml/v4"

// Expanded returns the size in bytes of the tree under root with every
// alias replaced by its anchor's tree: the text of every scalar, mapping
// keys included, plus one byte for every node (so that aliases of empty
// values and containers count too).
//
// An alias counts as its anchor's tree.
//
// The walk visits every node of the tree once (the size of an anchored
// node is remembered for its aliases), so its cost is that of the tree,
// never of its expansion. It stops once the total exceeds limit and then
// returns some value above limit. An alias inside its own anchor, which
// would expand without end, counts as one node: readers refuse such a
// cycle themselves.
func Expanded(root *yaml.Node, limit int64) int64 {
	if root == nil {
		return 0
	}
	w := walker{limit: limit, anchors: map[*yaml.Node]int64{}}
	return w.size(root)
}

// inProgress marks an anchor whose size is being computed.
const inProgress = -1

type walker struct {
	limit int64
	// anchors holds the size of every anchored node measured so far, or
	// inProgress while it is measured.
	anchors map[*yaml.Node]int64
}

// size returns the expanded size of n, or a value above the limit.
func (w *walker) size(n *yaml.Node) int64 {
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return 1
		}
		s, seen := w.anchors[n.Alias]
		switch {
		case s == inProgress:
			return 1 // a cycle: the reader refuses it
		case !seen:
			s = w.anchored(n.Alias)
		}
		return s
	case yaml.ScalarNode:
		return w.add(1, int64(len(n.Value)))
	}
	if n.Anchor != "" {
		if s, seen := w.anchors[n]; seen && s != inProgress {
			return s
		}
		return w.anchored(n)
	}
	return w.children(n)
}

// anchored measures an anchored node and remembers its size.
func (w *walker) anchored(n *yaml.Node) int64 {
	w.anchors[n] = inProgress
	var s int64
	if n.Kind == yaml.ScalarNode || n.Kind == yaml.AliasNode {
		s = w.size(n)
	} else {
		s = w.children(n)
	}
	w.anchors[n] = s
	return s
}

// children returns the size of a document, mapping or sequence node: one
// byte for itself and the sizes of its children.
func (w *walker) children(n *yaml.Node) int64 {
	total := int64(1)
	for _, c := range n.Content {
		if total = w.add(total, w.size(c)); total > w.limit {
			return total
		}
	}
	return total
}

// add sums two sizes, saturating just above the limit so that the sum can
// never overflow.
func (w *walker) add(a, b int64) int64 {
	if a > w.limit-b {
		return w.limit + 1
	}
	return a + b
}

package graph

import (
	"container/heap"
	"math"
	"sort"
	"unicode/utf8"
)

// Sizes of the drawing, in SVG user units (pixels at 100%).
const (
	fontSize   = 12
	lineHeight = 15
	charWidth  = 7 // a generous average advance of a 12px sans-serif
	padX       = 10
	padY       = 7
	glyphRoom  = 16 // left of a step's label: its status glyph
	gapX       = 28 // between boxes side by side
	gapY       = 34 // between a box and the next one down an edge
	labelRoom  = 16 // more room down an edge that has a label
	clusterPad = 14
	titleRoom  = 22 // a cluster's title, above its content
	margin     = 16
	svgText    = 36 // runes of a label line in the drawing
)

// box is a node or cluster of the diagram being laid out. x, y are its
// top-left corner, relative to its parent's content until the end of the
// layout, then absolute.
type box struct {
	id       string
	node     *node
	cluster  *cluster
	parent   *box
	children []*box
	index    int // position among its parent's children
	depth    int
	lines    []string // a node's label lines, shortened
	w, h     float64
	x, y     float64
}

func (b *box) cx() float64 { return b.x + b.w/2 }
func (b *box) cy() float64 { return b.y + b.h/2 }

// link is an edge between two children of one cluster, the one the
// layout of that cluster follows.
type link struct {
	from, to int
	labelled bool
	// weak links (the failure path's) rank, but do not pull boxes
	// sideways: the flow keeps its column.
	weak bool
}

// layout places every node and cluster of d: a layered layout of each
// cluster's content, innermost first, where a cluster is one big box in
// its parent's. Within a cluster, boxes are ranked down the edges (loops
// left out), then placed one by one in rank order, each as near as the
// boxes already placed allow to the middle of its predecessors — a fan-out
// spread evenly under its source — so that no two boxes ever overlap and
// edges mostly run straight down, uncrossed. It takes O(n·w·log w) time
// for n boxes at most w wide.
func layout(d *diagram) (root *box, byID map[string]*box) {
	byID = map[string]*box{}
	root = &box{cluster: d.root}
	var add func(parent *box, items []item)
	add = func(parent *box, items []item) {
		for i, it := range items {
			b := &box{node: it.node, cluster: it.cluster, parent: parent, index: i, depth: parent.depth + 1}
			if it.node != nil {
				b.id = it.node.id
			} else {
				b.id = it.cluster.id
				add(b, it.cluster.items)
			}
			if _, dup := byID[b.id]; !dup {
				byID[b.id] = b
			}
			parent.children = append(parent.children, b)
		}
	}
	add(root, d.root.items)

	links := map[*box][]link{}
	for _, e := range d.edges {
		a, b := byID[e.from], byID[e.to]
		if a == nil || b == nil || e.style == thick {
			continue // loops go back up: drawn, not ranked
		}
		for a.depth > b.depth {
			a = a.parent
		}
		for b.depth > a.depth {
			b = b.parent
		}
		for a.parent != b.parent {
			a, b = a.parent, b.parent
		}
		if a == b {
			continue // within one box, or a box to its own content
		}
		links[a.parent] = append(links[a.parent], link{from: a.index, to: b.index, labelled: e.label != "", weak: e.style == dashed})
	}
	var place func(c *box)
	place = func(c *box) {
		for _, ch := range c.children {
			if ch.cluster != nil {
				place(ch)
			} else {
				size(ch)
			}
		}
		arrange(c, links[c])
	}
	place(root)
	var abs func(c *box, x, y float64)
	abs = func(c *box, x, y float64) {
		c.x += x
		c.y += y
		for _, ch := range c.children {
			abs(ch, c.x, c.y)
		}
	}
	abs(root, 0, 0)
	return root, byID
}

// size measures a node from its label and shape.
func size(b *box) {
	for _, l := range b.node.label {
		if l != "" {
			b.lines = append(b.lines, truncate(l, svgText))
		}
	}
	switch b.node.shape {
	case circle:
		b.w, b.h, b.lines = 22, 22, nil
		return
	case rhombus:
		if b.node.step == nil { // an if: a small diamond
			b.w, b.h = 44, 30
			return
		}
	}
	widest := 0
	for _, l := range b.lines {
		widest = max(widest, utf8.RuneCountInString(l))
	}
	b.w = float64(widest*charWidth + 2*padX)
	if b.node.step != nil {
		b.w += glyphRoom
	}
	switch b.node.shape {
	case parallelogram, reversed, hexagon, rhombus:
		b.w += 24 // slanted or pointed sides
	case subroutine:
		b.w += 12
	case stadium:
		b.w += 12
	}
	b.w = max(b.w, 60)
	b.h = float64(max(len(b.lines), 1)*lineHeight + 2*padY)
}

// arrange lays out the children of cluster c, following links between
// them, and sizes c around them.
func arrange(c *box, links []link) {
	n := len(c.children)
	succ := make([][]int, n)
	pred := make([][]int, n)
	indeg := make([]int, n)
	strong := map[[2]int]bool{} // pulls sideways
	gap := map[[2]int]float64{}
	for _, l := range links {
		k := [2]int{l.from, l.to}
		strong[k] = strong[k] || !l.weak
		g := float64(gapY)
		if l.labelled {
			g += labelRoom
		}
		if old, dup := gap[k]; dup {
			gap[k] = max(old, g)
			continue
		}
		gap[k] = g
		succ[l.from] = append(succ[l.from], l.to)
		pred[l.to] = append(pred[l.to], l.from)
		indeg[l.to]++
	}
	// Rank: topological order, declaration order among the ready; on a
	// cycle (none in a valid workflow's forward edges) the first box left
	// goes next, as if its remaining incoming edges went back.
	pos := make([]int, n) // in the order; -1 not yet
	for i := range pos {
		pos[i] = -1
	}
	order := make([]int, 0, n)
	ready := &intHeap{}
	for i := 0; i < n; i++ {
		if indeg[i] == 0 {
			heap.Push(ready, i)
		}
	}
	next := 0 // the first box maybe not ordered yet
	for len(order) < n {
		if ready.Len() == 0 {
			for pos[next] >= 0 {
				next++
			}
			heap.Push(ready, next)
			indeg[next] = 0
		}
		v := heap.Pop(ready).(int)
		if pos[v] >= 0 {
			continue
		}
		pos[v] = len(order)
		order = append(order, v)
		for _, s := range succ[v] {
			if indeg[s]--; indeg[s] == 0 && pos[s] < 0 {
				heap.Push(ready, s)
			}
		}
	}
	kids := c.children
	for _, v := range order {
		y := 0.0
		for _, p := range pred[v] {
			if pos[p] < pos[v] {
				y = max(y, kids[p].y+kids[p].h+gap[[2]int{p, v}])
			}
		}
		kids[v].y = y
	}
	byY := append([]int(nil), order...)
	sort.SliceStable(byY, func(i, j int) bool { return kids[byY[i]].y < kids[byY[j]].y })

	// Place, top down, each box in the free space nearest to where its
	// predecessors want it.
	var active []*box // placed boxes that still reach down to the row, by x
	// fan is where a box's successors go under it: each one's offset in
	// their row, and the row's width.
	type fan struct {
		before map[int]float64
		total  float64
	}
	fans := map[int]fan{}
	for _, v := range byY {
		b := kids[v]
		want := 0.0
		var from []int
		for _, p := range pred[v] {
			if pos[p] < pos[v] && strong[[2]int{p, v}] {
				from = append(from, p)
			}
		}
		switch len(from) {
		case 0:
		case 1:
			// Spread the successors of a fan-out evenly under it.
			p := from[0]
			// Only the successors of the next row spread: an edge that
			// skips further down (an if's else) keeps the column.
			f, ok := fans[p]
			if !ok {
				f = fan{before: map[int]float64{}, total: -float64(gapX)}
				row := math.Inf(1)
				for _, s := range succ[p] {
					if strong[[2]int{p, s}] && pos[s] > pos[p] {
						row = min(row, kids[s].y)
					}
				}
				for _, s := range succ[p] {
					if strong[[2]int{p, s}] && pos[s] > pos[p] && kids[s].y == row {
						f.before[s] = f.total + gapX
						f.total += kids[s].w + gapX
					}
				}
				fans[p] = f
			}
			want = kids[p].cx()
			if before, spread := f.before[v]; spread {
				want += -f.total/2 + before + b.w/2
			}
		default:
			for _, p := range from {
				want += kids[p].cx()
			}
			want /= float64(len(from))
		}
		keep := active[:0]
		for _, a := range active {
			if a.y+a.h+gapY/2 > b.y {
				keep = append(keep, a)
			}
		}
		active = keep
		b.x = freeSpot(active, want-b.w/2, b.w)
		// Kept sorted by x: freeSpot walks them left to right.
		at := sort.Search(len(active), func(i int) bool { return active[i].x > b.x })
		active = append(active, nil)
		copy(active[at+1:], active[at:])
		active[at] = b
	}

	// The failure path stands apart, right of the flow: what leads into
	// it comes from all over, and crosses nothing on its way there.
	if c.parent == nil {
		var failure *box
		right := 0.0
		for _, k := range kids {
			if k.id == "wf_failure" && k.cluster != nil {
				failure = k
			} else {
				right = max(right, k.x+k.w)
			}
		}
		if failure != nil && len(kids) > 1 {
			failure.x = right + 2*gapX
		}
	}

	// Size the cluster around its content.
	pad, top := float64(clusterPad), float64(clusterPad+titleRoom)
	if c.parent == nil {
		pad, top = margin, margin
	}
	if n == 0 {
		c.w, c.h = 120, top+pad
		return
	}
	minX, maxX, maxY := kids[0].x, kids[0].x+kids[0].w, 0.0
	for _, k := range kids {
		minX = min(minX, k.x)
		maxX = max(maxX, k.x+k.w)
		maxY = max(maxY, k.y+k.h)
	}
	for _, k := range kids {
		k.x += pad - minX
		k.y += top
	}
	c.w = max(maxX-minX+2*pad, 120)
	if c.cluster != nil && c.parent != nil {
		c.w = max(c.w, float64(min(utf8.RuneCountInString(c.cluster.label), 2*svgText)*charWidth)+2*pad)
	}
	c.h = maxY + top + pad
}

// freeSpot returns the x nearest to want where a box w wide overlaps none
// of the placed boxes (sorted by x), kept gapX apart.
func freeSpot(placed []*box, want, w float64) float64 {
	if len(placed) == 0 {
		return want
	}
	type span struct{ a, b float64 }
	merged := make([]span, 0, len(placed))
	for _, p := range placed {
		s := span{p.x - gapX, p.x + p.w + gapX}
		if n := len(merged); n > 0 && s.a <= merged[n-1].b {
			merged[n-1].b = max(merged[n-1].b, s.b)
			continue
		}
		merged = append(merged, s)
	}
	best, bestDist := 0.0, -1.0
	try := func(lo, hi float64) { // a free interval; hi-lo >= w
		x := min(max(want, lo), hi-w)
		if d := abs(x - want); bestDist < 0 || d < bestDist {
			best, bestDist = x, d
		}
	}
	try(merged[0].a-w-1e9, merged[0].a)
	for i := 1; i < len(merged); i++ {
		if merged[i].a-merged[i-1].b >= w {
			try(merged[i-1].b, merged[i].a)
		}
	}
	last := merged[len(merged)-1].b
	try(last, last+w+1e9)
	return best
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// intHeap is a min-heap of ints.
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

package graph

import (
	"bytes"
	"encoding/xml"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"stepwise.dev/stepwise/internal/workflow"
)

// SVGOptions style a drawing.
type SVGOptions struct {
	// Status maps a step id to its status: pending, running, waiting, succeeded, failed, skipped,
	// canceled (unknown or absent: drawn neutral).
	Status map[string]string
	// Link, when non-nil, gives a step's href ("" for none).
	Link func(stepID string) string
}

// statuses are the step statuses a drawing colours, in the order of their
// glyphs in every step's glyph group.
var statuses = []string{"pending", "running", "waiting", "succeeded", "failed", "skipped", "canceled"}

// ErrNoWorkflow is returned by SVG when given no workflow.
var ErrNoWorkflow = errors.New("graph: no workflow to draw")

// SVG draws w as a standalone SVG document (UTF-8, no external references, no scripts).
//
// It draws what Mermaid does (the same nodes, clusters and edges), laid
// out by the package itself. Every step is a group
// <g class="step status-S" data-step="ID" data-status="S"> (S is "none"
// when the status is unknown): a page restyles a step by setting its
// data-status, which the drawing's own style sheet colours, patterns and
// marks with a glyph. Other nodes carry data-node, their chart id, and
// every edge data-from and data-to, the ids it joins. The same workflow
// and options always give the same bytes.
func SVG(w *workflow.Workflow, o SVGOptions) ([]byte, error) {
	if w == nil {
		return nil, ErrNoWorkflow
	}
	d := build(w)
	root, byID := layout(d)
	r := &svgWriter{o: o, byID: byID, byTop: map[*box][]*box{}, lanes: map[int][]laneSpan{}, tallest: map[*box]float64{}, loopOut: map[*box]float64{}}
	return r.write(d, root, "Workflow "+clip(w.Name, 0)), nil
}

type svgWriter struct {
	o     SVGOptions
	byID  map[string]*box
	byTop map[*box][]*box    // a cluster's children sorted by their top
	lanes map[int][]laneSpan // detour lanes taken, by x
	// loopOut is how far right of a box its own loops reach.
	loopOut map[*box]float64
	// tallest is the height of a cluster's tallest child.
	tallest map[*box]float64
	buf     bytes.Buffer
}

// laneSpan is a stretch of a detour lane in use: the n-th lane at its
// place, from y1 down to y2, by edges into one box.
type laneSpan struct {
	n      int
	y1, y2 float64
	to     *box
}

// route is an edge's path and where its label goes.
type route struct {
	d                  string
	lx, ly             float64
	anchor             string
	room               int     // runes the label may have
	left, right, below float64 // how far it reaches
}

func (r *svgWriter) write(d *diagram, root *box, title string) []byte {
	// Edges first, to know how far they reach.
	routes := make([]route, len(d.edges))
	width, height := root.w, root.h
	side := map[*box]int{}   // loops already routed right of a box
	labels := map[*box]int{} // labels already above a box
	left := 0.0
	// How far right of a box (and of the clusters around it) its own
	// loops reach, for the lanes of the loops that pass it (clearRight).
	selfLoops := map[*box]int{}
	for _, e := range d.edges {
		if a := r.byID[e.from]; a != nil && e.from == e.to {
			selfLoops[a]++
			for c := a; c.parent != nil; c = c.parent {
				r.loopOut[c] = max(r.loopOut[c], float64(26+10*(selfLoops[a]-1)+4))
			}
		}
	}
	for i, e := range d.edges {
		a, b := r.byID[e.from], r.byID[e.to]
		if a == nil || b == nil {
			continue
		}
		routes[i] = r.route(a, b, side)
		if edgeLabel(e) != "" && (routes[i].anchor == "middle" || e.style == dashed) {
			if e.style == dashed {
				// Into the failure path, where many arrive: labelled
				// where it leaves its step instead.
				routes[i].lx, routes[i].ly, routes[i].anchor, routes[i].room = a.cx()+6, a.y+a.h+14, "start", 12
			} else {
				// Labels of edges into one box would print over each other.
				routes[i].ly -= float64(13 * labels[b])
				labels[b]++
			}
		}
		width = max(width, routes[i].right+margin)
		height = max(height, routes[i].below+margin)
		if l := edgeLabel(e); l != "" {
			room := routes[i].room
			if room == 0 {
				room = edgeRoom
			}
			n := float64(min(utf8.RuneCountInString(l), room) * charWidth)
			switch routes[i].anchor {
			case "start":
				width = max(width, routes[i].lx+n+margin)
			case "end":
				left = min(left, routes[i].lx-n-4)
			default:
				left = min(left, routes[i].lx-n/2-4)
			}
		}
		if routes[i].d != "" {
			left = min(left, routes[i].left-margin/2)
		}
	}
	// A lane or label left of the boxes widens the picture leftwards.
	width -= left
	w := &r.buf
	w.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="stepwise-graph" width="` + num(width) + `" height="` + num(height) +
		`" viewBox="` + num(left) + " 0 " + num(width) + " " + num(height) + `" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" font-size="` + strconv.Itoa(fontSize) + `" role="img" aria-label="` + attr(title) + `">` + "\n")
	w.WriteString("<title>" + esc(title) + "</title>\n")
	w.WriteString(svgStyle)
	w.WriteString(`<rect class="bg" x="` + num(left) + `" width="100%" height="100%"/>` + "\n")
	r.clusters(root)
	for i, e := range d.edges {
		if routes[i].d == "" {
			continue
		}
		r.edge(e, routes[i])
	}
	r.nodes(root)
	w.WriteString("</svg>\n")
	return w.Bytes()
}

// clusters draws the clusters' frames, outermost first.
func (r *svgWriter) clusters(c *box) {
	for _, ch := range c.children {
		if ch.cluster == nil {
			continue
		}
		cl := ch.cluster
		class := "cluster"
		switch ch.id {
		case "wf_failure":
			class += " failure"
		case "wf_success":
			class += " success"
		}
		w := &r.buf
		if cl.step != nil {
			r.openStep(cl.step, "group "+class, ch.id)
		} else {
			w.WriteString(`<g class="` + class + `" data-node="` + attr(ch.id) + `">`)
		}
		w.WriteString(`<rect class="frame" x="` + num(ch.x) + `" y="` + num(ch.y) + `" width="` + num(ch.w) + `" height="` + num(ch.h) + `" rx="8"/>`)
		title := truncate(cl.label, int((ch.w-2*clusterPad)/charWidth))
		w.WriteString(`<text class="ctitle" x="` + num(ch.x+clusterPad) + `" y="` + num(ch.y+17) + `">` + esc(title) + `</text>`)
		if cl.step != nil {
			r.glyphs(ch.x+ch.w-clusterPad-12, ch.y+6)
			r.closeStep(cl.step)
		} else {
			w.WriteString("</g>\n")
		}
		r.clusters(ch)
	}
}

// nodes draws the nodes, in declaration order.
func (r *svgWriter) nodes(c *box) {
	for _, ch := range c.children {
		if ch.cluster != nil {
			r.nodes(ch)
			continue
		}
		n := ch.node
		w := &r.buf
		kind := "node"
		if n.class != "" {
			kind += " " + n.class
		}
		if n.step != nil {
			r.openStep(n.step, kind, ch.id)
		} else {
			w.WriteString(`<g class="` + kind + `" data-node="` + attr(ch.id) + `"><title>` + esc(strings.Join(ch.lines, " · ")) + `</title>`)
		}
		r.shape(ch)
		tx := ch.x + padX
		switch n.shape {
		case parallelogram, reversed, hexagon, rhombus:
			tx += 12
		case subroutine, stadium:
			tx += 6
		}
		if n.step != nil {
			r.glyphs(tx, ch.y+padY+1)
			tx += glyphRoom
		}
		if n.shape == circle {
			// a fork: no text
		} else if n.shape == rhombus && n.step == nil {
			w.WriteString(`<text class="label" x="` + num(ch.cx()) + `" y="` + num(ch.cy()+4) + `" text-anchor="middle">if</text>`)
		} else {
			for i, l := range ch.lines {
				class := "label"
				if i == 0 {
					class = "label first"
				}
				w.WriteString(`<text class="` + class + `" x="` + num(tx) + `" y="` + num(ch.y+padY+float64(i*lineHeight)+11) + `">` + esc(l) + `</text>`)
			}
		}
		if n.step != nil {
			r.closeStep(n.step)
		} else {
			w.WriteString("</g>\n")
		}
	}
}

// openStep starts a step's group: its status, its title and its link.
func (r *svgWriter) openStep(s *workflow.Step, class, nodeID string) {
	status := "none"
	if st, ok := r.o.Status[s.ID]; ok && known(st) {
		status = st
	}
	kind := s.Kind()
	if kind == "" {
		kind = "step"
	}
	w := &r.buf
	w.WriteString(`<g class="step ` + class + ` status-` + status + `" data-step="` + attr(s.ID) + `" data-status="` + status + `" data-node="` + attr(nodeID) + `">`)
	w.WriteString(`<title>` + esc(kind+" "+s.ID) + `</title>`)
	if href := r.href(s.ID); href != "" {
		w.WriteString(`<a href="` + attr(href) + `">`)
	}
}

func (r *svgWriter) closeStep(s *workflow.Step) {
	if r.href(s.ID) != "" {
		r.buf.WriteString("</a>")
	}
	r.buf.WriteString("</g>\n")
}

// href is a step's link, when Link gives one that is a relative or an
// http(s) URL: nothing that runs.
func (r *svgWriter) href(id string) string {
	if r.o.Link == nil {
		return ""
	}
	h := r.o.Link(id)
	u, err := url.Parse(h)
	if h == "" || err != nil || (u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	return h
}

func known(status string) bool {
	for _, s := range statuses {
		if s == status {
			return true
		}
	}
	return false
}

// glyphs writes every status glyph at x, y; the style sheet shows the one
// of the step's data-status.
func (r *svgWriter) glyphs(x, y float64) {
	w := &r.buf
	w.WriteString(`<g class="gl" transform="translate(` + num(x) + " " + num(y) + `)">`)
	for _, s := range statuses {
		w.WriteString(`<use href="#sw-` + s + `"/>`)
	}
	w.WriteString("</g>")
}

// shape draws a node's outline.
func (r *svgWriter) shape(b *box) {
	w := &r.buf
	x, y, x2, y2 := b.x, b.y, b.x+b.w, b.y+b.h
	rect := func(rx float64) {
		w.WriteString(`<rect class="box" x="` + num(x) + `" y="` + num(y) + `" width="` + num(b.w) + `" height="` + num(b.h) + `" rx="` + num(rx) + `"/>`)
	}
	poly := func(pts ...float64) {
		w.WriteString(`<polygon class="box" points="`)
		for i := 0; i < len(pts); i += 2 {
			if i > 0 {
				w.WriteByte(' ')
			}
			w.WriteString(num(pts[i]) + "," + num(pts[i+1]))
		}
		w.WriteString(`"/>`)
	}
	const s = 12 // slant
	switch b.node.shape {
	case circle:
		w.WriteString(`<circle class="box fork" cx="` + num(b.cx()) + `" cy="` + num(b.cy()) + `" r="` + num(b.w/2) + `"/>`)
	case stadium:
		rect(b.h / 2)
	case rounded:
		rect(10)
	case parallelogram:
		poly(x+s, y, x2, y, x2-s, y2, x, y2)
	case reversed:
		poly(x, y, x2, y, x2-s, y2, x+s, y2)
	case hexagon:
		poly(x+s, y, x2-s, y, x2, b.cy(), x2-s, y2, x+s, y2, x, b.cy())
	case rhombus:
		if b.node.step == nil {
			poly(b.cx(), y, x2, b.cy(), b.cx(), y2, x, b.cy())
		} else {
			poly(x+s, y, x2-s, y, x2, b.cy(), x2-s, y2, x+s, y2, x, b.cy())
			w.WriteString(`<path class="mark" d="M` + num(x+4) + " " + num(b.cy()) + "l4 -4 4 4 -4 4z" + `"/>`)
		}
	case subroutine:
		rect(2)
		w.WriteString(`<path class="mark" d="M` + num(x+6) + " " + num(y) + "v" + num(b.h) + "M" + num(x2-6) + " " + num(y) + "v" + num(b.h) + `"/>`)
	default:
		rect(4)
	}
}

// route finds an edge's path: down from the bottom of a to the top of b
// when b is below, else round the right side (loops, and whatever goes
// up or sideways), a little further out for each loop at the same box.
func (r *svgWriter) route(a, b *box, side map[*box]int) route {
	if a == b {
		x, y := a.x+a.w, a.cy()
		n := float64(side[a])
		side[a]++
		d := 26 + 10*n
		return route{d: "M" + num(x) + " " + num(y-6) + "C" + num(x+d) + " " + num(y-24) + " " + num(x+d) + " " + num(y+24) + " " + num(x) + " " + num(y+6),
			lx: x + d + 2, ly: y + 4, anchor: "start", left: x, right: x + d + 4, below: y + 24}
	}
	if b.y >= a.y+a.h {
		sx, sy, tx, ty := a.cx(), a.y+a.h, b.cx(), b.y
		if x, y1, y2, right, ok := r.detour(a, b, sx, tx); ok {
			// Round the boxes in the way, down a side lane; the label
			// goes on the lane's side away from them.
			m1, m2 := min(20, (y1-sy)/2), min(20, (ty-y2)/2)
			anchor, lx := "start", x+4
			if !right {
				anchor, lx = "end", x-4
			}
			var d string
			switch cy := a.cy(); {
			case x >= a.x+a.w+10 && y1 > cy+10 && r.bandClear(a, a.x+a.w, x): // out of the source's right side, then down the lane
				d = "M" + num(a.x+a.w) + " " + num(cy) + "L" + num(x-10) + " " + num(cy) + "Q" + num(x) + " " + num(cy) + " " + num(x) + " " + num(cy+10) + "L" + num(x) + " " + num(y1)
			case x <= a.x-10 && y1 > cy+10 && r.bandClear(a, x, a.x): // its left side
				d = "M" + num(a.x) + " " + num(cy) + "L" + num(x+10) + " " + num(cy) + "Q" + num(x) + " " + num(cy) + " " + num(x) + " " + num(cy+10) + "L" + num(x) + " " + num(y1)
			default:
				d = "M" + num(sx) + " " + num(sy) + "C" + num(sx) + " " + num(sy+m1) + " " + num(x) + " " + num(sy+m1) + " " + num(x) + " " + num(y1)
			}
			switch cy := b.cy(); {
			case x >= b.x+b.w+10 && r.bandClear(b, b.x+b.w, x): // down the lane, then into the target's right side
				d += "L" + num(x) + " " + num(cy-10) + "Q" + num(x) + " " + num(cy) + " " + num(x-10) + " " + num(cy) + "L" + num(b.x+b.w) + " " + num(cy)
			case x <= b.x-10 && r.bandClear(b, x, b.x): // its left side
				d += "L" + num(x) + " " + num(cy-10) + "Q" + num(x) + " " + num(cy) + " " + num(x+10) + " " + num(cy) + "L" + num(b.x) + " " + num(cy)
			default: // the lane runs into its top
				d += "L" + num(x) + " " + num(y2) + "C" + num(x) + " " + num(ty-m2) + " " + num(tx) + " " + num(ty-m2) + " " + num(tx) + " " + num(ty)
			}
			return route{d: d, lx: lx, ly: (y1+y2)/2 + 4, anchor: anchor, left: min(sx, tx, x), right: max(sx, tx, x), below: b.y + b.h}
		}
		m := (ty - sy) / 2
		// The label sits just above the target, no wider than it and the
		// gap beside it: the targets of a fan-out part there, side by side.
		return route{d: "M" + num(sx) + " " + num(sy) + "C" + num(sx) + " " + num(sy+m) + " " + num(tx) + " " + num(ty-m) + " " + num(tx) + " " + num(ty),
			lx: tx, ly: ty - 9, anchor: "middle", room: max(int((b.w+gapX-8)/charWidth), 8), left: min(sx, tx), right: max(sx, tx), below: ty}
	}
	sx, sy, tx, ty := a.x+a.w, a.cy(), b.x+b.w, b.cy()
	n := float64(side[b])
	side[b]++
	bx := r.clearRight(a, b) + 24 + 14*n
	// Out to the right, up (or down) the lane, back in: square corners
	// rounded, clear of every box between.
	up := 10.0
	if ty > sy {
		up = -10
	}
	d := "M" + num(sx) + " " + num(sy) + "L" + num(bx-10) + " " + num(sy) + "Q" + num(bx) + " " + num(sy) + " " + num(bx) + " " + num(sy-up) +
		"L" + num(bx) + " " + num(ty+up) + "Q" + num(bx) + " " + num(ty) + " " + num(bx-10) + " " + num(ty) + "L" + num(tx) + " " + num(ty)
	return route{d: d, lx: bx + 4, ly: (sy+ty)/2 + 4, anchor: "start", left: min(sx, tx), right: bx, below: max(sy, ty)}
}

// detour finds whether an edge down from a to b would cross boxes
// between them (in the cluster that holds both) and, if so, the lane x
// beside them nearer the edge and how far down they reach. Boxes are
// looked up by their top, so the work grows with the boxes passed.
func (r *svgWriter) detour(a, b *box, sx, tx float64) (x, y1, y2 float64, onRight, ok bool) {
	top, bottom := a.y+a.h, b.y
	// The clusters to look in: each one up from a and from b to the one
	// that holds both, each without the box on the way.
	type level struct{ parent, skip1, skip2 *box }
	var levels []level
	la, lb := a, b
	for la.depth > lb.depth {
		levels = append(levels, level{la.parent, la, nil})
		la = la.parent
	}
	for lb.depth > la.depth {
		levels = append(levels, level{lb.parent, lb, nil})
		lb = lb.parent
	}
	for la.parent != lb.parent {
		levels = append(levels, level{la.parent, la, nil}, level{lb.parent, lb, nil})
		la, lb = la.parent, lb.parent
	}
	if la == lb {
		return 0, 0, 0, false, false
	}
	levels = append(levels, level{la.parent, la, lb})
	// The boxes the straight way crosses, then, once a side is chosen,
	// those the lane beside them would cross, a few times over.
	lo, hi := min(sx, tx)-6, max(sx, tx)+6
	var left, right float64
	y1, y2 = bottom, top
	for round := 0; round < 4; round++ {
		found := false
		for _, l := range levels {
			kids, _ := r.sorted(l.parent)
			from := l.skip1.y
			if l.skip2 != nil {
				from = min(from, l.skip2.y)
			}
			start := sort.Search(len(kids), func(i int) bool { return kids[i].y >= from })
			for i := start; i < len(kids) && kids[i].y < bottom; i++ {
				k := kids[i]
				if k == l.skip1 || k == l.skip2 || k.y+k.h <= top || k.x > hi || k.x+k.w < lo {
					continue
				}
				if round == 0 && !crosses(k, sx, top, tx, bottom) {
					continue
				}
				if !ok {
					left, right = k.x, k.x+k.w
				}
				ok, found = true, true
				left, right = min(left, k.x), max(right, k.x+k.w)
				y1, y2 = min(y1, k.y), max(y2, k.y+k.h)
			}
		}
		if !ok {
			return 0, 0, 0, false, false
		}
		if round == 0 {
			// Towards the target when it is past the boxes, else the
			// nearer side.
			mid := (sx + tx) / 2
			onRight = tx > right || tx >= left && mid-left >= right+gapX/2-mid
		}
		if !found {
			break
		}
		// Look again along the lane.
		if onRight {
			lo, hi = right, right+gapX/2+6
		} else {
			lo, hi = left-gapX/2-6, left
		}
	}
	// Lanes at one place are set apart, outwards.
	x = left - gapX/2
	if onRight {
		x = right + gapX/2
	}
	y1, y2 = max(y1-6, top+8), max(min(y2+6, bottom-4), top+8)
	n := r.takeLane(int(x), y1, b.y+b.h, b)
	if onRight {
		x += float64(6 * n)
	} else {
		x -= float64(6 * n)
	}
	return x, y1, y2, onRight, true
}

// takeLane returns the first lane at x (0, 1, … set apart outwards) free
// from y1 to y2; edges into one box share theirs, as a bus.
func (r *svgWriter) takeLane(x int, y1, y2 float64, to *box) int {
	spans := r.lanes[x]
	for n := 0; ; n++ {
		free := true
		for _, sp := range spans {
			if sp.n == n && sp.y1 < y2 && y1 < sp.y2 {
				if sp.to == to {
					return n
				}
				free = false
			}
		}
		if free {
			r.lanes[x] = append(spans, laneSpan{n: n, y1: y1, y2: y2, to: to})
			return n
		}
	}
}

// sorted returns a cluster's children sorted by their top, and the
// tallest one's height.
func (r *svgWriter) sorted(c *box) ([]*box, float64) {
	kids, ok := r.byTop[c]
	if !ok {
		kids = append([]*box(nil), c.children...)
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].y < kids[j].y })
		r.byTop[c] = kids
		tallest := 0.0
		for _, k := range kids {
			tallest = max(tallest, k.h)
		}
		r.tallest[c] = tallest
	}
	return kids, r.tallest[c]
}

// bandClear tells whether a line level with b's middle, from x1 to x2,
// meets no other box of b's cluster.
func (r *svgWriter) bandClear(b *box, x1, x2 float64) bool {
	if b.parent == nil {
		return true
	}
	kids, tallest := r.sorted(b.parent)
	y := b.cy()
	end := sort.Search(len(kids), func(i int) bool { return kids[i].y > y+3 })
	for i := end - 1; i >= 0 && kids[i].y >= y-3-tallest; i-- {
		k := kids[i]
		if k != b && k.y+k.h > y-3 && k.x < x2 && k.x+k.w > x1 {
			return false
		}
	}
	return true
}

// crosses tells whether the S-curve down from (sx, sy) to (tx, ty), as
// route draws it, passes through box k (sampled: a box is never thinner
// than the step between two samples).
func crosses(k *box, sx, sy, tx, ty float64) bool {
	m := (ty - sy) / 2
	const n = 32
	for i := 0; i <= n; i++ {
		t := float64(i) / n
		x, y := bezier(t, sx, sx, tx, tx), bezier(t, sy, sy+m, ty-m, ty)
		if x > k.x-4 && x < k.x+k.w+4 && y > k.y-4 && y < k.y+k.h+4 {
			return true
		}
	}
	return false
}

// bezier is a cubic Bézier coordinate at t.
func bezier(t, p0, p1, p2, p3 float64) float64 {
	u := 1 - t
	return u*u*u*p0 + 3*u*u*t*p1 + 3*u*t*t*p2 + t*t*t*p3
}

// clearRight is how far right a loop from a up to b must go to pass the
// boxes between them: the right edge of every box beside the loop, in the
// cluster that holds both.
func (r *svgWriter) clearRight(a, b *box) float64 {
	right := max(a.x+a.w, b.x+b.w)
	lo, hi := min(a.y, b.y), max(a.y+a.h, b.y+b.h)
	for a.depth > b.depth {
		a = a.parent
	}
	for b.depth > a.depth {
		b = b.parent
	}
	for a.parent != b.parent {
		a, b = a.parent, b.parent
	}
	if a.parent == nil {
		return right
	}
	kids, tallest := r.sorted(a.parent)
	i := sort.Search(len(kids), func(i int) bool { return kids[i].y >= lo-tallest })
	for ; i < len(kids) && kids[i].y < hi; i++ {
		if k := kids[i]; k.y+k.h > lo {
			right = max(right, k.x+k.w+r.loopOut[k])
		}
	}
	return right
}

// edgeLabel is the text an edge carries in the drawing, before it is cut
// to the room the route leaves it.
func edgeLabel(e edge) string {
	if e.short != "" {
		return e.short
	}
	return e.label
}

// edgeRoom is the most runes of a label on an edge that has the page's
// side to itself.
const edgeRoom = 40

func (r *svgWriter) edge(e edge, rt route) {
	class := "edge"
	marker := "sw-arrow"
	switch e.style {
	case dashed:
		class, marker = "edge failure", "sw-arrow-fail"
	case thick:
		class, marker = "edge loop", "sw-arrow-loop"
	}
	w := &r.buf
	w.WriteString(`<g class="` + class + `" data-from="` + attr(e.from) + `" data-to="` + attr(e.to) + `">`)
	w.WriteString(`<path d="` + rt.d + `" marker-end="url(#` + marker + `)"/>`)
	if l := edgeLabel(e); l != "" {
		room := rt.room
		if room == 0 {
			room = edgeRoom
		}
		if cut := truncate(l, room); cut != l {
			w.WriteString(`<title>` + esc(l) + `</title>`)
			l = cut
		}
		w.WriteString(`<text class="elabel" x="` + num(rt.lx) + `" y="` + num(rt.ly) + `" text-anchor="` + rt.anchor + `">` + esc(l) + `</text>`)
	}
	w.WriteString("</g>\n")
}

// num writes a coordinate with at most one decimal.
func num(f float64) string {
	return strconv.FormatFloat(float64(int64(f*10+0.5*sign(f)))/10, 'f', -1, 64)
}

func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
}

// esc escapes text content.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// attr escapes an attribute value (xml.EscapeText also escapes quotes).
func attr(s string) string { return esc(s) }

// svgStyle is the drawing's style sheet and shared definitions: the
// arrowheads and the status glyphs. Statuses are keyed on data-status, so
// that a page can change them live; each has a colour, a border pattern
// and a glyph, never colour alone.
// SVGStyleSheet is the text of the <style> element of every drawing, the
// same for all: a page that shows drawings inline under a
// Content-Security-Policy allows it by its hash.
const SVGStyleSheet = `
.stepwise-graph .bg{fill:#fff}
.stepwise-graph text{fill:#1f2328}
.stepwise-graph .label.first{font-weight:600}
.stepwise-graph .box{fill:#fff;stroke:#57606a;stroke-width:1.5}
.stepwise-graph .fork{fill:#57606a}
.stepwise-graph .mark{fill:none;stroke:#57606a;stroke-width:1.2}
.stepwise-graph .ask .box{fill:#eef4ff;stroke:#3367d6}
.stepwise-graph .agent .box{fill:#f6eeff;stroke:#8430ce}
.stepwise-graph .fail .box{fill:#fff0ee;stroke:#c5221f}
.stepwise-graph .undo .box{fill:#fff8e5;stroke:#b06000;stroke-dasharray:4 3}
.stepwise-graph .frame{fill:#f6f8fa;stroke:#d0d7de;stroke-width:1}
.stepwise-graph .failure>.frame{fill:#fff5f5;stroke:#f1aeb5}
.stepwise-graph .success>.frame{fill:#f3fbf5;stroke:#aedcb9}
.stepwise-graph .ctitle{font-weight:600;fill:#424a53}
.stepwise-graph .edge path{fill:none;stroke:#57606a;stroke-width:1.4}
.stepwise-graph .edge.failure path{stroke:#b42318;stroke-dasharray:5 4}
.stepwise-graph .edge.loop path{stroke:#6639ba;stroke-width:2.4}
.stepwise-graph .elabel{font-size:11px;fill:#424a53;paint-order:stroke;stroke:#fff;stroke-width:4px;stroke-linejoin:round}
.stepwise-graph .gl use{display:none}
.stepwise-graph [data-status=pending] .box{fill:#f6f8fa;stroke:#6e7781;stroke-dasharray:4 3}
.stepwise-graph [data-status=running] .box{fill:#ddf4ff;stroke:#0969da;stroke-width:3}
.stepwise-graph [data-status=waiting] .box{fill:#fff8c5;stroke:#9a6700;stroke-width:2.5;stroke-dasharray:8 3}
.stepwise-graph [data-status=succeeded] .box{fill:#dafbe1;stroke:#1a7f37;stroke-width:2}
.stepwise-graph [data-status=failed] .box{fill:#ffebe9;stroke:#cf222e;stroke-width:3}
.stepwise-graph [data-status=skipped] .box{fill:#f6f8fa;stroke:#8c959f;stroke-dasharray:2 3}
.stepwise-graph [data-status=canceled] .box{fill:#eaeef2;stroke:#57606a;stroke-dasharray:6 2 1 2}
.stepwise-graph [data-status=pending]>.frame{stroke:#6e7781;stroke-dasharray:4 3}
.stepwise-graph [data-status=running]>.frame{fill:#f0f8ff;stroke:#0969da;stroke-width:2.5}
.stepwise-graph [data-status=waiting]>.frame{fill:#fffbe0;stroke:#9a6700;stroke-width:2}
.stepwise-graph [data-status=succeeded]>.frame{fill:#f0fbf3;stroke:#1a7f37;stroke-width:2}
.stepwise-graph [data-status=failed]>.frame{fill:#fff5f4;stroke:#cf222e;stroke-width:2.5}
.stepwise-graph [data-status=skipped]>.frame{stroke:#8c959f;stroke-dasharray:2 3}
.stepwise-graph [data-status=canceled]>.frame{fill:#eaeef2;stroke-dasharray:6 2 1 2}
.stepwise-graph [data-status=pending] .gl use:nth-child(1){display:inline;color:#6e7781}
.stepwise-graph [data-status=running] .gl use:nth-child(2){display:inline;color:#0969da}
.stepwise-graph [data-status=waiting] .gl use:nth-child(3){display:inline;color:#9a6700}
.stepwise-graph [data-status=succeeded] .gl use:nth-child(4){display:inline;color:#1a7f37}
.stepwise-graph [data-status=failed] .gl use:nth-child(5){display:inline;color:#cf222e}
.stepwise-graph [data-status=skipped] .gl use:nth-child(6){display:inline;color:#6e7781}
.stepwise-graph [data-status=canceled] .gl use:nth-child(7){display:inline;color:#57606a}
.stepwise-graph a .label.first{text-decoration:underline}
`

const svgStyle = "<style>" + SVGStyleSheet + "</style>\n" + svgDefs

// svgDefs are the definitions every drawing shares: arrowheads and the
// status glyphs.
const svgDefs = `<defs>
<marker id="sw-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="#57606a"/></marker>
<marker id="sw-arrow-fail" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="#b42318"/></marker>
<marker id="sw-arrow-loop" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse"><path d="M0 0L10 5L0 10z" fill="#6639ba"/></marker>
<symbol id="sw-pending" viewBox="0 0 12 12" width="12" height="12"><circle cx="6" cy="6" r="4.2" fill="none" stroke="currentColor" stroke-width="1.6"/></symbol>
<symbol id="sw-running" viewBox="0 0 12 12" width="12" height="12"><path d="M3 1.5L10.5 6L3 10.5z" fill="currentColor"/></symbol>
<symbol id="sw-waiting" viewBox="0 0 12 12" width="12" height="12"><path d="M2.5 1.5h2.6v9H2.5zM6.9 1.5h2.6v9H6.9z" fill="currentColor"/></symbol>
<symbol id="sw-succeeded" viewBox="0 0 12 12" width="12" height="12"><path d="M1.5 6.5L4.7 9.5L10.5 2.5" fill="none" stroke="currentColor" stroke-width="2"/></symbol>
<symbol id="sw-failed" viewBox="0 0 12 12" width="12" height="12"><path d="M2 2L10 10M10 2L2 10" fill="none" stroke="currentColor" stroke-width="2.2"/></symbol>
<symbol id="sw-skipped" viewBox="0 0 12 12" width="12" height="12"><path d="M1 6h8M6.5 3L9.5 6L6.5 9" fill="none" stroke="currentColor" stroke-width="1.6"/></symbol>
<symbol id="sw-canceled" viewBox="0 0 12 12" width="12" height="12"><circle cx="6" cy="6" r="4.3" fill="none" stroke="currentColor" stroke-width="1.6"/><path d="M3 9L9 3" stroke="currentColor" stroke-width="1.6"/></symbol>
</defs>
`

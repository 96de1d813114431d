package service

import (
	"fmt"
	"slices"
	"strings"

	"stepwise.dev/stepwise/internal/workflow"
)

// Whether the run reaches a step is a question about paths: a switch may
// jump over a step that an earlier switch jumps to, a loop may lead back to
// a step, a fail step may end the run before it. Each list of steps (the top
// level, a foreach body) is a small graph: every step leads to the next one,
// to its switch targets, or to the end of the run by failure, as far as the
// known values tell. A step no path reaches is skipped; a step every path
// passes is reached whenever the list is; anything else is decided at run
// time.

// node is a step of a list with what is known of it when the run reaches
// it.
type node struct {
	s     *workflow.Step
	own   verdict    // its own if
	cases []PlanCase // a switch's cases
	ends  ending     // whether it fails the run
}

// ending is whether a step or a list fails the run for sure (definite) or
// may (possible), once reached.
type ending struct{ definite, possible bool }

// analyze decides what can be decided of each step of a list on its own.
func (p *stepPlanner) analyze(steps []*workflow.Step) []node {
	nodes := make([]node, len(steps))
	for i, s := range steps {
		n := node{s: s, own: p.own(s)}
		if s.Kind() == workflow.KindSwitch {
			n.cases = p.cases(s)
		}
		n.ends = p.ends(s)
		nodes[i] = n
	}
	return nodes
}

// own decides a step's own if, once per step.
func (p *stepPlanner) own(s *workflow.Step) verdict {
	v, ok := p.owns[s]
	if !ok {
		v = p.cond(s.If)
		p.owns[s] = v
	}
	return v
}

// ends tells whether a step fails the run once reached: a fail step whose
// if holds, a step whose if cannot be evaluated, a group whose steps do.
// continue_on_error keeps the run going. It is worked out once per step: a
// group's depends on every step inside it, which the lists inside ask
// again.
func (p *stepPlanner) ends(s *workflow.Step) ending {
	e, ok := p.endings[s]
	if !ok {
		e = p.ending(s)
		p.endings[s] = e
	}
	return e
}

func (p *stepPlanner) ending(s *workflow.Step) ending {
	own := p.own(s)
	if s.ContinueOnError || own.state == "false" {
		return ending{}
	}
	var e ending
	switch {
	case own.state == DecisionError:
		e.definite = true
	case s.Kind() == workflow.KindFail:
		e.definite = true
	case s.Kind() == workflow.KindParallel:
		for _, b := range s.Parallel {
			be := p.ends(b)
			e.definite, e.possible = e.definite || be.definite, e.possible || be.possible
		}
	case s.Kind() == workflow.KindForeach:
		e = listEnding(p.analyze(s.Steps))
		if items, known, _ := p.foreachItems(s); e.definite && (!known || len(items) == 0) {
			e = ending{possible: true} // the body may run for no item at all
		}
	}
	if e.definite && own.state == DecisionRuntime {
		e = ending{possible: true}
	}
	if e.definite {
		e.possible = false
	}
	return e
}

// Successor indexes beyond the steps of a list: the list is done, or the
// run failed.
func endOf(nodes []node) int  { return len(nodes) }
func failOf(nodes []node) int { return len(nodes) + 1 }

// flow is a list of steps as a graph: each step's successors, worked out
// once, so that every question about paths costs one walk of the list.
type flow struct {
	nodes []node
	succ  [][]int
}

func newFlow(nodes []node) *flow {
	index := make(map[string]int, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- {
		index[nodes[i].s.ID] = i // the first step of an id, should two share it
	}
	f := &flow{nodes: nodes, succ: make([][]int, len(nodes))}
	for i := range nodes {
		f.succ[i] = successors(nodes, i, index)
	}
	return f
}

// successors lists where the run may go after step i.
func successors(nodes []node, i int, index map[string]int) []int {
	n := nodes[i]
	next := []int{i + 1}
	if n.own.state == "false" {
		return next
	}
	var out []int
	if n.ends.definite {
		return []int{failOf(nodes)}
	}
	if n.ends.possible {
		out = append(out, failOf(nodes))
	}
	if n.s.Kind() != workflow.KindSwitch {
		return append(out, next...)
	}
	falls := n.own.state != "true" // a switch whose if may be false may be skipped
	certain := false
	for _, c := range n.cases {
		switch c.Decision {
		case CaseTaken, DecisionRuntime:
			j, ok := index[c.Goto]
			if !ok {
				j = failOf(nodes) // validation rules this out; a run would fail the switch
			}
			out = append(out, j)
			certain = certain || c.Decision == CaseTaken
		case DecisionError:
			out = append(out, failOf(nodes))
			certain = true
		}
	}
	if falls || !certain {
		out = append(out, next...)
	}
	return out
}

// walk returns what the run can reach from the list's first step, ends
// included.
func (f *flow) walk() []bool {
	seen := make([]bool, len(f.nodes)+2)
	if len(f.nodes) == 0 {
		return seen
	}
	queue := []int{0}
	seen[0] = true
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		if i >= len(f.nodes) {
			continue
		}
		for _, j := range f.succ[i] {
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	return seen
}

// listEnding tells whether a list fails the run once started.
func listEnding(nodes []node) ending {
	f := newFlow(nodes)
	seen := f.walk()
	fails, done := seen[failOf(nodes)], seen[endOf(nodes)] || len(nodes) == 0
	return ending{definite: fails && !done, possible: fails && done}
}

// flowReaches tells for each step of a list whether the run reaches it,
// given how it reaches the list (in).
func flowReaches(nodes []node, in reach) []reach {
	out := make([]reach, len(nodes))
	f := newFlow(nodes)
	reachable := f.walk()
	passed := f.alwaysPassed(reachable)
	// stop[k]: the nearest step before k that the run reaches and that
	// does not go on to the next; fork[k]: the nearest one before k the
	// run reaches and may leave in more than one way (-1: none).
	stop, fork := -1, -1
	for k := range nodes {
		switch {
		case in.state == DecisionSkip:
			out[k] = in
		case !reachable[k]:
			out[k] = reach{DecisionSkip, f.unreachedBecause(k, stop)}
		case k == 0 || passed[k]:
			out[k] = in
		default:
			out[k] = reach{DecisionRuntime, f.mayBeBypassedBecause(fork)}
			if in.state == DecisionRuntime {
				out[k].reason += "; " + in.reason
			}
		}
		if reachable[k] && !slices.Contains(f.succ[k], k+1) {
			stop = k
		}
		if reachable[k] && len(f.succ[k]) >= 2 {
			fork = k
		}
	}
	return out
}

// alwaysPassed tells for each step whether the run cannot finish or fail
// without passing it: whether it dominates the ends in the graph of the
// list. When the run reaches neither end (a loop it never leaves), no step
// is bypassed.
func (f *flow) alwaysPassed(reachable []bool) []bool {
	n := len(f.nodes)
	passed := make([]bool, n)
	if n == 0 || !reachable[endOf(f.nodes)] && !reachable[failOf(f.nodes)] {
		for k := range passed {
			passed[k] = true
		}
		return passed
	}
	// The ends lead to one sink; the steps on the sink's chain of
	// immediate dominators are those every path to it passes.
	sink := n + 2
	succ := func(v int) []int {
		switch {
		case v < n:
			return f.succ[v]
		case v < sink:
			return []int{sink}
		}
		return nil
	}
	idom := dominators(sink+1, 0, succ)
	for v := idom[sink]; v != 0 && v >= 0; v = idom[v] {
		if v < n {
			passed[v] = true
		}
	}
	return passed
}

// dominators returns the immediate dominator of every vertex of a graph
// of n vertices reached from root through succ (the root's own and an
// unreached vertex's: -1), by Lengauer and Tarjan's algorithm with path
// compression: O(m log n) for m edges, where asking "does the run get
// there without passing v" of every v took a walk each.
func dominators(n, root int, succ func(int) []int) []int {
	num := make([]int, n) // depth-first number + 1; 0: not reached
	vertex := make([]int, 0, n)
	parent := make([]int, n)
	pred := make([][]int, n)
	// Depth-first numbering, iterative: a list's steps may be thousands
	// deep.
	type frame struct{ v, next int }
	stack := []frame{{root, 0}}
	num[root] = 1
	vertex = append(vertex, root)
	parent[root] = -1
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		out := succ(top.v)
		if top.next == len(out) {
			stack = stack[:len(stack)-1]
			continue
		}
		w := out[top.next]
		top.next++
		pred[w] = append(pred[w], top.v)
		if num[w] == 0 {
			num[w] = len(vertex) + 1
			vertex = append(vertex, w)
			parent[w] = top.v
			stack = append(stack, frame{w, 0})
		}
	}
	semi := make([]int, n) // as depth-first numbers + 1
	label := make([]int, n)
	ancestor := make([]int, n)
	idom := make([]int, n)
	bucket := make([][]int, n)
	for v := range n {
		semi[v], label[v], ancestor[v], idom[v] = num[v], v, -1, -1
	}
	var path []int
	eval := func(v int) int {
		if ancestor[v] < 0 {
			return v
		}
		// Compress the path from v up to the forest's root, iteratively.
		path = path[:0]
		for u := v; ancestor[ancestor[u]] >= 0; u = ancestor[u] {
			path = append(path, u)
		}
		for i := len(path) - 1; i >= 0; i-- {
			u := path[i]
			if a := ancestor[u]; semi[label[a]] < semi[label[u]] {
				label[u] = label[a]
			}
			ancestor[u] = ancestor[ancestor[u]]
		}
		return label[v]
	}
	for i := len(vertex) - 1; i >= 1; i-- {
		w := vertex[i]
		for _, v := range pred[w] {
			if u := eval(v); semi[u] < semi[w] {
				semi[w] = semi[u]
			}
		}
		bucket[vertex[semi[w]-1]] = append(bucket[vertex[semi[w]-1]], w)
		p := parent[w]
		ancestor[w] = p
		for _, v := range bucket[p] {
			if u := eval(v); semi[u] < semi[v] {
				idom[v] = u
			} else {
				idom[v] = p
			}
		}
		bucket[p] = nil
	}
	for _, w := range vertex[1:] {
		if idom[w] != vertex[semi[w]-1] {
			idom[w] = idom[idom[w]]
		}
	}
	idom[root] = -1
	return idom
}

// unreachedBecause names the step that keeps the run from k: stop, the
// nearest step before it that the run reaches and that does not go on to
// the next.
func (f *flow) unreachedBecause(k, stop int) string {
	if stop < 0 {
		return "no path of the run leads to it"
	}
	nodes := f.nodes
	if n := nodes[stop]; n.s.Kind() == workflow.KindSwitch && !n.ends.definite {
		var to []string
		for _, t := range f.succ[stop] {
			if t > k && t < len(nodes) {
				to = append(to, nodes[t].s.ID)
			}
		}
		if len(to) == 0 {
			return fmt.Sprintf("switch %s always jumps back before it", n.s.ID)
		}
		return fmt.Sprintf("switch %s jumps over it to %s", n.s.ID, strings.Join(to, " or "))
	}
	return fmt.Sprintf("step %s fails the run before it", nodes[stop].s.ID)
}

// mayBeBypassedBecause names fork, the nearest step before a step where
// the run may take another way.
func (f *flow) mayBeBypassedBecause(fork int) string {
	if fork < 0 {
		return "whether the run gets here is decided at run time"
	}
	if f.nodes[fork].s.Kind() == workflow.KindSwitch {
		return fmt.Sprintf("switch %s decides at run time whether the run gets here", f.nodes[fork].s.ID)
	}
	return fmt.Sprintf("step %s may fail the run before it", f.nodes[fork].s.ID)
}

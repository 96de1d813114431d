package service

import (
	"fmt"
	"slices"
	"strings"

	"stepwise.dev/stepwise/workflow"
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

func (e ending) any() bool { return e.definite || e.possible }

// analyze decides what can be decided of each step of a list on its own.
func (p *stepPlanner) analyze(steps []*workflow.Step) []node {
	nodes := make([]node, len(steps))
	for i, s := range steps {
		n := node{s: s, own: p.cond(s.If)}
		if s.Kind() == workflow.KindSwitch {
			n.cases = p.cases(s)
		}
		n.ends = p.ends(s, n.own)
		nodes[i] = n
	}
	return nodes
}

// ends tells whether a step fails the run once reached: a fail step whose
// if holds, a step whose if cannot be evaluated, a group whose steps do.
// continue_on_error keeps the run going.
func (p *stepPlanner) ends(s *workflow.Step, own verdict) ending {
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
			be := p.ends(b, p.cond(b.If))
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

// successors lists where the run may go after step i.
func successors(nodes []node, i int) []int {
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
			out = append(out, indexOf(nodes, c.Goto))
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

func indexOf(nodes []node, id string) int {
	for i, n := range nodes {
		if n.s.ID == id {
			return i
		}
	}
	return failOf(nodes) // validation rules this out; a run would fail the switch
}

// walk returns what the run can reach from the list's first step without
// passing the step avoid (-1: none), ends included.
func walk(nodes []node, avoid int) map[int]bool {
	seen := map[int]bool{}
	if len(nodes) == 0 || avoid == 0 {
		return seen
	}
	queue := []int{0}
	seen[0] = true
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		if i >= len(nodes) {
			continue
		}
		for _, j := range successors(nodes, i) {
			if j != avoid && !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	return seen
}

// listEnding tells whether a list fails the run once started.
func listEnding(nodes []node) ending {
	seen := walk(nodes, -1)
	fails, done := seen[failOf(nodes)], seen[endOf(nodes)] || len(nodes) == 0
	return ending{definite: fails && !done, possible: fails && done}
}

// flowReaches tells for each step of a list whether the run reaches it,
// given how it reaches the list (in).
func flowReaches(nodes []node, in reach) []reach {
	out := make([]reach, len(nodes))
	reachable := walk(nodes, -1)
	for k := range nodes {
		switch {
		case in.state == DecisionSkip:
			out[k] = in
		case !reachable[k]:
			out[k] = reach{DecisionSkip, unreachedBecause(nodes, k, reachable)}
		case k == 0 || !bypassed(nodes, k):
			out[k] = in
		default:
			out[k] = reach{DecisionRuntime, mayBeBypassedBecause(nodes, k, reachable)}
			if in.state == DecisionRuntime {
				out[k].reason += "; " + in.reason
			}
		}
	}
	return out
}

// bypassed reports whether the run can finish or fail without passing k.
func bypassed(nodes []node, k int) bool {
	seen := walk(nodes, k)
	return seen[endOf(nodes)] || seen[failOf(nodes)]
}

// unreachedBecause names the step that keeps the run from k: the nearest
// step before it that the run reaches and that does not go on to the next.
func unreachedBecause(nodes []node, k int, reachable map[int]bool) string {
	for j := k - 1; j >= 0; j-- {
		if !reachable[j] || slices.Contains(successors(nodes, j), j+1) {
			continue
		}
		if n := nodes[j]; n.s.Kind() == workflow.KindSwitch && !n.ends.definite {
			var to []string
			for _, t := range successors(nodes, j) {
				if t > k && t < len(nodes) {
					to = append(to, nodes[t].s.ID)
				}
			}
			if len(to) == 0 {
				return fmt.Sprintf("switch %s always jumps back before it", n.s.ID)
			}
			return fmt.Sprintf("switch %s jumps over it to %s", n.s.ID, strings.Join(to, " or "))
		}
		return fmt.Sprintf("step %s fails the run before it", nodes[j].s.ID)
	}
	return "no path of the run leads to it"
}

// mayBeBypassedBecause names the nearest step before k where the run may
// take another way.
func mayBeBypassedBecause(nodes []node, k int, reachable map[int]bool) string {
	for j := k - 1; j >= 0; j-- {
		succ := successors(nodes, j)
		if !reachable[j] || len(succ) < 2 {
			continue
		}
		if nodes[j].s.Kind() == workflow.KindSwitch {
			return fmt.Sprintf("switch %s decides at run time whether the run gets here", nodes[j].s.ID)
		}
		return fmt.Sprintf("step %s may fail the run before it", nodes[j].s.ID)
	}
	return "whether the run gets here is decided at run time"
}

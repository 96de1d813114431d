package service

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/workflow"
)

// naiveReaches is flowReaches as it was first written: one walk of the
// list per step, asking whether the run can end without passing it. The
// property below holds the graph algorithm to it.
func naiveReaches(nodes []node, in reach) []reach {
	f := newFlow(nodes)
	walk := func(avoid int) map[int]bool {
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
			for _, j := range f.succ[i] {
				if j != avoid && !seen[j] {
					seen[j] = true
					queue = append(queue, j)
				}
			}
		}
		return seen
	}
	reachable := walk(-1)
	out := make([]reach, len(nodes))
	for k := range nodes {
		seen := walk(k)
		bypassed := seen[endOf(nodes)] || seen[failOf(nodes)]
		switch {
		case in.state == DecisionSkip:
			out[k] = in
		case !reachable[k]:
			reason := "no path of the run leads to it"
			for j := k - 1; j >= 0; j-- {
				if !reachable[j] || slices.Contains(f.succ[j], j+1) {
					continue
				}
				reason = f.unreachedBecause(k, j)
				break
			}
			out[k] = reach{DecisionSkip, reason}
		case k == 0 || !bypassed:
			out[k] = in
		default:
			fork := -1
			for j := k - 1; j >= 0; j-- {
				if reachable[j] && len(f.succ[j]) >= 2 {
					fork = j
					break
				}
			}
			out[k] = reach{DecisionRuntime, f.mayBeBypassedBecause(fork)}
			if in.state == DecisionRuntime {
				out[k].reason += "; " + in.reason
			}
		}
	}
	return out
}

// randomNodes draws a list of steps as the flow sees them: actions, fail
// steps and switches with any decisions, gotos anywhere in the list
// (loops included), and steps that may or must fail the run.
func randomNodes(t *rapid.T) []node {
	n := rapid.IntRange(1, 14).Draw(t, "n")
	nodes := make([]node, n)
	states := []string{"true", "false", DecisionRuntime}
	for i := range nodes {
		s := &workflow.Step{ID: fmt.Sprintf("s%d", i)}
		nd := node{s: s, own: verdict{state: rapid.SampledFrom(states).Draw(t, "own")}}
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			s.Uses = "log"
			switch rapid.IntRange(0, 4).Draw(t, "ends") {
			case 0:
				nd.ends = ending{possible: true}
			case 1:
				nd.ends = ending{definite: true}
			}
		case 1:
			msg := "no"
			s.Fail = &msg
			nd.ends = ending{definite: nd.own.state == "true", possible: nd.own.state == DecisionRuntime}
		default:
			for range rapid.IntRange(1, 3).Draw(t, "cases") {
				c := workflow.Case{Goto: fmt.Sprintf("s%d", rapid.IntRange(0, n-1).Draw(t, "goto"))}
				s.Switch = append(s.Switch, &c)
				nd.cases = append(nd.cases, PlanCase{Goto: c.Goto,
					Decision: rapid.SampledFrom([]string{CaseTaken, CaseNotTaken, DecisionRuntime, DecisionError}).Draw(t, "decision")})
			}
		}
		nodes[i] = nd
	}
	return nodes
}

// Whether the run reaches each step, and why not, is what walking the
// list once per step says.
func TestFlowReachesAgreesWithWalkingPerStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes := randomNodes(t)
		for _, in := range []reach{{state: DecisionRun}, {DecisionRuntime, "outer"}} {
			got, want := flowReaches(nodes, in), naiveReaches(nodes, in)
			if !slices.Equal(got, want) {
				var b strings.Builder
				for i, n := range nodes {
					fmt.Fprintf(&b, "%d %s own=%s ends=%+v cases=%+v succ=%v: got %v want %v\n", i, n.s.Kind(), n.own.state, n.ends, n.cases, newFlow(nodes).succ[i], got[i], want[i])
				}
				t.Fatalf("flowReaches disagrees:\n%s", b.String())
			}
		}
	})
}

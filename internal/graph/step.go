package graph

import (
	"strconv"

	"stepwise.dev/stepwise/internal/workflow"
)

// seq draws a list of steps (the top level, a foreach body) run in order,
// entered through in, and returns the exits that leave its end.
func (b *builder) seq(steps []*workflow.Step, in []exit) []exit {
	// A goto is backward (a loop) when its target is at or before the
	// switch in the same list.
	pos := map[string]int{}
	for i, s := range steps {
		if s == nil {
			continue
		}
		if _, dup := pos[s.ID]; !dup {
			pos[s.ID] = i
		}
	}
	for i, s := range steps {
		if s == nil {
			continue
		}
		in = b.step(s, in, func(target string) bool {
			t, ok := pos[target]
			return ok && t <= i
		})
	}
	return in
}

// step draws one step entered through in and returns its exits. backward
// tells whether a goto of this step's switch jumps back.
func (b *builder) step(s *workflow.Step, in []exit, backward func(string) bool) []exit {
	var skip []exit
	if s.If != "" {
		j := nodeID('i', s.ID)
		b.node(j, rhombus, []string{"if"}, "", nil)
		b.connect(in, j)
		in = []exit{{from: j, label: clip(condition(s.If), maxText)}}
		skip = []exit{{from: j, label: "else"}}
	}
	var out []exit
	switch s.Kind() {
	case workflow.KindParallel:
		out = b.parallel(s, in)
	case workflow.KindForeach:
		out = b.foreach(s, in)
	default:
		out = b.single(s, in, backward)
	}
	return append(out, skip...)
}

// single draws a step that is one node.
func (b *builder) single(s *workflow.Step, in []exit, backward func(string) bool) []exit {
	id := nodeID('s', s.ID)
	sh, class := look(s)
	b.node(id, sh, stepLabel(s), class, s)
	b.connect(in, id)
	if s.Compensate != nil {
		b.edge(id, nodeID('k', s.ID), "compensate", dashed)
	}
	if s.Repeat != nil {
		label := clip("repeat until "+condition(s.Repeat.Until), maxText)
		short := ""
		if n := s.Repeat.MaxAttempts; n > 0 {
			short = "≤ " + strconv.Itoa(n) + "× " + label
		}
		b.chart.edges = append(b.chart.edges, edge{from: id, to: id, label: label, short: short, style: thick})
	}
	switch s.Kind() {
	case workflow.KindFail:
		// Terminal: the run goes on only down the failure path.
		if to := b.failEntry(b.order[s]); to != "" {
			b.edge(id, to, "fails", dashed)
		}
		return nil
	case workflow.KindSwitch:
		return b.cases(s, id, backward)
	}
	return []exit{{from: id}}
}

// cases draws a switch's gotos and returns its fallthrough, taken when no
// case matches (none when the last case has no if: it always matches).
func (b *builder) cases(s *workflow.Step, id string, backward func(string) bool) []exit {
	for n, c := range s.Switch {
		if c == nil {
			continue
		}
		target, ok := b.steps[c.Goto]
		if !ok {
			continue // goto-target violation: nothing to point at
		}
		label := clip(condition(c.If), maxText)
		if c.If == "" && n > 0 {
			label = "default"
		}
		style, short := solid, ""
		if backward(c.Goto) {
			style = thick
			bound, max := "", 0
			switch {
			case s.MaxVisits > 0:
				max = s.MaxVisits
				bound = "max_visits " + strconv.Itoa(max) + " on " + clip(s.ID, 0)
			case target.MaxVisits > 0:
				max = target.MaxVisits
				bound = "max_visits " + strconv.Itoa(max) + " on " + clip(target.ID, 0)
			}
			short = join(" · ", label, "loop")
			if max > 0 {
				short = join(" · ", label, "loop ≤ "+strconv.Itoa(max)+"×")
			}
			label = join(" · ", label, "loop", bound)
		}
		b.chart.edges = append(b.chart.edges, edge{from: id, to: b.entry(target), label: label, short: short, style: style})
	}
	if n := len(s.Switch); n > 0 && s.Switch[n-1] != nil && s.Switch[n-1].If == "" {
		return nil
	}
	return []exit{{from: id, label: "no match"}}
}

// parallel draws a group whose branches all start at its fork node; the
// group ends when every branch has ended. The fork keeps the edges linear:
// many exits times many branches would be quadratic.
func (b *builder) parallel(s *workflow.Step, in []exit) []exit {
	g, fork := nodeID('g', s.ID), nodeID('f', s.ID)
	var out []exit
	b.subgraph(g, groupLabel(s), s, func() {
		b.node(fork, circle, []string{"fork"}, "", nil)
		b.connect(in, fork)
		from := []exit{{from: fork}}
		for _, br := range s.Parallel {
			if br != nil {
				// A branch never jumps: gotos stay within one list.
				out = append(out, b.step(br, from, func(string) bool { return false })...)
			}
		}
	})
	if out == nil {
		out = []exit{{from: fork}} // no branches: invalid, but drawable
	}
	return b.undoGroup(s, g, out)
}

// foreach draws a loop's body once, inside a subgraph that names the
// items and the concurrency.
func (b *builder) foreach(s *workflow.Step, in []exit) []exit {
	g := nodeID('g', s.ID)
	var out []exit
	b.subgraph(g, groupLabel(s), s, func() { out = b.seq(s.Steps, in) })
	if firstStep(s.Steps) == nil {
		// No body: invalid, but drawable as the group alone.
		b.connect(in, g)
		out = []exit{{from: g}}
	}
	return b.undoGroup(s, g, out)
}

// undoGroup hangs a group's compensation (invalid: only uses and workflow
// steps compensate) off its subgraph.
func (b *builder) undoGroup(s *workflow.Step, g string, out []exit) []exit {
	if s.Compensate != nil {
		b.edge(g, nodeID('k', s.ID), "compensate", dashed)
	}
	return out
}

// entry is the node where a step begins: its if, else its node, a
// parallel group's fork, or the beginning of a foreach body.
func (b *builder) entry(s *workflow.Step) string {
	if s.If != "" {
		return nodeID('i', s.ID)
	}
	switch s.Kind() {
	case workflow.KindParallel:
		return nodeID('f', s.ID)
	case workflow.KindForeach:
		if first := firstStep(s.Steps); first != nil {
			return b.entry(first)
		}
		return nodeID('g', s.ID)
	}
	return nodeID('s', s.ID)
}

func firstStep(steps []*workflow.Step) *workflow.Step {
	for _, s := range steps {
		if s != nil {
			return s
		}
	}
	return nil
}

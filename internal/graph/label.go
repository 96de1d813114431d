package graph

import (
	"encoding/json"
	"strconv"
	"strings"

	"stepwise.dev/stepwise/internal/workflow"
)

// look returns the shape and class of a step that is one node.
func look(s *workflow.Step) (shape, string) {
	switch s.Kind() {
	case workflow.KindAsk:
		return parallelogram, "ask"
	case workflow.KindAgent:
		return hexagon, "agent"
	case workflow.KindWorkflow:
		return subroutine, ""
	case workflow.KindSleep:
		return rounded, ""
	case workflow.KindFail:
		return stadium, "fail"
	case workflow.KindSwitch:
		return rhombus, ""
	}
	return rect, ""
}

// stepLabel is a node's text: the id, the title, what the step does and
// the modifiers that shape the flow. Only the id is never shortened.
func stepLabel(s *workflow.Step) []string {
	return []string{clip(s.ID, 0), clip(s.Title, maxText), clip(action(s), maxText), clip(modifiers(s), 0)}
}

// groupLabel is a subgraph's title: the id, the title, the kind with its
// items and concurrency, and the modifiers.
func groupLabel(s *workflow.Step) string {
	what := "parallel"
	if s.Concurrency > 0 {
		what += ", concurrency " + strconv.Itoa(s.Concurrency)
	}
	if s.Kind() == workflow.KindForeach {
		// A foreach runs one item at a time unless told otherwise.
		n := s.Concurrency
		if n == 0 {
			n = 1
		}
		what = "foreach " + truncate(oneLine(items(s.Foreach)), maxText) + ", concurrency " + strconv.Itoa(n)
	}
	// One line: Mermaid leaves room for one line of a subgraph's title and
	// draws further ones under the first nodes.
	return join(" · ", clip(s.ID, 0), clip(s.Title, maxText), what, clip(modifiers(s), 0))
}

// action says what a step does, in a few words.
func action(s *workflow.Step) string {
	switch s.Kind() {
	case workflow.KindUses:
		return "uses " + s.Uses
	case workflow.KindAsk:
		if n := len(s.Ask.Fields); n > 0 {
			return join(": ", "form, "+strconv.Itoa(n)+" "+plural(n, "field", "fields"), s.Ask.Prompt)
		}
		return join(": ", "ask", s.Ask.Prompt)
	case workflow.KindAgent:
		who := "agent"
		if s.Agent.Persona != "" {
			who += " (" + s.Agent.Persona + ")"
		}
		return join(": ", who, s.Agent.Instructions)
	case workflow.KindWorkflow:
		return "workflow " + s.Workflow
	case workflow.KindSleep:
		if s.Sleep.Until != "" {
			return "sleep until " + s.Sleep.Until
		}
		return "sleep " + s.Sleep.Duration
	case workflow.KindFail:
		return join(": ", "fail", *s.Fail)
	case workflow.KindSwitch:
		return "switch"
	}
	return "" // no kind or several: the id alone
}

// modifiers lists what changes how often or whether a step runs on.
func modifiers(s *workflow.Step) string {
	var m []string
	if s.Retry != nil && s.Retry.Attempts > 1 {
		m = append(m, "retry "+strconv.Itoa(s.Retry.Attempts)+" attempts")
	}
	if s.MaxVisits > 0 {
		m = append(m, "max_visits "+strconv.Itoa(s.MaxVisits))
	}
	if s.ContinueOnError {
		m = append(m, "continue on error")
	}
	return strings.Join(m, ", ")
}

// items writes a foreach's list: its template, or the literal list as JSON.
func items(v any) string {
	if s, ok := v.(string); ok {
		return condition(workflow.Cond(s))
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "items"
	}
	return string(data)
}

// condition shows an expression without the ${{ }} around it, when it is
// one: the braces say nothing in a chart.
func condition(c workflow.Cond) string {
	s := strings.TrimSpace(string(c))
	if inner, ok := strings.CutPrefix(s, "${{"); ok {
		if inner, ok = strings.CutSuffix(inner, "}}"); ok && !strings.Contains(inner, "${{") {
			return strings.TrimSpace(inner)
		}
	}
	return s
}

// join joins the non-empty parts.
func join(sep string, parts ...string) string {
	out := parts[:0:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

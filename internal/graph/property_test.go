package graph

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/workflow"
)

// TestChartProperty: for any valid workflow the chart is well formed, the
// same every time and whatever the key order of the document, and shows
// every step and hook.
func TestChartProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data := genDocument(t)
		res := workflow.Check(data, workflow.Options{})
		if !res.Valid() {
			t.Fatalf("the generator drew an invalid workflow: %v\n%s", res.Violations, data)
		}
		text := Mermaid(res.Workflow)
		if again := Mermaid(res.Workflow); again != text {
			t.Fatalf("two charts of one workflow differ:\n%s\n---\n%s", text, again)
		}
		// The canonical form has every key sorted: the chart must not care.
		canonical, err := workflow.Canonical(res.Source.Value)
		if err != nil {
			t.Fatal(err)
		}
		w2, _, err := workflow.Load(canonical, workflow.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if other := Mermaid(w2); other != text {
			t.Fatalf("the canonical form draws differently:\n%s\n---\n%s", text, other)
		}
		c, err := parseChart(text)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		for _, s := range workflow.Flatten(res.Workflow.Steps) {
			shown, ok := c.nodes[nodeID('s', s.ID)]
			shown = firstLine(shown)
			if !ok {
				shown, ok = c.subgraphs[nodeID('g', s.ID)]
				shown, _, _ = strings.Cut(shown, " · ")
			}
			if !ok || shown != s.ID {
				t.Fatalf("step %q is not shown\n%s", s.ID, text)
			}
		}
		for i, h := range res.Workflow.OnSuccess {
			if !c.declared(hookID('s', i)) || firstLine(c.nodes[hookID('s', i)]) != text0(hookName("on_success", i, h)) {
				t.Fatalf("on_success hook %d missing\n%s", i, text)
			}
		}
		for i := range res.Workflow.OnFailure {
			if !c.declared(hookID('f', i)) {
				t.Fatalf("on_failure hook %d missing\n%s", i, text)
			}
		}
		// Every node but the two ends leads somewhere: fail steps down
		// the failure path, everything else on through the flow.
		for id := range c.nodes {
			if id != "wf_end" && id != "wf_failed" && len(c.out(id)) == 0 {
				t.Fatalf("%s is a dead end\n%s", id, text)
			}
		}
	})
}

func text0(s string) string { return text(s, 0) }

// docGen draws a valid workflow as JSON data. Step ids include Mermaid's
// keywords; titles are any text at all (they are not templates); gotos
// stay within their list, and backward ones carry max_visits.
type docGen struct {
	t    *rapid.T
	used map[string]bool
}

var trickyIDs = []string{"end", "subgraph", "graph", "flowchart", "style", "class", "classDef", "click",
	"default", "direction", "o", "x", "start", "wf_start", "s_end", "_", "A1"}

func genDocument(t *rapid.T) []byte {
	g := &docGen{t: t, used: map[string]bool{}}
	doc := map[string]any{
		"version": 1,
		"name":    rapid.StringMatching(`[a-z0-9][a-z0-9_-]{0,12}`).Draw(t, "name"),
		"inputs": map[string]any{
			"n":     map[string]any{"type": "integer", "default": 0},
			"items": map[string]any{"type": "array", "default": []any{}},
		},
		"steps": g.list("steps", 0, rapid.IntRange(1, 6).Draw(t, "top"), true),
	}
	if rapid.Bool().Draw(t, "title") {
		doc["title"] = rapid.String().Draw(t, "wf_title")
	}
	for _, list := range []string{"on_success", "on_failure"} {
		var hooks []any
		for i := rapid.IntRange(0, 2).Draw(t, list); i > 0; i-- {
			h := map[string]any{"uses": "log", "with": map[string]any{"message": "hook"}}
			if rapid.Bool().Draw(t, "hook_id") {
				h["id"] = g.id()
			}
			if rapid.Bool().Draw(t, "hook_if") {
				h["if"] = g.cond()
			}
			if list == "on_success" && rapid.Bool().Draw(t, "hook_undo") {
				h["compensate"] = map[string]any{"uses": "log"}
			}
			hooks = append(hooks, h)
		}
		if hooks != nil {
			doc[list] = hooks
		}
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func (g *docGen) id() string {
	id := rapid.OneOf(rapid.SampledFrom(trickyIDs), rapid.StringMatching(`[A-Za-z_][A-Za-z0-9_]{0,10}`)).Draw(g.t, "id")
	for n := 2; g.used[id]; n++ {
		id = fmt.Sprintf("%s_%d", strings.TrimRight(id, "0123456789_"), n)
	}
	g.used[id] = true
	return id
}

func (g *docGen) cond() string {
	return fmt.Sprintf(rapid.SampledFrom([]string{"inputs.n > %d", "${{ inputs.n == %d }}", `inputs.n != %d && "<a href='#'>" != ""`}).Draw(g.t, "cond"),
		rapid.IntRange(0, 9).Draw(g.t, "k"))
}

// prose is free, non-empty text for templates: anything but a
// template's own $.
func (g *docGen) prose(label string) string {
	return "t " + strings.ReplaceAll(rapid.String().Draw(g.t, label), "$", "S")
}

// list draws n steps; jumps tells whether a switch may stand in it (not
// directly in a parallel group, whose branches have no list to jump in).
func (g *docGen) list(label string, depth, n int, jumps bool) []any {
	steps := make([]map[string]any, n)
	ids := make([]string, n)
	for i := range steps {
		steps[i] = g.step(depth, jumps)
		ids[i] = steps[i]["id"].(string)
	}
	// Gotos, now that every id of the list is known.
	for i, s := range steps {
		if _, ok := s["switch"]; !ok {
			continue
		}
		var cases []any
		k := rapid.IntRange(1, 3).Draw(g.t, "cases")
		for c := 0; c < k; c++ {
			target := rapid.IntRange(0, n-1).Draw(g.t, "goto")
			cs := map[string]any{"goto": ids[target]}
			if c < k-1 || rapid.Bool().Draw(g.t, "last_if") {
				cs["if"] = g.cond()
			}
			if target <= i {
				s["max_visits"] = rapid.IntRange(1, 5).Draw(g.t, "max_visits")
			}
			cases = append(cases, cs)
		}
		s["switch"] = cases
	}
	out := make([]any, n)
	for i, s := range steps {
		out[i] = s
	}
	return out
}

func (g *docGen) step(depth int, jumps bool) map[string]any {
	kinds := []string{"uses", "ask", "agent", "workflow", "sleep", "fail"}
	if jumps {
		kinds = append(kinds, "switch")
	}
	if depth < 3 {
		kinds = append(kinds, "parallel", "foreach")
	}
	kind := rapid.SampledFrom(kinds).Draw(g.t, "kind")
	s := map[string]any{"id": g.id()}
	if rapid.IntRange(0, 3).Draw(g.t, "has_title") == 0 {
		s["title"] = rapid.String().Draw(g.t, "title")
	}
	if rapid.IntRange(0, 3).Draw(g.t, "has_if") == 0 {
		s["if"] = g.cond()
	}
	switch kind {
	case "uses", "workflow":
		if kind == "uses" {
			s["uses"] = "log"
			s["with"] = map[string]any{"message": g.prose("message")}
		} else {
			s["workflow"] = "sub-flow"
		}
		if rapid.Bool().Draw(g.t, "undo") {
			s["compensate"] = map[string]any{"uses": "log"}
		}
		// Inside a group only an action takes retry, and none repeat.
		if (kind == "uses" || depth == 0) && rapid.Bool().Draw(g.t, "retry") {
			s["retry"] = map[string]any{"attempts": rapid.IntRange(1, 5).Draw(g.t, "attempts")}
		}
		if kind == "uses" && depth == 0 && rapid.Bool().Draw(g.t, "repeat") {
			s["repeat"] = map[string]any{"until": g.cond(), "every": "1s"}
		}
		s["continue_on_error"] = rapid.Bool().Draw(g.t, "continue")
	case "ask":
		s["ask"] = map[string]any{"prompt": g.prose("prompt")}
	case "agent":
		s["agent"] = map[string]any{"instructions": g.prose("instructions"), "persona": g.prose("persona")}
	case "sleep":
		s["sleep"] = "1s"
	case "fail":
		s["fail"] = g.prose("fail")
	case "switch":
		s["switch"] = nil // filled in by list
	case "parallel":
		s["parallel"] = g.list("branches", depth+1, rapid.IntRange(1, 3).Draw(g.t, "branches"), false)
	case "foreach":
		s["foreach"] = rapid.SampledFrom([]any{"${{ inputs.items }}", []any{1, "two"}}).Draw(g.t, "items")
		s["steps"] = g.list("body", depth+1, rapid.IntRange(1, 3).Draw(g.t, "body"), true)
		if rapid.Bool().Draw(g.t, "concurrency") {
			s["concurrency"] = rapid.IntRange(1, 8).Draw(g.t, "n")
		}
	}
	return s
}

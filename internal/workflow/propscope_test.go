package workflow_test

// The scoping rules of expressions (WORKFLOWS.md, section 10.6) as a model,
// and the property that the validator agrees with it.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/workflow"
)

// exportsOf lists the ids a step makes visible to the steps after it: its
// own, and those of the branches of parallel groups, at any nesting.
func exportsOf(s map[string]any) []string {
	ids := []string{s["id"].(string)}
	branches, _ := s["parallel"].([]any)
	for _, b := range branches {
		ids = append(ids, exportsOf(b.(map[string]any))...)
	}
	return ids
}

// visibleFrom returns the ids the expressions of the step at path may
// reference (its repeat.until and compensate aside), and whether the step
// is inside a foreach body.
//
//   - A step sees the steps before it in its list, with their exports, and
//     whatever its list could see at that point.
//   - A parallel branch sees what the group sees, never its siblings.
//   - A foreach body sees what the foreach sees, and its own earlier steps.
func visibleFrom(doc map[string]any, path string) (ids map[string]bool, inForeach bool) {
	ids = map[string]bool{}
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var container any = doc
	for k := 0; k+1 < len(parts); k += 2 {
		key, i := parts[k], mustAtoi(parts[k+1])
		list := container.(map[string]any)[key].([]any)
		if key == "steps" {
			if k > 0 {
				inForeach = true
			}
			for _, earlier := range list[:i] {
				for _, id := range exportsOf(earlier.(map[string]any)) {
					ids[id] = true
				}
			}
		}
		container = list[i]
	}
	return ids, inForeach
}

// topVisible returns the ids outputs and hooks may reference.
func topVisible(doc map[string]any) map[string]bool {
	ids := map[string]bool{}
	for _, s := range doc["steps"].([]any) {
		for _, id := range exportsOf(s.(map[string]any)) {
			ids[id] = true
		}
	}
	return ids
}

func mustAtoi(s string) int {
	i, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return i
}

// TestReferenceIsValidIffTheModelSeesIt puts a reference to some step (or
// hook, or item) into a step's if, or into an output, and checks that the
// workflow stays valid exactly when the scoping model says the reference is
// visible there.
func TestReferenceIsValidIffTheModelSeesIt(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		wf := genWorkflow(t)
		var targets []string
		for _, s := range allSteps(wf) {
			targets = append(targets, s.step["id"].(string))
		}
		for _, h := range allHooks(wf) {
			if id, ok := h.step["id"].(string); ok {
				targets = append(targets, id)
			}
		}
		targets = append(targets, "item", "index")
		target := rapid.SampledFrom(targets).Draw(t, "target")
		ref := fmt.Sprintf("steps.%s.status", target)
		if target == "item" || target == "index" {
			ref = target
		}

		var where string
		var visible bool
		if rapid.Bool().Draw(t, "in_output") {
			where = "/outputs/probe"
			outputs, _ := wf["outputs"].(map[string]any)
			if outputs == nil {
				outputs = map[string]any{}
				wf["outputs"] = outputs
			}
			outputs["probe"] = "${{ " + ref + " }}"
			visible = topVisible(wf)[target]
		} else {
			st := rapid.SampledFrom(allSteps(wf)).Draw(t, "step")
			where = st.path + "/if"
			st.step["if"] = ref + " != 'x'"
			ids, inForeach := visibleFrom(wf, st.path)
			visible = ids[target] || (ref == target && inForeach)
		}

		doc := spelling(t, wf)
		res := workflow.Check(doc, workflow.Options{})
		if visible && !res.Valid() {
			t.Fatalf("%s at %s is visible by the scoping rules, yet\n%s", ref, where, report(doc, res.Violations))
		}
		if !visible {
			for _, v := range res.Violations {
				if v.Rule == workflow.RuleReference && v.Path == where {
					return
				}
			}
			t.Fatalf("%s at %s is not visible by the scoping rules, yet no reference violation there\n%s", ref, where, report(doc, res.Violations))
		}
	})
}

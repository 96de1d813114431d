package engine

import (
	"encoding/json"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/store"
)

// A step whose expression would allocate past the evaluation's ceiling
// fails with the code EXPRESSION_BUDGET, in the run's error and in the
// step.failed event; other expression failures carry no code.
func TestExpressionBudgetFailsTheStep(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		with, code string
	}{
		{`"${{ len(repeat(repeat('x', 100000), 100000)) }}"`, CodeExpressionBudget},
		{`"${{ int('abc') }}"`, ""},
	} {
		id, err := h.start(`version: 1
name: budget
steps:
  - id: big
    uses: transform
    with: {value: `+c.with+`}
`, nil)
		if err != nil {
			t.Fatal(err)
		}
		r := h.wait(id)
		if r.Status != store.StatusFailed {
			t.Fatalf("%s: status %s, want failed", c.with, r.Status)
		}
		var m map[string]any
		if err := json.Unmarshal(r.Error, &m); err != nil {
			t.Fatal(err)
		}
		code, _ := m["code"].(string)
		if code != c.code || m["step_id"] != "big" {
			t.Fatalf("%s: run error %s, want code %q", c.with, r.Error, c.code)
		}
		evs, err := h.store.Events(t.Context(), id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, ev := range evs {
			if ev.Type == EventStepFailed {
				found = true
				if got := strings.Contains(string(ev.Data), `"code":"`+CodeExpressionBudget+`"`); got != (c.code != "") {
					t.Errorf("%s: step.failed event %s", c.with, ev.Data)
				}
			}
		}
		if !found {
			t.Errorf("%s: no step.failed event", c.with)
		}
	}
}

package engine

import (
	"errors"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/workflow"
)

const sourcesFlow = `version: 1
name: sources
inputs:
  given: {type: string}
  from_env: {type: integer, env: COUNT}
  defaulted: {type: boolean, default: true}
  optional: {type: string, required: false}
  absent: {type: string}
  pin: {type: integer, secret: true, env: PIN}
steps:
  - id: a
    uses: noop
`

// ResolveInputs says where each value came from, and Start refuses the
// inputs with the same violations, secrets masked in both.
func TestResolveInputsSourcesAndMaskedViolations(t *testing.T) {
	h := newHarness(t)
	h.env["COUNT"] = "7"
	h.env["PIN"] = "not-a-number-but-secret"
	res := workflow.Check([]byte(sourcesFlow), workflow.Options{})
	given := map[string]any{"given": "x", "stray": 1}
	r := h.eng.ResolveInputs(res.Workflow, given)
	want := map[string]string{"given": SourceGiven, "from_env": SourceEnv, "defaulted": SourceDefault, "optional": SourceNone, "absent": SourceMissing, "pin": SourceEnv}
	for name, src := range want {
		if r.Sources[name] != src {
			t.Errorf("%s: source %q, want %q", name, r.Sources[name], src)
		}
	}
	if r.Values["from_env"] != int64(7) || r.FromEnv["from_env"] != "COUNT" || len(r.Unknown) != 1 || r.Unknown[0] != "stray" {
		t.Fatalf("resolution %+v", r)
	}
	_, err := h.start(sourcesFlow, given)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInputInvalid || len(e.Violations) != len(r.Violations) || len(e.Violations) != 3 {
		t.Fatalf("start: %v (resolution: %+v)", err, r.Violations)
	}
	if !strings.Contains(r.Violations[len(r.Violations)-1].Message, "not-a-number-but-secret") {
		t.Fatalf("the unmasked type error no longer quotes the value, so this test checks nothing: %+v", r.Violations)
	}
	masked := MaskViolations(h.eng.InputSecrets(res.Workflow, given), r.Violations)
	for i, v := range e.Violations {
		if v != masked[i] {
			t.Errorf("start's violation %+v, resolution's %+v", v, masked[i])
		}
		if strings.Contains(v.Message+v.Actual, "not-a-number-but-secret") {
			t.Errorf("a secret in %+v", v)
		}
	}
}

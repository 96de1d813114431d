package service

import (
	"errors"
	"testing"

	"stepwise.dev/stepwise/internal/engine"
)

// Answers keyed by no question or agent step are refused, each named.
func TestCheckAnswerSteps(t *testing.T) {
	svc := openWith(t, Options{})
	load := func(src string) *Loaded {
		t.Helper()
		l, err := svc.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	l := load("version: 1\nname: w\nsteps:\n  - id: q\n    ask: {prompt: Q?}\n  - {id: a, uses: noop}\n  - id: g\n    foreach: [1]\n    steps:\n      - id: inner\n        agent: {instructions: do it}\n")
	if err := svc.CheckAnswerSteps(l, map[string]any{"q": 1, "inner": 2, AnswersInputsKey: map[string]any{}}); err != nil {
		t.Fatalf("steps that ask refused: %v", err)
	}
	err := svc.CheckAnswerSteps(l, map[string]any{"q": 1, "a": 2, "qq": 3})
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != CodeAnswerStepUnknown || len(e.Violations) != 2 ||
		e.Violations[0].Path != "/a" || e.Violations[1].Path != "/qq" {
		t.Fatalf("got %#v", err)
	}
}

package engine

import (
	"fmt"
	"strings"

	"stepwise.dev/stepwise/internal/workflow"
)

// unsupported lists the features of a workflow that this engine validates
// but does not execute yet. A run that would silently skip a retry, a
// compensation or a hook would lie about what happened, so such workflows
// are refused when the run starts.
func unsupported(wf *workflow.Workflow) []string {
	var out []string
	add := func(s *workflow.Step, what string) {
		out = append(out, fmt.Sprintf("%s (step %s)", what, s.ID))
	}
	for _, s := range workflow.Flatten(wf.Steps) {
		for _, b := range s.Parallel {
			if b.Kind() == workflow.KindSwitch {
				add(b, "a switch as a parallel branch (it has nowhere to go)")
			}
		}
	}
	return out
}

func unsupportedError(wf *workflow.Workflow, what []string) *Error {
	return &Error{Code: CodeUnsupported, Category: CategoryValidation, Workflow: wf.Name,
		Message:    fmt.Sprintf("workflow %s uses features this version of the engine does not execute yet: %s", wf.Name, strings.Join(what, ", ")),
		Suggestion: "the workflow is valid; run it with an engine that supports these features, or remove them"}
}

// nested lists the steps inside a step's parallel branches and foreach
// body, at any depth.
func nested(s *workflow.Step) []*workflow.Step {
	return append(workflow.Flatten(s.Parallel), workflow.Flatten(s.Steps)...)
}

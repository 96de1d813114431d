package service

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/workflow"
)

// CodeAnswerStepUnknown: answers given ahead (an answers file) name a step
// that takes no answer in the workflow or its sub-workflows.
const CodeAnswerStepUnknown = "ANSWER_STEP_UNKNOWN"

// AnswersInputsKey is the key of an answers file that carries inputs
// instead of an answer.
const AnswersInputsKey = "_inputs"

// CheckAnswerSteps refuses answers given ahead, keyed by step id, whose
// keys name no question or agent step of l's workflow or of a sub-workflow
// it calls: such an answer would never be used, and the run would stop at
// the question it was meant for. The error names every such key and the
// steps that do take answers. When a sub-workflow it calls cannot be read
// now (gone since it was checked), any key may belong to it, and nothing is
// refused.
func (s *Service) CheckAnswerSteps(l *Loaded, answers map[string]any) error {
	return s.checkAnswerSteps(l.Workflow, subDir(l), answers)
}

// CheckRunAnswerSteps is CheckAnswerSteps for answers to a run that exists
// (resume, retry, fork): the workflow it is pinned to, its sub-workflows
// found where the run finds them.
func (s *Service) CheckRunAnswerSteps(ctx context.Context, runID string, answers map[string]any) error {
	if len(answers) == 0 {
		return nil
	}
	run, err := s.Store.GetRun(ctx, runID)
	if err != nil {
		return runNotFound(runID, err)
	}
	wf, err := s.Engine.Definition(ctx, run.Version)
	if err != nil {
		return err
	}
	var st engine.State
	_ = json.Unmarshal(run.State, &st)
	return s.checkAnswerSteps(wf, st.Dir, answers)
}

func (s *Service) checkAnswerSteps(wf *workflow.Workflow, dir string, answers map[string]any) error {
	if len(answers) == 0 {
		return nil
	}
	wfs, complete := s.allCalledWorkflows(wf, dir)
	if !complete {
		return nil
	}
	takes := map[string]bool{}
	for _, w := range wfs {
		for _, st := range workflow.Flatten(w.Steps) {
			if st.Ask != nil || st.Agent != nil {
				takes[st.ID] = true
			}
		}
	}
	var unknown []string
	for k := range answers {
		if k != AnswersInputsKey && !takes[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	steps := make([]string, 0, len(takes))
	for id := range takes {
		steps = append(steps, id)
	}
	sort.Strings(steps)
	those := "it has no question or agent step"
	if len(steps) > 0 {
		those = "its steps that take answers: " + strings.Join(steps, ", ")
	}
	e := &engine.Error{Code: CodeAnswerStepUnknown, Category: engine.CategoryValidation, Workflow: wf.Name,
		Message:    fmt.Sprintf("the answers name no question or agent step of workflow %s (%s)", wf.Name, those),
		Suggestion: "key each answer by the id of the step that asks"}
	for _, k := range unknown {
		e.Violations = append(e.Violations, workflow.Violation{Path: workflow.Pointer(k), Rule: "answer-step",
			Message: fmt.Sprintf("no question or agent step %q", k)})
	}
	return e
}

package service

import (
	"errors"
	"fmt"
	"strings"

	"stepwise.dev/stepwise/internal/action"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/workflow"
)

// CheckShell refuses, before a run starts, a workflow that would run a
// shell command this service's policy refuses — rather than failing it
// midway with some steps done. It looks at every `uses: shell` of the
// workflow: steps at any depth (parallel branches, foreach bodies),
// compensations, questions' choices_from, on_success and on_failure
// hooks, and the sub-workflows it calls. A command written as a template is only known when the step
// runs; the shell action checks it then.
func (s *Service) CheckShell(l *Loaded) error {
	if !s.shellRestricted() {
		return nil
	}
	return s.checkShellOf(s.calledWorkflows(l.Workflow, subDir(l)))
}

// shellRestricted reports whether the shell policy refuses anything.
func (s *Service) shellRestricted() bool {
	return !s.ShellPolicy.Enabled || len(s.ShellPolicy.Allow) > 0
}

// checkShellOf checks the shell calls of workflows, in order.
func (s *Service) checkShellOf(wfs []*workflow.Workflow) error {
	for _, wf := range wfs {
		for _, u := range shellUses(wf) {
			program, env, known := staticCommand(u.with)
			if !known && s.ShellPolicy.Enabled {
				continue
			}
			err := s.ShellPolicy.Check(program, env)
			var refusal *action.ShellRefusal
			if !errors.As(err, &refusal) {
				continue
			}
			return &engine.Error{Code: action.CodeShellNotAllowed, Category: CategorySecurity, Workflow: wf.Name, StepID: u.id,
				Message:    fmt.Sprintf("workflow %s runs a shell command in %s: %s", wf.Name, u.where, refusal.Reason),
				Suggestion: "run it from the local command line, or ask the operator to start the server with --allow-shell or --allow-shell-cmd NAME"}
		}
	}
	return nil
}

// shellUse is one place a workflow calls the shell action.
type shellUse struct {
	id, where string
	with      map[string]any
}

// shellUses lists every call of the shell action in a workflow.
func shellUses(wf *workflow.Workflow) []shellUse {
	var out []shellUse
	add := func(uses, id, where string, with map[string]any) {
		if uses == "shell" {
			out = append(out, shellUse{id: id, where: where, with: with})
		}
	}
	compensation := func(c *workflow.Action, id string) {
		if c != nil {
			add(c.Uses, id, "the compensation of step "+id, c.With)
		}
	}
	for _, st := range workflow.Flatten(wf.Steps) {
		add(st.Uses, st.ID, "step "+st.ID, st.With)
		compensation(st.Compensate, st.ID)
		if st.Ask != nil && st.Ask.ChoicesFrom != nil {
			add(st.Ask.ChoicesFrom.Uses, st.ID, "the choices_from of step "+st.ID, st.Ask.ChoicesFrom.With)
		}
	}
	for _, group := range []struct {
		kind  string
		hooks []*workflow.Hook
	}{{"on_success", wf.OnSuccess}, {"on_failure", wf.OnFailure}} {
		kind := group.kind
		for i, h := range group.hooks {
			id := h.ID
			if id == "" {
				id = fmt.Sprintf("%s[%d]", kind, i)
			}
			add(h.Uses, h.ID, kind+" hook "+id, h.With)
			compensation(h.Compensate, id)
		}
	}
	return out
}

// staticCommand is the program a shell call runs and the environment
// names it sets, when they are written out rather than templates.
func staticCommand(with map[string]any) (program string, env map[string]string, known bool) {
	command, ok := with["command"].(string)
	if !ok || strings.Contains(command, "${{") {
		return "", nil, false
	}
	program = command
	switch sh := with["shell"].(type) {
	case bool:
		if sh {
			program = "sh"
		}
	case nil:
	default:
		return "", nil, false // a template decides
	}
	if e, ok := with["env"].(map[string]any); ok {
		env = make(map[string]string, len(e))
		for k := range e {
			env[k] = ""
		}
	} else if with["env"] != nil {
		return "", nil, false
	}
	return program, env, true
}

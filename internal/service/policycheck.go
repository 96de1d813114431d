package service

import (
	"context"
	"strings"

	"stepwise.dev/stepwise/internal/workflow"
)

// The start-time policy checks (CheckShell, CheckEnv) look at a workflow
// and every sub-workflow it calls; a start needs both, read once.

// subDir is where a loaded workflow's sub-workflows are looked up besides
// the library: its file's directory ("" for one that has no file).
func subDir(l *Loaded) string {
	if l.Path == "" {
		return ""
	}
	return absDir(l.Path)
}

// calledWorkflows lists wf and every sub-workflow it calls by a literal
// name (found from dir as the engine finds it), at any depth, each once (a
// workflow may call itself), depth first. A sub-workflow that is missing or
// does not parse is left out: its step fails when it runs.
func (s *Service) calledWorkflows(wf *workflow.Workflow, dir string) []*workflow.Workflow {
	wfs, _ := s.allCalledWorkflows(wf, dir)
	return wfs
}

// allCalledWorkflows is calledWorkflows, and whether the list is every
// workflow wf may run: false when a step names its sub-workflow by an
// expression, or names one that is missing or does not parse.
func (s *Service) allCalledWorkflows(wf *workflow.Workflow, dir string) ([]*workflow.Workflow, bool) {
	var out []*workflow.Workflow
	complete := true
	seen := map[string]bool{}
	var walk func(wf *workflow.Workflow, dir string)
	walk = func(wf *workflow.Workflow, dir string) {
		out = append(out, wf)
		for _, st := range workflow.Flatten(wf.Steps) {
			if st.Workflow == "" {
				continue
			}
			if strings.Contains(st.Workflow, "${{") {
				complete = false
				continue
			}
			loc, err := s.findSubWorkflow(dir, st.Workflow)
			if err != nil {
				complete = false
				continue
			}
			if seen[loc.path] {
				continue
			}
			seen[loc.path] = true
			data, err := loc.read()
			if err != nil {
				complete = false
				continue
			}
			sub, err := s.parseIn(data, loc.dir())
			if err != nil {
				complete = false
				continue
			}
			walk(sub.Workflow, loc.dir())
		}
	}
	walk(wf, dir)
	return out, complete
}

// policyRefusals is what the shell policy and the environment policy
// refuse of wf and the sub-workflows it calls (found from dir), which are
// read once for both.
func (s *Service) policyRefusals(wf *workflow.Workflow, dir string) (shell, env error) {
	shellOn, envOn := s.shellRestricted(), s.EnvPolicy.Restricted
	if !shellOn && !envOn {
		return nil, nil
	}
	wfs := s.calledWorkflows(wf, dir)
	if shellOn {
		shell = s.checkShellOf(wfs)
	}
	if envOn {
		env = s.checkEnvOf(wfs)
	}
	return shell, env
}

// checkPolicies is CheckShell, then CheckEnv, of a workflow to start.
func (s *Service) checkPolicies(l *Loaded) error {
	shell, env := s.policyRefusals(l.Workflow, subDir(l))
	if shell != nil {
		return shell
	}
	return env
}

// checkRunPolicies applies checkPolicies to the workflow a run is pinned
// to (retry and fork run it again).
func (s *Service) checkRunPolicies(ctx context.Context, runID string) error {
	if !s.shellRestricted() && !s.EnvPolicy.Restricted {
		return nil // no need to load the definition
	}
	l, err := s.Definition(ctx, runID)
	if err != nil {
		return nil // the engine reports a missing run in its own words
	}
	return s.checkPolicies(l)
}

package service

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/workflow"
)

// CodeEnvNotAllowed refuses a workflow that declares an environment
// variable the server does not let workflows read.
const CodeEnvNotAllowed = "ENV_NOT_ALLOWED"

// CheckEnv refuses, before a run starts, a workflow that declares an
// environment variable this service's policy does not let workflows read
// — in its env list, an input's or a question's env — itself or in a
// sub-workflow it calls, rather than letting it run and read the variable
// as unset. A sub-workflow named by a template is only known when its step
// runs; the policy applies to its reads then (they read as unset).
func (s *Service) CheckEnv(l *Loaded) error {
	if !s.EnvPolicy.Restricted {
		return nil
	}
	return s.checkEnvOf(s.calledWorkflows(l.Workflow, subDir(l)))
}

// checkEnvOf checks the declared variables of workflows: the first that
// declares a refused one is refused, with each of its declarations.
func (s *Service) checkEnvOf(wfs []*workflow.Workflow) error {
	for _, wf := range wfs {
		var names []string
		var vs []workflow.Violation
		for _, u := range wf.EnvUses() {
			if s.EnvPolicy.Allows(u.Name) {
				continue
			}
			names = append(names, u.Name)
			vs = append(vs, workflow.Violation{Path: u.Path, Rule: "env-not-allowed",
				Message: fmt.Sprintf("workflow %s reads the environment variable %s, which this server does not let workflows read", wf.Name, u.Name)})
		}
		if len(vs) == 0 {
			continue
		}
		names = s.EnvPolicy.Refused(names)
		return &engine.Error{Code: CodeEnvNotAllowed, Category: CategorySecurity, Workflow: wf.Name, Violations: vs,
			Message:    fmt.Sprintf("workflow %s reads environment variables this server does not let workflows read: %s", wf.Name, strings.Join(names, ", ")),
			Suggestion: "run it from the local command line, or " + secret.AllowHint(names)}
	}
	return nil
}

// checkCredentials refuses catalog credentials that name ($NAME) an
// environment variable the policy does not let workflows read: a catalog's
// operations send them to the document's server.
func (s *Service) checkCredentials(auth map[string]catalog.Credential) error {
	if !s.EnvPolicy.Restricted {
		return nil
	}
	var names []string
	var vs []workflow.Violation
	for _, scheme := range slices.Sorted(maps.Keys(auth)) {
		c := auth[scheme]
		for _, f := range []struct{ field, value string }{{"value", c.Value}, {"username", c.Username}, {"password", c.Password}} {
			if !secret.IsEnvRef(f.value) || s.EnvPolicy.Allows(f.value[1:]) {
				continue
			}
			names = append(names, f.value[1:])
			vs = append(vs, workflow.Violation{Path: workflow.Pointer("auth", scheme, f.field), Rule: "env-not-allowed",
				Message: fmt.Sprintf("the credential names the environment variable %s, which this server does not let workflows read", f.value[1:])})
		}
	}
	if len(vs) == 0 {
		return nil
	}
	names = s.EnvPolicy.Refused(names)
	return &engine.Error{Code: CodeEnvNotAllowed, Category: CategorySecurity, Violations: vs,
		Message:    "the catalog's credentials name environment variables this server does not let workflows read: " + strings.Join(names, ", "),
		Suggestion: "import it from the local command line, or " + secret.AllowHint(names)}
}

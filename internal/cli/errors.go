package cli

import (
	"stepwise.dev/stepwise/code"
	"stepwise.dev/stepwise/internal/service"
)

// nextStep is an error's next step in CLI terms: the stepwise commands to
// run, chosen by the error's code (mcpserver/errors.go words the same
// codes in MCP tools). Codes whose next step is no command keep the
// service's neutral suggestion.
func nextStep(e *service.Error) string {
	run := e.RunID
	if run == "" {
		run = "RUN"
	}
	switch e.Code {
	case code.RunNotFound:
		return "list runs with `stepwise runs`"
	case code.RunFinished:
		return "see it with `stepwise show " + run + "`; `stepwise retry " + run + "` (a failed run) or `stepwise fork " + run + " --from STEP` runs it again"
	case code.RunNotFailed:
		return "`stepwise fork " + run + " --from STEP` runs it again"
	case code.RunCompensated:
		return "fork it from its first step: `stepwise fork " + run + " --from STEP`"
	case code.RunPaused:
		return "`stepwise resume " + run + "` resumes it"
	case code.RunBusy:
		return "`stepwise show " + run + "` shows where it is now; then run the command again"
	case code.StepNotFound:
		if e.Argument == "to_step" {
			return "give one of the steps listed, or start over with `stepwise restart " + run + "`"
		}
		return "give --from one of the top-level steps listed (`stepwise show " + run + "` shows the run's steps)"
	case code.PauseTimedOut:
		return "`stepwise show " + run + "` shows the failed step; `stepwise retry " + run + "` runs it again from there"
	case code.TokenExpired, code.TokenInvalid, code.TokenAlreadyUsed:
		return "`stepwise show " + run + "` shows the run's state and its open pause"
	case code.SecretInClear:
		if e.RunID != "" {
			return "answer it in a terminal: `stepwise resume " + run + "`"
		}
	case code.WorkflowInvalid:
		return "fix the listed violations (`stepwise validate FILE` shows them with positions; `stepwise save --draft` keeps a workflow that is not valid yet)"
	case service.CodeNotFound:
		return "list the library with `stepwise list`, or give a workflow file's path"
	case service.CodeUnsafeName:
		return "use a name as `stepwise list` or `stepwise catalog list` shows them (lowercase letters, digits, - and _; no paths)"
	case service.CodeVersionConflict:
		if e.CurrentVersion == "" {
			return "it was removed meanwhile: save it without --expected-version to create it again"
		}
		return "`stepwise get " + e.Workflow + "` shows the current version; merge your change and save with --expected-version " + e.CurrentVersion + " (or --overwrite)"
	case service.CodeCatalogNotFound:
		return "list the catalogs with `stepwise catalog list`"
	case service.CodeCatalogConflict:
		return "import it again with --overwrite to replace it, or give another --name"
	}
	return e.Suggestion
}

package mcpserver

import (
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/service"
)

// TestDerivedSecretsOverMCP: run_start and run_get show what a workflow
// computes from a secret as ***, and workflow_validate warns of an input
// named like a credential that is not secret (the workflow stays valid).
func TestDerivedSecretsOverMCP(t *testing.T) {
	const token = "tok-abcdefghijklmnopqrstuvwxyz"
	t.Setenv("DERIVED_TOKEN", token)
	e := newEnv(t, Options{}, service.Options{})
	cs := e.connect(nil)
	def := `version: 1
name: derived
inputs:
  token: {type: string, secret: true, env: DERIVED_TOKEN}
  api_key: {type: string, default: none}
steps:
  - id: up
    uses: transform
    with: {value: "${{ upper(inputs.token) }}"}
  - id: cut
    uses: transform
    with: {value: "${{ inputs.token[0:10] }}"}
outputs:
  up: ${{ steps.up.output }}
  cut: ${{ steps.cut.output }}
  short: ${{ inputs.token[0:2] }}
  size: ${{ declassify(len(steps.up.output)) }}
`
	var val WorkflowValidateOut
	if call(t, cs, "workflow_validate", map[string]any{"content": def}, &val) || !val.Valid ||
		len(val.Warnings) != 1 || val.Warnings[0].Path != "/inputs/api_key" || val.Warnings[0].Rule != "secret-name" {
		t.Fatalf("workflow_validate: %+v", val)
	}
	var run RunResult
	if call(t, cs, "run_start", map[string]any{"definition": def, "wait_seconds": 10}, &run) || run.Status != "succeeded" {
		t.Fatalf("run_start: %+v", run)
	}
	seen := toText(run)
	var got map[string]any
	if call(t, cs, "run_get", map[string]any{"run_id": run.RunID, "steps_cursor": ""}, &got) {
		t.Fatalf("run_get: %v", got)
	}
	seen += toText(got)
	if !strings.Contains(toText(got), `"output":"***"`) {
		t.Errorf("run_get shows no masked step output: %s", toText(got))
	}
	outs, _ := got["outputs"].(map[string]any)
	for _, name := range []string{"up", "cut", "short"} {
		if outs[name] != "***" || run.Outputs[name] != "***" {
			t.Errorf("output %s shown as %v (run_start %v)", name, outs[name], run.Outputs[name])
		}
	}
	if outs["size"] != float64(len(token)) {
		t.Errorf("declassified output shown as %v", outs["size"])
	}
	for _, s := range []string{token, strings.ToUpper(token), token[0:10]} {
		if strings.Contains(seen, s) {
			t.Errorf("%q shown in clear:\n%s", s, seen)
		}
	}
}

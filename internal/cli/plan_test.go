package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const planYAML = `version: 1
name: deploy
inputs:
  region: {type: string, enum: [fsn1, nbg1]}
  replicas: {type: integer, default: 2}
  token: {type: string, secret: true, required: false}
steps:
  - id: create
    uses: log
    with: {message: 'create ${{ inputs.replicas }} in ${{ inputs.region }}'}
  - id: big
    if: inputs.replicas > 5
    uses: log
    with: {message: big}
  - id: confirm
    ask: {prompt: 'Created in ${{ inputs.region }}. Announce?', type: boolean}
  - id: announce
    if: steps.confirm.answer
    uses: log
    with: {message: '${{ steps.create.output }}'}
`

func TestPlanCommand(t *testing.T) {
	home := t.TempDir()
	file := write(t, "deploy.yaml", planYAML)

	code, out, errOut := runOut(t, home, "plan", file)
	if code != ExitInvalid {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitInvalid, out, errOut)
	}
	for _, want := range []string{"deploy (sha256:", "NOT READY", "region (string, required): missing", `✗ input "region" is required`,
		"replicas (integer): 2 (default)", "token (string, secret): null (not given)", "with: {\"message\":\"create 2 in ${{ inputs.region }}\"}"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}

	code, out, _ = runOut(t, home, "plan", file, "-i", "region=nbg1", "-i", "replicas=3", "-i", "token=hunter2-secret")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"ready to run", "replicas (integer): 3 (given)", "token (string, secret): *** (given)",
		"run     create: uses log", `with: {"message":"create 3 in nbg1"}`,
		"skip    big: uses log if inputs.replicas > 5 — its if is false",
		"prompt: Created in nbg1. Announce?",
		"runtime announce: uses log if steps.confirm.answer — its if reads steps.confirm.answer",
		`with: {"message":"${{ steps.create.output }}"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Fatalf("the secret is printed:\n%s", out)
	}

	// --json, and a library name.
	if err := os.MkdirAll(filepath.Join(home, "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "workflows", "deploy.yaml"), []byte(planYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runOut(t, home, "plan", "deploy", "-i", "region=fsn1", "--json")
	var p struct {
		Ready  bool `json:"ready"`
		Inputs []struct {
			Name, Source string
			Value        any
		} `json:"inputs"`
		Steps []struct{ ID, Decision string } `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if code != ExitOK || !p.Ready || len(p.Steps) != 4 || p.Steps[1].Decision != "skip" || p.Inputs[0].Value != "fsn1" {
		t.Fatalf("exit %d, plan %+v", code, p)
	}

	// Nothing was recorded.
	if code, out, _ := runOut(t, home, "runs", "--json"); code != ExitOK || strings.Contains(out, "deploy") {
		t.Fatalf("runs after plans: %d %s", code, out)
	}
}

func TestPlanCommandErrors(t *testing.T) {
	home := t.TempDir()
	bad := write(t, "bad.yaml", "version: 1\nname: bad\nsteps:\n  - id: a\n    uses: log\n    with: {message: '${{ inputs.nope }}'}\n")
	code, out, _ := runOut(t, home, "plan", bad)
	if code != ExitInvalid || !strings.Contains(out, "bad.yaml:6:") || !strings.Contains(out, `input "nope" is not declared`) {
		t.Fatalf("invalid workflow: exit %d\n%s", code, out)
	}
	file := write(t, "ok.yaml", planYAML)
	for _, args := range [][]string{
		{"plan"},
		{"plan", file, "-i", "region"},
		{"plan", filepath.Join(t.TempDir(), "missing.yaml")},
		{"plan", "nope"},
	} {
		if code, _, errOut := runOut(t, home, args...); code != ExitUsage || !strings.HasPrefix(errOut, "stepwise: ") {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errOut, ExitUsage)
		}
	}
	// A name that is neither a file nor a library name is refused as unsafe.
	if code, _, errOut := runOut(t, home, "plan", "Bad_Name"); code != ExitUsage || !strings.Contains(errOut, "unsafe") {
		t.Errorf("unsafe name: exit %d %s", code, errOut)
	}
}

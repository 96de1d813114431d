package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
	"stepwise.dev/stepwise/internal/workflow"
)

// derivedFlow computes values from a secret input and a secret answer:
// the three leaks of issue 21 (upper, toBase64, a slice), a log of one,
// and a later step that uses a derived value.
const derivedFlow = `version: 1
name: derived
inputs:
  token: {type: string, secret: true}
steps:
  - id: pw
    ask: {prompt: "Password?", type: string, secret: true}
  - id: up
    uses: transform
    with: {value: "${{ upper(inputs.token) }}"}
  - id: b64
    uses: transform
    with: {value: "${{ toBase64(steps.pw.answer) }}"}
  - id: cut
    uses: transform
    with: {value: {prefix: "${{ inputs.token[0:10] }}", note: plain}}
  - id: say
    uses: log
    with: {message: "up is ${{ steps.up.output }}"}
  - id: plain
    uses: transform
    with: {value: "${{ len(steps.say.status) }}"}
on_success:
  - id: tell
    uses: log
    with: {message: "${{ inputs.token[0:2] }}"}
outputs:
  up: ${{ steps.up.output }}
  b64: ${{ toBase64(steps.pw.answer) }}
  cut: ${{ inputs.token[0:10] }}
  short: ${{ inputs.token[0:2] }}
  status: ${{ steps.say.status }}
`

const (
	derivedToken = "tok-abcdefghijklmnopqrstuvwxyz"
	derivedPW    = "Hunter2-correct-horse"
)

// derivedForms are the secret values and what the workflow derives from
// them, none of which may be stored or shown in clear.
func derivedForms() []string {
	return []string{derivedToken, derivedPW, strings.ToUpper(derivedToken),
		base64.StdEncoding.EncodeToString([]byte(derivedPW)), derivedToken[0:10]}
}

// TestDerivedSecretsNeverInClear: values computed from a secret input or
// answer are secret: stored sealed (nowhere in the database file in
// clear), masked in events, *** in the run's outputs however short — and
// later steps still compute with them.
func TestDerivedSecretsNeverInClear(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	id, err := h.start(derivedFlow, map[string]any{"token": derivedToken})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	if _, err := h.eng.Continue(ctx, h.pause(id).Token, derivedPW); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	var seen bytes.Buffer
	evs, _ := h.store.Events(ctx, id, 0, 0)
	var succeeded map[string]any
	for _, e := range evs {
		seen.Write(e.Data)
		if e.Type == EventRunSucceeded {
			_ = json.Unmarshal(e.Data, &succeeded)
		}
	}
	for _, name := range []string{"up", "b64", "cut", "short"} {
		if succeeded[name] != "***" {
			t.Errorf("run.succeeded shows output %s as %v, want ***", name, succeeded[name])
		}
	}
	if succeeded["status"] != "succeeded" {
		t.Errorf("a value read from no secret is masked: %v", succeeded["status"])
	}
	steps, _ := h.store.Steps(ctx, id)
	hook := false
	for _, st := range steps {
		hook = hook || strings.HasPrefix(st.StepID, "on_success:")
		switch st.StepID {
		case "up", "b64":
			var s string
			if json.Unmarshal(st.Output, &s) != nil || !strings.HasPrefix(s, "sealed:") {
				t.Errorf("output of %s stored as %s, want sealed", st.StepID, st.Output)
			}
		case "cut", "say":
			// Only the secret member is sealed; a plain one stays.
			var m map[string]any
			_ = json.Unmarshal(st.Output, &m)
			part, _ := m["prefix"].(string)
			if st.StepID == "say" {
				part, _ = m["message"].(string)
			} else if m["note"] != "plain" {
				t.Errorf("plain member of cut stored as %v", m["note"])
			}
			if !strings.HasPrefix(part, "sealed:") {
				t.Errorf("output of %s stored as %s, want its secret member sealed", st.StepID, st.Output)
			}
		case "plain":
			if string(st.Output) != "9" {
				t.Errorf("output of plain stored as %s", st.Output)
			}
		default:
			if strings.HasPrefix(st.StepID, "on_success:") && string(st.Output) != `"***"` {
				t.Errorf("output of hook %s stored as %s", st.StepID, st.Output)
			}
		}
	}
	if !hook {
		t.Error("the on_success hook was not recorded")
	}
	h.close() // every page is in the database and WAL files now
	for _, f := range []string{h.path, h.path + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			seen.Write(b)
		}
	}
	for _, s := range derivedForms() {
		if bytes.Contains(seen.Bytes(), []byte(s)) {
			t.Errorf("%q found in clear", s)
		}
	}
}

// TestDerivedSecretUsableLaterAndAfterRestart: a later step computes with
// a secret step output in clear (stored sealed, opened when the run is
// loaded again), and declassify makes a value shown in clear.
func TestDerivedSecretUsableLaterAndAfterRestart(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	const doc = `version: 1
name: declassified
inputs:
  token: {type: string, secret: true}
steps:
  - id: up
    uses: transform
    with: {value: "${{ upper(inputs.token) }}"}
  - id: wait
    ask: {prompt: "Go on?", type: boolean}
  - id: check
    uses: transform
    with: {value: "${{ declassify(lower(steps.up.output) == inputs.token) }}"}
outputs:
  same: ${{ steps.check.output }}
  length: ${{ declassify(len(steps.up.output)) }}
  up: ${{ steps.up.output }}
`
	id, err := h.start(doc, map[string]any{"token": derivedToken})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	tok := h.pause(id).Token
	h.close()
	h.open() // the run is loaded afresh: its sealed output is opened
	if _, err := h.eng.Continue(ctx, tok, true); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	var out map[string]any
	_ = json.Unmarshal(r.Outputs, &out)
	if r.Status != store.StatusSucceeded || out["same"] != true || out["length"] != float64(len(derivedToken)) {
		t.Fatalf("status %s outputs %s error %s", r.Status, r.Outputs, r.Error)
	}
	if s, _ := out["up"].(string); !strings.HasPrefix(s, "sealed:") {
		t.Fatalf("secret output stored as %v", out["up"])
	}
}

// TestDerivedSecretPassedToSubWorkflow: a value computed from a secret and
// passed to a sub-workflow input not marked secret is secret in the child
// too (its input stored sealed, its outputs from it sealed), and the
// calling step gets the child's secret outputs in clear to compute with.
func TestDerivedSecretPassedToSubWorkflow(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	library(t, h, map[string]string{"child": `version: 1
name: child
inputs:
  key: {type: string}
  label: {type: string}
steps:
  - id: tail
    uses: transform
    with: {value: "${{ inputs.key[4:] }}"}
outputs:
  tail: ${{ steps.tail.output }}
  label: ${{ inputs.label }}
`})
	doc := `version: 1
name: parent
inputs:
  token: {type: string, secret: true}
steps:
  - id: call
    workflow: child
    with: {key: "${{ upper(inputs.token) }}", label: plain}
outputs:
  ok: ${{ declassify(steps.call.output.tail == upper(inputs.token)[4:]) }}
  label: ${{ declassify(steps.call.output.label) }}
`
	id, err := h.start(doc, map[string]any{"token": derivedToken})
	if err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	var out map[string]any
	_ = json.Unmarshal(r.Outputs, &out)
	if r.Status != store.StatusSucceeded || out["ok"] != true || out["label"] != "plain" {
		t.Fatalf("status %s outputs %s error %s", r.Status, r.Outputs, r.Error)
	}
	kids, err := h.eng.Children(ctx, r)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children %v %v", kids, err)
	}
	child := kids[0]
	var inputs map[string]any
	_ = json.Unmarshal(child.Inputs, &inputs)
	if s, _ := inputs["key"].(string); !strings.HasPrefix(s, "sealed:") || inputs["label"] != "plain" {
		t.Fatalf("child inputs stored as %s", child.Inputs)
	}
	_, sec, err := h.eng.RunSecrets(ctx, child)
	if err != nil || !sec.Input("key") || sec.Input("label") || !sec.RunOutput("tail") || sec.RunOutput("label") {
		t.Fatalf("child secrets: %v %+v", err, sec)
	}
	h.close()
	var seen []byte
	for _, f := range []string{h.path, h.path + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			seen = append(seen, b...)
		}
	}
	for _, s := range []string{strings.ToUpper(derivedToken), strings.ToUpper(derivedToken)[4:]} {
		if bytes.Contains(seen, []byte(s)) {
			t.Errorf("%q found in clear", s)
		}
	}
}

// TestAnswerComputedFromSecretIsSecret: a question not marked secret whose
// auto (or default) reads a secret may be answered with a value computed
// from it: its answer is stored sealed, and what reads it is secret.
func TestAnswerComputedFromSecretIsSecret(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	doc := `version: 1
name: auto
inputs:
  token: {type: string, secret: true}
steps:
  - id: key
    ask: {prompt: "Key?", type: string, auto: "${{ upper(inputs.token) }}"}
  - id: hint
    ask: {prompt: "Hint for ${{ inputs.token }} (${{ upper(inputs.token) }})?", type: string, default: "${{ inputs.token[0:12] }}"}
  - id: use
    uses: transform
    with: {value: "${{ steps.key.answer }}"}
outputs:
  key: ${{ steps.key.answer }}
  hint: ${{ steps.hint.answer }}
`
	id, err := h.start(doc, map[string]any{"token": derivedToken})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	if _, err := h.eng.Continue(ctx, h.pause(id).Token, derivedToken[0:12]); err != nil {
		t.Fatal(err)
	}
	r := h.wait(id)
	if r.Status != store.StatusSucceeded {
		t.Fatalf("status %s %s", r.Status, r.Error)
	}
	steps, _ := h.store.Steps(ctx, id)
	for _, st := range steps {
		if st.StepID == "key" || st.StepID == "hint" {
			if !storedSecret(st.Answer) {
				t.Errorf("answer of %s stored as %s, want sealed", st.StepID, st.Answer)
			}
		}
		if st.StepID == "use" && !strings.Contains(string(st.Output), "sealed:") {
			t.Errorf("output of use stored as %s, want sealed", st.Output)
		}
	}
	h.close()
	var seen []byte
	for _, f := range []string{h.path, h.path + "-wal"} {
		if b, err := os.ReadFile(f); err == nil {
			seen = append(seen, b...)
		}
	}
	for _, s := range []string{derivedToken, strings.ToUpper(derivedToken), derivedToken[0:12]} {
		if bytes.Contains(seen, []byte(s)) {
			t.Errorf("%q found in clear", s)
		}
	}
}

// TestSecretInPromptIsMasked: a question's prompt that shows a secret is
// stored masked (a pause's request is a struct, which the masker let
// through as it was).
func TestSecretInPromptIsMasked(t *testing.T) {
	h := newHarness(t)
	id, err := h.start(`version: 1
name: prompt
inputs:
  token: {type: string, secret: true}
steps:
  - id: hint
    ask: {prompt: "Hint for ${{ inputs.token }}?", type: string}
`, map[string]any{"token": derivedToken})
	if err != nil {
		t.Fatal(err)
	}
	h.wait(id)
	if p := h.pause(id); p.Prompt != "Hint for ***?" {
		t.Fatalf("pause %+v", p)
	}
	h.close()
	b, _ := os.ReadFile(h.path + "-wal")
	b2, _ := os.ReadFile(h.path)
	if bytes.Contains(append(b, b2...), []byte(derivedToken)) {
		t.Fatal("the secret input is in the database in clear")
	}
}

// TestLearnedValuesBounded: a run's masker stops learning derived values
// at maxLearned, whatever a loop renders.
func TestLearnedValuesBounded(t *testing.T) {
	res := workflow.Check([]byte(`version: 1
name: many
inputs:
  token: {type: string, secret: true}
steps:
  - id: a
    uses: transform
    with: {value: "${{ inputs.token + string(1) }}"}
`), workflow.Options{})
	rs := &runState{wf: res.Workflow, mask: secret.NewMasker()}
	observe := rs.learner()
	for i := range 3 * maxLearned {
		observe("inputs.token + string(1)", fmt.Sprintf("%s-%d", derivedToken, i))
	}
	if n := rs.mask.Len(); n != maxLearned {
		t.Fatalf("the masker holds %d values, want %d", n, maxLearned)
	}
}

package workflow

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func mustWorkflow(t *testing.T, doc string) *Result {
	t.Helper()
	res := Check([]byte(doc), Options{})
	if !res.Valid() {
		t.Fatalf("invalid: %v", res.Violations)
	}
	return res
}

// TestSecretsFollowData: what reads a secret is secret, through steps,
// groups, form fields and the environment; declassify ends it.
func TestSecretsFollowData(t *testing.T) {
	t.Parallel()
	res := mustWorkflow(t, `version: 1
name: flow
env: [PLAIN]
inputs:
  token: {type: string, secret: true, env: API_TOKEN}
  user: {type: string}
steps:
  - id: login
    ask:
      prompt: Login
      fields:
        - {name: name, type: string}
        - {name: password, type: string, secret: true}
  - id: up
    uses: transform
    with: {value: "${{ upper(inputs.token) }}"}
  - id: again
    uses: transform
    with: {value: {nested: ["x${{ steps.up.output }}"]}}
  - id: said
    uses: log
    with: {message: "${{ steps.login.answer.password }}"}
  - id: named
    uses: transform
    with: {value: "${{ steps.login.answer.name }} ${{ inputs.user }} ${{ env.PLAIN }}"}
  - id: fromenv
    uses: transform
    with: {value: "${{ env.API_TOKEN }}"}
  - id: open
    uses: transform
    with: {value: "${{ declassify(len(steps.up.output)) }}"}
  - id: call
    uses: http
    with: {url: "https://example.com", headers: {Authorization: "Bearer ${{ inputs.token }}"}}
  - id: each
    foreach: ${{ [steps.up.output] }}
    steps:
      - id: body
        uses: transform
        with: {value: "${{ item }}"}
  - id: both
    parallel:
      - id: left
        uses: transform
        with: {value: "${{ steps.said.output }}"}
      - id: right
        uses: transform
        with: {value: "${{ run.id }}"}
outputs:
  up: ${{ steps.up.output }}
  short: ${{ inputs.token[0:2] }}
  status: ${{ steps.up.status }}
  size: ${{ steps.open.output }}
  all: ${{ toJSON(steps) }}
`)
	sec := res.Workflow.Secrets()
	for id, want := range map[string]bool{"up": true, "again": true, "said": true, "named": false, "fromenv": true,
		"open": false, "call": false, "body": true, "each": true, "left": true, "right": false, "both": true} {
		if got := sec.StepOutput(id); got != want {
			t.Errorf("StepOutput(%s) = %v, want %v", id, got, want)
		}
	}
	for name, want := range map[string]bool{"up": true, "short": true, "status": false, "size": false, "all": true} {
		if got := sec.RunOutput(name); got != want {
			t.Errorf("RunOutput(%s) = %v, want %v", name, got, want)
		}
	}
	if !sec.Template("Bearer ${{ inputs.token }}") || sec.Template("${{ inputs.user }}") || sec.Template("plain") {
		t.Error("Template misjudges")
	}
	if res.Workflow.Secrets() != sec {
		t.Error("Secrets is computed again")
	}
	if with := res.Workflow.SecretsWith([]string{"user"}); !with.StepOutput("named") || sec.StepOutput("named") {
		t.Error("SecretsWith does not make the input secret, or changes the workflow's")
	}
}

// TestSecretsNoneWithoutSecrets: a workflow without secrets says so, and
// nothing in it is secret.
func TestSecretsNoneWithoutSecrets(t *testing.T) {
	t.Parallel()
	res := mustWorkflow(t, `version: 1
name: plain
inputs:
  user: {type: string}
steps:
  - id: up
    uses: transform
    with: {value: "${{ upper(inputs.user) }}"}
outputs:
  up: ${{ steps.up.output }}
`)
	sec := res.Workflow.Secrets()
	if !sec.None() || sec.StepOutput("up") || sec.RunOutput("up") || sec.Expr("inputs.user") {
		t.Fatal("a workflow without secrets has secrets")
	}
}

// TestDeclassifyTakesOneArgument: declassify is a known function of one
// argument.
func TestDeclassifyTakesOneArgument(t *testing.T) {
	t.Parallel()
	res := Check([]byte(`version: 1
name: d
inputs:
  token: {type: string, secret: true}
steps:
  - id: a
    uses: transform
    with: {value: "${{ declassify(inputs.token, 1) }}"}
`), Options{})
	if res.Valid() || res.Violations[0].Rule != RuleExpression {
		t.Fatalf("violations %v", res.Violations)
	}
}

// TestCredentialNamesWarn: inputs, questions and form fields named like
// credentials and not marked secret give warnings, which leave the
// workflow valid.
func TestCredentialNamesWarn(t *testing.T) {
	t.Parallel()
	res := Check([]byte(`version: 1
name: w
inputs:
  api_key: {type: string}
  githubToken: {type: string}
  DB_PASSWORD: {type: string, secret: true}
  max_tokens: {type: integer}
  use_token: {type: boolean}
  user: {type: string}
steps:
  - id: password
    ask: {prompt: "Password?"}
  - id: form
    ask:
      prompt: Login
      fields:
        - {name: name, type: string}
        - {name: client_secret, type: string}
        - {name: pin, type: string, secret: true}
  - id: hidden_secret
    ask: {prompt: "Secret?", secret: true}
`), Options{})
	if !res.Valid() {
		t.Fatalf("warnings made it invalid: %v", res.Violations)
	}
	var got []string
	for _, w := range res.Warnings {
		if w.Rule != RuleSecretName || w.Line == 0 || w.Hint == "" {
			t.Errorf("warning %+v", w)
		}
		got = append(got, w.Path)
	}
	want := []string{"/inputs/api_key", "/inputs/githubToken", "/steps/0", "/steps/1/ask/fields/1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("warnings at %v, want %v", got, want)
	}
}

func TestCredentialName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"password": true, "apiKey": true, "API_KEY": true, "x-api-key": true,
		"privateKey": true, "AWS_SECRET_ACCESS_KEY": true, "token": true, "GITHUB_TOKEN": true, "passwd": true,
		"max_tokens": false, "keyboard": false, "username": false, "tokenizer": false, "region": false} {
		if got := CredentialName(name); got != want {
			t.Errorf("CredentialName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSecretShapes: the secret part of an output is as precise as the
// value written: members of a map written out, passed on by a plain
// reference, and a group's branches.
func TestSecretShapes(t *testing.T) {
	t.Parallel()
	res := mustWorkflow(t, `version: 1
name: shapes
inputs:
  token: {type: string, secret: true}
  user: {type: string}
steps:
  - id: form
    uses: transform
    with:
      value:
        user: ${{ inputs.user }}
        auth: {scheme: bearer, token: "${{ inputs.token }}"}
        list: ["${{ inputs.user }}", "${{ inputs.token }}"]
  - id: passed
    uses: transform
    with: {value: "${{ steps.form.output.auth }}"}
  - id: name
    uses: transform
    with: {value: "${{ steps.form.output.user }}"}
  - id: group
    parallel:
      - id: left
        uses: transform
        with: {value: "${{ inputs.token }}"}
      - id: right
        uses: transform
        with: {value: "${{ inputs.user }}"}
outputs:
  form: ${{ steps.form.output }}
  user: ${{ steps.form.output.user }}
  scheme: ${{ steps.passed.output.scheme }}
  right: ${{ steps.group.output.right }}
  left: ${{ steps.group.output.left }}
`)
	sec := res.Workflow.Secrets()
	star := func(any) any { return "***" }
	for _, c := range []struct {
		id, value, want string
	}{
		{"form", `{"user":"u","auth":{"scheme":"s","token":"t"},"list":["u","t"]}`, `{"auth":{"scheme":"s","token":"***"},"list":"***","user":"u"}`},
		{"passed", `{"scheme":"s","token":"t"}`, `{"scheme":"s","token":"***"}`},
		{"group", `{"left":"l","right":"r"}`, `{"left":"***","right":"r"}`},
	} {
		var v any
		_ = json.Unmarshal([]byte(c.value), &v)
		if got := toJSONText(sec.OutputShape(c.id).Apply(v, star, nil)); got != c.want {
			t.Errorf("%s: %s, want %s", c.id, got, c.want)
		}
	}
	if sec.StepOutput("name") {
		t.Error("a plain member read from a partly secret output is secret")
	}
	for name, want := range map[string]bool{"form": true, "user": false, "scheme": false, "right": false, "left": true} {
		if sec.RunOutput(name) != want {
			t.Errorf("RunOutput(%s) = %v", name, !want)
		}
	}
}

func toJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestAnswerFromSecretIsSecret: a question whose auto or default reads a
// secret has a secret answer; one that reads none does not.
func TestAnswerFromSecretIsSecret(t *testing.T) {
	t.Parallel()
	res := mustWorkflow(t, `version: 1
name: answers
inputs:
  token: {type: string, secret: true}
  user: {type: string}
steps:
  - id: auto
    ask: {prompt: "A?", auto: "${{ upper(inputs.token) }}"}
  - id: fallback
    ask: {prompt: "B?", default: "${{ inputs.token }}"}
  - id: plain
    ask: {prompt: "C?", default: "${{ inputs.user }}"}
  - id: open
    ask: {prompt: "D?", auto: "declassify(len(inputs.token))"}
  - id: echo
    uses: transform
    with: {value: "${{ steps.auto.answer }}"}
`)
	sec := res.Workflow.Secrets()
	for id, want := range map[string]bool{"auto": true, "fallback": true, "plain": false, "open": false} {
		if sec.Answer(id) != want {
			t.Errorf("Answer(%s) = %v", id, !want)
		}
	}
	if !sec.StepOutput("echo") {
		t.Error("what reads a secret answer is not secret")
	}
}

// TestShapesStayShallow: a chain of steps each passing on the previous
// output twice (whole and a member) gives shapes of bounded depth (they
// would otherwise double at each step, and so would the time to compare
// them), and the end of the chain is still secret.
func TestShapesStayShallow(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("version: 1\nname: chain\ninputs:\n  token: {type: string, secret: true}\nsteps:\n" +
		"  - id: s0\n    uses: transform\n    with: {value: \"${{ inputs.token }}\"}\n")
	const n = 200
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - id: s%d\n    uses: transform\n    with: {value: {a: \"${{ steps.s%d.output }}\", b: \"${{ steps.s%d.output.a }}\", c: plain}}\n", i, i-1, i-1)
	}
	sec := mustWorkflow(t, b.String()).Workflow.Secrets()
	last := sec.OutputShape(fmt.Sprintf("s%d", n-1))
	if last == nil || last.depth > maxShapeDepth || last.Fields["c"] != nil {
		t.Fatalf("shape of the last step: %+v", last)
	}
	for i := range n {
		if sh := sec.OutputShape(fmt.Sprintf("s%d", i)); sh == nil || sh.depth > maxShapeDepth {
			t.Fatalf("s%d: %+v", i, sh)
		}
	}
}

package workflow_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/internal/workflow"
)

// fuzzSeeds are small documents that reach the parser's and checker's
// corners: both formats, every step kind, anchors, tags, escapes, scalar
// styles and a few broken documents.
var fuzzSeeds = []string{
	`version: 1
name: provision-server
inputs:
  region: {type: string, enum: [fsn1, nbg1, hel1], default: fsn1}
  api_token: {type: string, secret: true, env: HCLOUD_TOKEN}
steps:
  - id: server_name
    ask: {prompt: "Server name?", type: string, pattern: '^[a-z0-9-]{3,63}$', default: 'web-${{ inputs.region }}'}
  - id: confirm
    ask: {prompt: "Create ${{ steps.server_name.answer }}?", type: boolean}
  - id: stop
    if: ${{ !steps.confirm.answer }}
    fail: Cancelled by the user
  - id: create
    uses: http
    with:
      method: POST
      headers: {Authorization: "Bearer ${{ inputs.api_token }}"}
      body: {name: "${{ steps.server_name.answer }}", location: "${{ inputs.region }}"}
    retry: {attempts: 3, backoff: 2s, max_backoff: 30s}
    timeout: 60s
    compensate: {uses: http, with: {url: "https://x/${{ steps.create.output.body.id }}"}}
  - id: review
    agent:
      instructions: Check the firewall rules.
      output_schema: {type: object, required: [risk], properties: {risk: {enum: [low, high]}}}
  - id: escalate
    switch:
      - if: ${{ steps.review.output.risk == "high" }}
        goto: notify
  - id: settle
    sleep: 30s
  - id: configure
    workflow: configure-server
    with: {ip: "${{ steps.create.output.body.ip }}"}
  - id: notify
    uses: http
    with: {body: {text: "done"}}
    continue_on_error: true
outputs:
  server_id: ${{ steps.create.output.body.id }}
`,
	`{"version": 1, "name": "loop", "inputs": {"items": {"type": "array", "default": [1, 2]}},
 "steps": [{"id": "each", "foreach": "${{ inputs.items }}", "concurrency": 2,
            "steps": [{"id": "one", "uses": "shell", "with": {"command": "echo ${{ item }} \u00e9 \ud83d\ude00"}}]},
           {"id": "both", "parallel": [{"id": "a", "sleep": {"until": "2026-01-02T15:04:05Z"}}, {"id": "b", "workflow": "sub"}]},
           {"id": "form", "ask": {"prompt": "Who?", "fields": [{"name": "first"}, {"name": "n", "type": "integer", "min": 1}]}}],
 "outputs": {"x": "${{ steps.a.output }} ${{ steps.form.answer.first }}"},
 "on_failure": [{"id": "h", "uses": "http", "if": "run.error != nil"}]}`,
	"version: 1\nname: anchors\nsteps:\n  - &s {id: a, uses: http, with: {x: &v [1, 2.5, true, null, ~]}}\n  - {id: b, uses: http, with: {y: *v, z: !!str 12, w: !!float 3}}\n  - id: c\n    fail: |2-\n       ${{ inputs.nope }}\n    if: >-\n      steps.a.status ==\n      'failed'\n",
	"version: 1\nname: loop\nsteps:\n  - id: a\n    max_visits: 3\n    uses: http\n  - id: b\n    switch:\n      - {if: 'steps.a.output.retry', goto: a}\n      - goto: c\n  - id: c\n    repeat: {until: steps.c.output.done, every: 1d12h, max_attempts: 5}\n    uses: http\n",
	"version: 1\nname: x\nsteps:\n  - id: a\n    uses: http\n    with: {x: \"$${{ escaped }} ${{ 'x}}' + \\\"y\\\" }}\", y: \"\\u2028\\x41\\U0001F600\"}\n",
	"version: 2\nname: BAD NAME\nsteps: []\nunknown: 1\n",
	"version: 1\nname: x\nsteps:\n  - id: a\n    uses: http\n  - id: a\n    ask: {type: choice}\n    agent: {}\n",
	"{\"version\": 1, \"name\": \"x\", \"steps\": [{\"id\": \"a\", \"fail\": \"x\"}], \"version\": 1}",
	"a: &a [*a]\n",
	"<<: {x: 1}\n",
	"--- 1\n--- 2\n",
	"",
	"[]",
	"{\"version\": 1e400}",
	"\ufeff{\"version\": 1}",
	"version: 1\nname: x\nsteps:\n\t- id: a\n",
	// Aliases that expand beyond the bound: a large scalar many times,
	// and aliases of aliases (billion laughs).
	"version: 1\nname: big\ndescription: &d '" + strings.Repeat("x", 20_000) + "'\ntags: [" + strings.Repeat("*d, ", 999) + "*d]\nsteps: []\n",
	"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
}

func FuzzCheck(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	examples, _ := filepath.Glob("../../examples/*")
	for _, name := range examples {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := checkWithin(t, data, 10*time.Second)
		for _, v := range res.Violations {
			if v.Line < 1 || v.Column < 1 || v.Rule == "" || v.Message == "" {
				t.Fatalf("malformed violation %+v", v)
			}
		}
		if again := checkWithin(t, data, 10*time.Second); !reflect.DeepEqual(again.Violations, res.Violations) {
			t.Fatalf("two checks of one document disagree:\n%v\n%v", res.Violations, again.Violations)
		}
		if !res.Valid() {
			return
		}
		if !strings.HasPrefix(res.Version, "sha256:") {
			t.Fatalf("valid document with version %q", res.Version)
		}
		// The canonical JSON of a valid workflow is the same workflow.
		canon, err := workflow.Canonical(res.Source.Value)
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		res2 := checkWithin(t, canon, 10*time.Second)
		if !res2.Valid() {
			t.Fatalf("the canonical form of a valid workflow is invalid:\n%s\n%v", canon, res2.Violations)
		}
		if res2.Version != res.Version {
			t.Fatalf("the canonical form has version %s, the document %s\n%s", res2.Version, res.Version, canon)
		}
		// So is its YAML form — where the YAML library can write it: its
		// emitter breaks a quoted line at U+2028 and U+2029 and indents the
		// rest (YAML 1.1, where they are line breaks), while the reader
		// keeps them as ordinary characters, as YAML 1.2 says (source.go),
		// so the indentation becomes part of the text.
		if hasLineSeparator(res.Source.Value) {
			return
		}
		y, err := yaml.Marshal(res.Source.Value)
		if err != nil {
			t.Fatalf("yaml.Marshal: %v", err)
		}
		if res3 := checkWithin(t, y, 10*time.Second); !res3.Valid() || res3.Version != res.Version {
			t.Fatalf("the YAML form of a valid workflow has version %q, the document %s\n%s", res3.Version, res.Version, report(y, res3.Violations))
		}
	})
}

// hasLineSeparator reports whether any string of v, key or value, holds
// U+2028 or U+2029.
func hasLineSeparator(v any) bool {
	has := func(s string) bool { return strings.ContainsAny(s, "\u2028\u2029") }
	switch x := v.(type) {
	case string:
		return has(x)
	case []any:
		for _, e := range x {
			if hasLineSeparator(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if has(k) || hasLineSeparator(e) {
				return true
			}
		}
	}
	return false
}

// checkWithin checks data, failing when Check takes longer than limit (the
// fuzzer has no time limit of its own per input: a hang would stall it).
func checkWithin(t *testing.T, data []byte, limit time.Duration) *workflow.Result {
	t.Helper()
	done := make(chan *workflow.Result, 1)
	go func() { done <- workflow.Check(data, workflow.Options{}) }()
	select {
	case res := <-done:
		return res
	case <-time.After(limit):
		t.Fatalf("Check did not return within %s", limit)
		return nil
	}
}

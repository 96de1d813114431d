package workflow

import (
	"fmt"
	"strings"
	"testing"
)

type fakeResolver struct{ actions, workflows []string }

func (r fakeResolver) HasAction(name string) (bool, []string) {
	return contains(r.actions, name), r.actions
}

func (r fakeResolver) HasWorkflow(name string) (bool, []string) {
	return contains(r.workflows, name), r.workflows
}

func TestResolverChecksActionsAndWorkflows(t *testing.T) {
	t.Parallel()
	doc := `version: 1
name: resolved
steps:
  - id: a
    uses: htp
    compensate: {uses: log}
  - id: b
    workflow: configure-sever
on_success:
  - uses: nope
`
	res := Check([]byte(doc), Options{Resolver: fakeResolver{actions: []string{"http", "log"}, workflows: []string{"configure-server"}}})
	got := map[string]string{}
	for _, v := range res.Violations {
		got[v.Path] = v.Rule + " " + v.Hint
	}
	want := map[string]string{
		"/steps/0/uses":      RuleUnknownAction + ` did you mean "http"?`,
		"/steps/1/workflow":  RuleUnknownWorkflow + ` did you mean "configure-server"?`,
		"/on_success/0/uses": RuleUnknownAction + " ",
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("%s: got %q, want %q", p, got[p], w)
		}
	}
	if len(res.Violations) != len(want) {
		t.Errorf("violations: %v", res.Violations)
	}
	// Without a resolver, names are not checked.
	if res := Check([]byte(doc), Options{}); !res.Valid() {
		t.Errorf("without a resolver: %v", res.Violations)
	}
}

func TestScopes(t *testing.T) {
	t.Parallel()
	valid := `version: 1
name: scopes
inputs:
  hosts: {type: array, default: [a, b]}
steps:
  - id: prep
    uses: log
  - id: group
    parallel:
      - id: left
        uses: log
        with: {m: "${{ steps.prep.output }}"}
      - id: nested
        parallel:
          - id: deep
            uses: log
  - id: each
    foreach: ${{ inputs.hosts }}
    steps:
      - id: first
        uses: log
        with: {m: "${{ item }} ${{ steps.left.output }}"}
      - id: inner_loop
        foreach: ${{ [1, 2] }}
        steps:
          - id: inner
            uses: log
            with: {m: "${{ item }} ${{ index }} ${{ steps.first.output }}"}
  - id: poll
    uses: http
    repeat: {until: "steps.poll.output.status == 200", every: 1s, max_attempts: 5}
    compensate: {uses: http, with: {id: "${{ steps.poll.output.id }}"}}
outputs:
  deep: ${{ steps.deep.output }}
  all: ${{ steps.each.output }}
on_failure:
  - id: notify
    uses: log
    with: {m: "${{ steps.poll.error }}"}
`
	if res := Check([]byte(valid), Options{}); !res.Valid() {
		for _, v := range res.Violations {
			t.Error(v)
		}
	}
}

func TestLoopBounds(t *testing.T) {
	t.Parallel()
	base := `version: 1
name: loops
steps:
  - id: start
    uses: log%s
  - id: again
    switch:
      - if: ${{ steps.start.status == "failed" }}
        goto: start%s
`
	unbounded := Check([]byte(strings.Replace(strings.Replace(base, "%s", "", 1), "%s", "", 1)), Options{})
	if len(unbounded.Violations) != 1 || unbounded.Violations[0].Rule != RuleUnboundedLoop {
		t.Errorf("unbounded loop: %v", unbounded.Violations)
	}
	onTarget := Check([]byte(strings.Replace(strings.Replace(base, "%s", "\n    max_visits: 3", 1), "%s", "", 1)), Options{})
	if !onTarget.Valid() {
		t.Errorf("bound on the target: %v", onTarget.Violations)
	}
	onSwitch := strings.Replace(strings.Replace(base, "%s", "", 1), "        goto: start%s", "        goto: start\n    max_visits: 2", 1)
	if res := Check([]byte(onSwitch), Options{}); !res.Valid() {
		t.Errorf("bound on the switch: %v", res.Violations)
	}
}

func TestLoadReturnsViolations(t *testing.T) {
	t.Parallel()
	_, _, err := Load([]byte("version: 1\nname: x\nsteps:\n  - id: a\n"), Options{})
	ve, ok := err.(*ValidationError)
	if !ok || len(ve.Violations) != 1 || !strings.Contains(err.Error(), "does nothing") {
		t.Fatalf("Load error = %v", err)
	}
	wf, version, err := Load([]byte("version: 1\nname: x\nsteps:\n  - {id: a, uses: log}\n"), Options{})
	if err != nil || wf.Steps[0].Kind() != KindUses || !strings.HasPrefix(version, "sha256:") {
		t.Fatalf("Load = %v %q %v", wf, version, err)
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{"30s": true, "1h30m": true, "2d": true, "1d12h": true, "500ms": true, "1.5h": true,
		"": false, "5 minutes": false, "-1s": false, "d": false, "3x": false} {
		_, err := ParseDuration(in)
		if (err == nil) != ok {
			t.Errorf("ParseDuration(%q) error = %v", in, err)
		}
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	cands := []string{"timeout", "retry", "boolean", "string"}
	for in, want := range map[string]string{"timout": "timeout", "rerty": "retry", "bool": "boolean", "xyz": "", "str": "string"} {
		if got := suggest(in, cands); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, typ string
		want    any
		ok      bool
	}{
		{"42", "integer", int64(42), true}, {"4.5", "integer", nil, false}, {"4.5", "number", 4.5, true},
		{"yes", "boolean", true, true}, {"off", "boolean", false, true}, {"maybe", "boolean", nil, false},
		{"a, b", "multi-choice", []any{"a", "b"}, true}, {`[1,"x"]`, "multi-choice", []any{1.0, "x"}, true},
		{`{"n": 3}`, "object", map[string]any{"n": int64(3)}, true}, {"{", "object", nil, false},
		{"text", "string", "text", true}, {"red", "choice", "red", true},
	} {
		got, err := ParseText(tc.in, tc.typ)
		if (err == nil) != tc.ok || (tc.ok && fmt.Sprint(got) != fmt.Sprint(tc.want)) {
			t.Errorf("ParseText(%q, %s) = %#v, %v", tc.in, tc.typ, got, err)
		}
	}
}

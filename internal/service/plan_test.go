package service

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/engine"
)

// planEnv opens a service on a temporary home whose environment is env.
func planEnv(t *testing.T, env map[string]string) *Service {
	t.Helper()
	svc, err := Open(context.Background(), Options{Home: t.TempDir(), Durability: "normal",
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Close(context.Background()) })
	return svc
}

func planOf(t *testing.T, svc *Service, content string, inputs map[string]any) *Plan {
	t.Helper()
	p, err := svc.Plan(context.Background(), PlanRequest{Content: []byte(content), Inputs: inputs})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func stepOf(t *testing.T, p *Plan, id string) PlanStep {
	t.Helper()
	for _, s := range p.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no step %s in %+v", id, p.Steps)
	return PlanStep{}
}

func inputOf(t *testing.T, p *Plan, name string) PlanInput {
	t.Helper()
	for _, in := range p.Inputs {
		if in.Name == name {
			return in
		}
	}
	t.Fatalf("no input %s in %+v", name, p.Inputs)
	return PlanInput{}
}

const deployFlow = `version: 1
name: deploy
inputs:
  region: {type: string, enum: [fsn1, nbg1]}
  replicas: {type: integer, default: 2, minimum: 1}
steps:
  - id: check
    uses: log
    with: {message: 'deploy to ${{ inputs.region }} with ${{ inputs.replicas }} replicas'}
  - id: create
    uses: transform
    with:
      value:
        region: ${{ inputs.region }}
        count: ${{ inputs.replicas * 2 }}
        after: ${{ steps.check.status }}
`

func TestPlanNamesAMissingRequiredInputThenRendersOnceGiven(t *testing.T) {
	svc := planEnv(t, nil)
	p := planOf(t, svc, deployFlow, nil)
	if !p.Valid || p.Ready {
		t.Fatalf("valid %v ready %v, want valid and not ready", p.Valid, p.Ready)
	}
	if len(p.Missing) != 1 || p.Missing[0] != "region" {
		t.Fatalf("missing %v, want [region]", p.Missing)
	}
	if len(p.Violations) != 1 || p.Violations[0].Rule != "required" || p.Violations[0].Path != "/inputs/region" {
		t.Fatalf("violations %+v", p.Violations)
	}
	if in := inputOf(t, p, "region"); in.Source != engine.SourceMissing || in.Valid || in.Value != nil || len(in.Problems) != 1 {
		t.Fatalf("region %+v", in)
	}
	if in := inputOf(t, p, "replicas"); in.Source != engine.SourceDefault || toJSON(in.Value) != "2" || !in.Valid {
		t.Fatalf("replicas %+v", in)
	}
	// What is known is rendered; the missing input stays an expression.
	check := stepOf(t, p, "check")
	if msg := check.With.(map[string]any)["message"]; msg != "deploy to ${{ inputs.region }} with 2 replicas" {
		t.Fatalf("message %q", msg)
	}

	p = planOf(t, svc, deployFlow, map[string]any{"region": "fsn1"})
	if !p.Ready || len(p.Missing) != 0 || len(p.Violations) != 0 {
		t.Fatalf("ready %v missing %v violations %+v", p.Ready, p.Missing, p.Violations)
	}
	if in := inputOf(t, p, "region"); in.Source != engine.SourceGiven || in.Value != "fsn1" || !in.Valid {
		t.Fatalf("region %+v", in)
	}
	if msg := stepOf(t, p, "check").With.(map[string]any)["message"]; msg != "deploy to fsn1 with 2 replicas" {
		t.Fatalf("message %q", msg)
	}
	// A whole-value expression keeps its type; a step output stays as written.
	value := stepOf(t, p, "create").With.(map[string]any)["value"].(map[string]any)
	if value["region"] != "fsn1" || toJSON(value["count"]) != "4" || value["after"] != "${{ steps.check.status }}" {
		t.Fatalf("value %#v", value)
	}
	for _, s := range p.Steps {
		if s.Decision != DecisionRun {
			t.Errorf("step %s: %s (%s), want run", s.ID, s.Decision, s.Reason)
		}
	}
}

func TestPlanReportsInvalidAndUndeclaredInputsLikeAStart(t *testing.T) {
	svc := planEnv(t, nil)
	inputs := map[string]any{"region": "mars", "replicas": 0, "regoin": "fsn1"}
	p := planOf(t, svc, deployFlow, inputs)
	if p.Ready {
		t.Fatal("ready with invalid inputs")
	}
	if len(p.UnknownInputs) != 1 || p.UnknownInputs[0] != "regoin" {
		t.Fatalf("unknown %v", p.UnknownInputs)
	}
	region := inputOf(t, p, "region")
	if region.Valid || region.Value != "mars" || len(region.Problems) != 1 || !strings.Contains(region.Problems[0], "one of fsn1, nbg1") {
		t.Fatalf("region %+v", region)
	}
	// The start refuses exactly what the plan reports.
	l, err := svc.Parse([]byte(deployFlow))
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.StartRun(context.Background(), l, inputs, true)
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != engine.CodeInputInvalid {
		t.Fatalf("start: %v", err)
	}
	if toJSON(e.Violations) != toJSON(p.Violations) {
		t.Fatalf("start's violations\n%s\nplan's\n%s", toJSON(e.Violations), toJSON(p.Violations))
	}
}

func TestPlanTakesAnInputFromItsEnvironmentVariable(t *testing.T) {
	svc := planEnv(t, map[string]string{"DEPLOY_REGION": "nbg1", "REPLICAS": "many"})
	flow := strings.Replace(deployFlow, "enum: [fsn1, nbg1]}", "enum: [fsn1, nbg1], env: DEPLOY_REGION}", 1)
	p := planOf(t, svc, flow, nil)
	if !p.Ready {
		t.Fatalf("not ready: %+v", p.Violations)
	}
	if in := inputOf(t, p, "region"); in.Source != engine.SourceEnv || in.Env != "DEPLOY_REGION" || in.Value != "nbg1" {
		t.Fatalf("region %+v", in)
	}
	// A given value wins over the environment.
	p = planOf(t, svc, flow, map[string]any{"region": "fsn1"})
	if in := inputOf(t, p, "region"); in.Source != engine.SourceGiven || in.Value != "fsn1" {
		t.Fatalf("region %+v", in)
	}
	// A variable that does not fit the declaration is a violation.
	flow = strings.Replace(flow, "default: 2, minimum: 1}", "default: 2, minimum: 1, env: REPLICAS}", 1)
	p = planOf(t, svc, flow, nil)
	if in := inputOf(t, p, "replicas"); p.Ready || in.Source != engine.SourceEnv || in.Valid || len(in.Problems) != 1 {
		t.Fatalf("ready %v, replicas %+v", p.Ready, in)
	}
}

const secretFlow = `version: 1
name: vault
inputs:
  token: {type: string, secret: true, min_length: 8}
  user: {type: string, default: ada}
steps:
  - id: login
    if: inputs.token != ''
    uses: log
    with: {message: 'login ${{ inputs.user }} with ${{ inputs.token }}'}
  - id: echo
    uses: transform
    with: {value: '${{ inputs.token }}'}
`

func TestPlanNeverShowsASecret(t *testing.T) {
	const token = "hunter2-correct-horse"
	svc := planEnv(t, map[string]string{"VAULT_TOKEN": token})
	for name, inputs := range map[string]map[string]any{
		"given":         {"token": token},
		"as $NAME":      {"token": "$VAULT_TOKEN"},
		"invalid":       {"token": "short"},
		"wrong type":    {"token": 12345678},
		"undeclared":    {"token": token, "extra": token},
		"not yet given": nil,
	} {
		t.Run(name, func(t *testing.T) {
			p := planOf(t, svc, secretFlow, inputs)
			out := toJSON(p)
			for _, s := range []string{token, "short", "12345678"} {
				if strings.Contains(out, s) {
					t.Fatalf("the plan shows %q:\n%s", s, out)
				}
			}
			in := inputOf(t, p, "token")
			if in.Source == engine.SourceGiven && in.Value != "***" {
				t.Fatalf("token %+v", in)
			}
			// An argument that reads the secret keeps its expression.
			if msg := stepOf(t, p, "login").With.(map[string]any)["message"]; msg != "login ada with ${{ inputs.token }}" {
				t.Fatalf("message %q", msg)
			}
		})
	}
	// The secret still decides conditions: only the decision comes out.
	p := planOf(t, svc, secretFlow, map[string]any{"token": token})
	if !p.Ready || stepOf(t, p, "login").Decision != DecisionRun {
		t.Fatalf("ready %v login %+v", p.Ready, stepOf(t, p, "login"))
	}
	// An environment variable given as the default secret is masked too.
	flow := strings.Replace(secretFlow, "min_length: 8}", "min_length: 8, env: VAULT_TOKEN}", 1)
	p = planOf(t, svc, flow, nil)
	if in := inputOf(t, p, "token"); in.Source != engine.SourceEnv || in.Value != "***" || strings.Contains(toJSON(p), token) {
		t.Fatalf("token %+v", in)
	}
}

const flowFlow = `version: 1
name: branches
env: [NOTIFY_URL]
inputs:
  n: {type: integer}
  envs: {type: array, default: [dev, prod]}
  mode: {type: string, default: fast}
steps:
  - id: small
    if: inputs.n < 5
    uses: log
    with: {message: 'small ${{ inputs.n }}'}
  - id: big
    if: inputs.n >= 5
    uses: log
    with: {message: big}
  - id: approve
    ask: {prompt: 'Ship ${{ inputs.n }} to ${{ join(inputs.envs, ", ") }}?', type: boolean}
  - id: rejected
    if: '!steps.approve.answer'
    fail: 'not approved for ${{ inputs.mode }}'
  - id: route
    switch:
      - if: inputs.mode == 'fast'
        goto: ship
      - goto: slow
  - id: slow
    uses: log
    with: {message: slow}
  - id: ship
    foreach: ${{ inputs.envs }}
    steps:
      - id: push
        if: item != 'prod'
        uses: log
        with: {message: 'push ${{ item }} ${{ inputs.mode }}'}
  - id: notify
    if: env.NOTIFY_URL != nil
    uses: log
    with: {message: '${{ env.NOTIFY_URL }}'}
  - id: checks
    if: inputs.n > 100
    parallel:
      - id: lint
        uses: noop
      - id: test
        uses: noop
`

func TestPlanDecidesConditionsNowOrAtRunTime(t *testing.T) {
	svc := planEnv(t, map[string]string{"NOTIFY_URL": "https://hooks.example/secret-path"})
	p := planOf(t, svc, flowFlow, map[string]any{"n": 3})
	if !p.Ready {
		t.Fatalf("not ready: %+v", p.Violations)
	}
	want := map[string]string{
		"small": DecisionRun, "big": DecisionSkip, "approve": DecisionRun, "rejected": DecisionRuntime,
		"route": DecisionRuntime, "slow": DecisionSkip, "ship": DecisionRuntime, "push": DecisionRuntime,
		"notify": DecisionRuntime, "checks": DecisionSkip, "lint": DecisionSkip, "test": DecisionSkip,
	}
	for id, d := range want {
		if s := stepOf(t, p, id); s.Decision != d {
			t.Errorf("step %s: %s (%s), want %s", id, s.Decision, s.Reason, d)
		}
	}
	if r := stepOf(t, p, "rejected").Reason; !strings.Contains(r, "steps.approve.answer") {
		t.Errorf("rejected's reason %q does not name what it reads", r)
	}
	if r := stepOf(t, p, "slow").Reason; !strings.Contains(r, "switch route jumps over it to ship") {
		t.Errorf("slow's reason %q", r)
	}
	if r := stepOf(t, p, "lint").Reason; !strings.Contains(r, "checks is skipped") {
		t.Errorf("lint's reason %q", r)
	}
	// The switch's first case holds with the known inputs.
	cases := stepOf(t, p, "route").Cases
	if len(cases) != 2 || cases[0].Decision != CaseTaken || cases[1].Decision != CaseNotTaken {
		t.Fatalf("cases %+v", cases)
	}
	// Items come from the inputs; item stays an expression in the body.
	ship := stepOf(t, p, "ship")
	if !ship.ItemsKnown || toJSON(ship.Foreach) != `["dev","prod"]` {
		t.Fatalf("ship %+v", ship)
	}
	if push := stepOf(t, p, "push"); push.Parent != "ship" || push.Path != "/steps/6/steps/0" || push.With.(map[string]any)["message"] != "push ${{ item }} fast" {
		t.Fatalf("push %+v", push)
	}
	if q := stepOf(t, p, "approve"); q.Prompt != "Ship 3 to dev, prod?" {
		t.Fatalf("prompt %q", q.Prompt)
	}
	// The environment decides conditions but is never rendered.
	out := toJSON(p)
	if strings.Contains(out, "secret-path") {
		t.Fatalf("the plan shows an environment value:\n%s", out)
	}

	// With other inputs the decisions change.
	p = planOf(t, svc, flowFlow, map[string]any{"n": 500, "mode": "careful", "envs": []any{}})
	for id, d := range map[string]string{"small": DecisionSkip, "big": DecisionRun, "slow": DecisionRuntime, "checks": DecisionRuntime, "lint": DecisionRuntime, "push": DecisionSkip} {
		if s := stepOf(t, p, id); s.Decision != d {
			t.Errorf("n=500: step %s: %s (%s), want %s", id, s.Decision, s.Reason, d)
		}
	}
	if r := stepOf(t, p, "push").Reason; !strings.Contains(r, "no items") {
		t.Errorf("push's reason %q", r)
	}
}

func TestPlanFailStepEndsTheRunBeforeLaterSteps(t *testing.T) {
	svc := planEnv(t, nil)
	flow := `version: 1
name: guard
inputs:
  force: {type: boolean, default: false}
steps:
  - id: stop
    if: '!inputs.force'
    fail: 'refusing without force'
  - id: work
    uses: noop
`
	p := planOf(t, svc, flow, nil)
	if s := stepOf(t, p, "stop"); s.Decision != DecisionRun || s.Message != "refusing without force" {
		t.Fatalf("stop %+v", s)
	}
	if s := stepOf(t, p, "work"); s.Decision != DecisionSkip || !strings.Contains(s.Reason, "stop fails the run") {
		t.Fatalf("work %+v", s)
	}
	p = planOf(t, svc, flow, map[string]any{"force": true})
	if stepOf(t, p, "stop").Decision != DecisionSkip || stepOf(t, p, "work").Decision != DecisionRun {
		t.Fatalf("with force: %+v", p.Steps)
	}
}

func TestPlanOfAnInvalidWorkflowIsAnAnswer(t *testing.T) {
	svc := planEnv(t, nil)
	p := planOf(t, svc, "version: 1\nname: x\nsteps:\n  - id: a\n    uses: log\n    with: {message: '${{ inputs.nope }}'}\n", nil)
	if p.Valid || p.Ready || p.Name != "x" || len(p.Violations) != 1 || p.Violations[0].Rule != "reference" || p.Steps != nil {
		t.Fatalf("plan %+v", p)
	}
	p = planOf(t, svc, "{not yaml", nil)
	if p.Valid || p.Ready || len(p.Violations) == 0 {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanFindsLibraryWorkflowsBySafeNamesOnly(t *testing.T) {
	svc := planEnv(t, nil)
	if err := os.MkdirAll(svc.Home.WorkflowsDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(svc.Home.WorkflowsDir(), "deploy.yaml"), []byte(deployFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := svc.Plan(ctx, PlanRequest{Name: "deploy", Inputs: map[string]any{"region": "nbg1"}})
	if err != nil || !p.Ready || p.Name != "deploy" {
		t.Fatalf("plan %+v, %v", p, err)
	}
	for _, name := range []string{"../deploy", "/etc/passwd", "deploy.yaml"} {
		_, err := svc.Plan(ctx, PlanRequest{Name: name})
		var e *engine.Error
		if !errors.As(err, &e) || e.Code != "UNSAFE_NAME" || e.Category != "security" {
			t.Errorf("name %q: %v, want UNSAFE_NAME", name, err)
		}
	}
	_, err = svc.Plan(ctx, PlanRequest{Name: "nope"})
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != "WORKFLOW_NOT_FOUND" {
		t.Errorf("missing: %v", err)
	}
	// A reference is a library name or a file; text inputs are typed.
	file := filepath.Join(t.TempDir(), "deploy.yaml")
	if err := os.WriteFile(file, []byte(deployFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"deploy", file} {
		p, err := svc.Plan(ctx, PlanRequest{Ref: ref, TextInputs: map[string]string{"region": "fsn1", "replicas": "3"}})
		if err != nil || !p.Ready || inputOf(t, p, "replicas").Value != int64(3) {
			t.Fatalf("ref %s: %+v, %v", ref, p, err)
		}
	}
	p, err = svc.Plan(ctx, PlanRequest{Ref: "deploy", TextInputs: map[string]string{"region": "fsn1", "replicas": "three"}})
	if err != nil || p.Ready || inputOf(t, p, "replicas").Valid {
		t.Fatalf("text that is no integer: %+v, %v", p, err)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const triageFlow = `version: 1
name: triage
inputs:
  sev: {type: string, required: false}
steps:
  - id: severity
    ask: {prompt: How bad?, auto: '${{ inputs.sev }}'}
  - id: route
    switch:
      - if: steps.severity.answer == "sev1"
        goto: page
      - if: steps.severity.answer == "sev2"
        goto: ticket
      - goto: note
  - id: page
    uses: noop
  - id: after_page
    switch: [{goto: follow_up}]
  - id: ticket
    uses: noop
  - id: after_ticket
    switch: [{goto: follow_up}]
  - id: note
    uses: noop
  - id: after_note
    switch: [{goto: close}]
  - id: follow_up
    max_visits: 3
    ask: {prompt: Resolved?, type: boolean}
  - id: again
    switch:
      - if: '!steps.follow_up.answer'
        goto: follow_up
  - id: close
    uses: noop
`

// A step one switch jumps over may be the target of another: whether the
// run reaches it follows the paths, not the order of the steps.
func TestPlanFollowsJumpsAndLoops(t *testing.T) {
	svc := planEnv(t, nil)
	p := planOf(t, svc, triageFlow, nil)
	for id, d := range map[string]string{
		"severity": DecisionRun, "route": DecisionRun,
		"page": DecisionRuntime, "after_page": DecisionRuntime, "ticket": DecisionRuntime, "note": DecisionRuntime,
		"follow_up": DecisionRuntime, "again": DecisionRuntime,
		"close": DecisionRun, // every path ends there
	} {
		if s := stepOf(t, p, id); s.Decision != d {
			t.Errorf("step %s: %s (%s), want %s", id, s.Decision, s.Reason, d)
		}
	}
	if r := stepOf(t, p, "ticket").Reason; r != "switch route decides at run time whether the run gets here" {
		t.Errorf("ticket's reason %q", r)
	}

	// With the route decided by an input, the paths not taken are skipped;
	// the loop's switch runs on the one path left, its case at run time.
	routeByInput := strings.NewReplacer(`steps.severity.answer == "sev1"`, `inputs.sev == "sev1"`,
		`steps.severity.answer == "sev2"`, `inputs.sev == "sev2"`).Replace(triageFlow)
	p = planOf(t, svc, routeByInput, map[string]any{"sev": "sev2"})
	for id, d := range map[string]string{
		"page": DecisionSkip, "after_page": DecisionSkip, "ticket": DecisionRun, "after_ticket": DecisionRun,
		"note": DecisionSkip, "after_note": DecisionSkip, "follow_up": DecisionRun, "again": DecisionRun, "close": DecisionRun,
	} {
		if s := stepOf(t, p, id); s.Decision != d {
			t.Errorf("sev2: step %s: %s (%s), want %s", id, s.Decision, s.Reason, d)
		}
	}
	if r := stepOf(t, p, "page").Reason; r != "switch route jumps over it to ticket" {
		t.Errorf("page's reason %q", r)
	}
	if r := stepOf(t, p, "note").Reason; r != "switch after_ticket jumps over it to follow_up" {
		t.Errorf("note's reason %q", r)
	}
	cases := stepOf(t, p, "route").Cases
	if cases[0].Decision != CaseNotTaken || cases[1].Decision != CaseTaken || cases[2].Decision != CaseNotTaken {
		t.Errorf("cases %+v", cases)
	}
}

// An argument that reads only known values is checked as the run will
// check it: against the action's input schema.
func TestPlanChecksAKnownActionInput(t *testing.T) {
	svc := planEnv(t, nil)
	flow := `version: 1
name: loud
inputs:
  level: {type: string, default: info}
steps:
  - id: say
    uses: log
    with: {message: hi, level: '${{ inputs.level }}'}
  - id: later
    uses: log
    with: {message: '${{ steps.say.output }}', level: '${{ inputs.level }}'}
`
	p := planOf(t, svc, flow, nil)
	if s := stepOf(t, p, "say"); len(s.Problems) != 0 || !p.Ready {
		t.Fatalf("say %+v", s)
	}
	p = planOf(t, svc, flow, map[string]any{"level": "loud"})
	if s := stepOf(t, p, "say"); len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0], "log: invalid input: with.level") {
		t.Fatalf("say %+v", s)
	}
	// Not yet known (a step output), so not checked yet.
	if s := stepOf(t, p, "later"); len(s.Problems) != 0 {
		t.Fatalf("later %+v", s)
	}
}

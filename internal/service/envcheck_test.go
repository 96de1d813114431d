package service

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/catalog"
	"stepwise.dev/stepwise/internal/engine"
	"stepwise.dev/stepwise/internal/secret"
	"stepwise.dev/stepwise/internal/store"
)

// testEnv is the environment the tests' services see.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{"OK_A": "va", "SECRET_X": "vx", "PETSTORE_KEY": "key-0123456789"}[name]
	return v, ok
}

// restricted is a service whose policy lets workflows read OK_* only.
func restricted(t *testing.T) *Service {
	t.Helper()
	return openWith(t, Options{LookupEnv: testEnv, EnvPolicy: secret.EnvPolicy{Restricted: true, Allow: []string{"OK_*"}}})
}

// Wherever a workflow declares a variable, a service whose policy does not
// let workflows read it refuses the run before it starts, naming where.
func TestStartRunRefusesEnvUpFront(t *testing.T) {
	declared := map[string]struct{ doc, path string }{
		"env list":    {"env: [OK_A, SECRET_X]\nsteps:\n  - {id: a, uses: noop}\n", "/env/1"},
		"input":       {"inputs:\n  x: {type: string, env: SECRET_X}\nsteps:\n  - {id: a, uses: noop}\n", "/inputs/x/env"},
		"question":    {"steps:\n  - id: q\n    ask: {prompt: token?, type: string, env: SECRET_X}\n", "/steps/0/ask/env"},
		"form field":  {"steps:\n  - id: q\n    ask:\n      prompt: login\n      fields:\n        - {name: user, type: string}\n        - {name: pass, type: string, secret: true, env: SECRET_X}\n", "/steps/0/ask/fields/1/env"},
		"in parallel": {"steps:\n  - id: g\n    parallel:\n      - {id: a, uses: noop}\n      - id: q\n        ask: {prompt: token?, type: string, env: SECRET_X}\n", "/steps/0/parallel/1/ask/env"},
	}
	svc := restricted(t)
	for what, d := range declared {
		l, err := svc.Parse([]byte("version: 1\nname: w\n" + d.doc))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		_, err = svc.StartRun(context.Background(), l, nil, false)
		var e *engine.Error
		if !errors.As(err, &e) || e.Code != CodeEnvNotAllowed || e.Category != CategorySecurity {
			t.Errorf("%s: %v, want %s", what, err, CodeEnvNotAllowed)
			continue
		}
		if len(e.Violations) != 1 || e.Violations[0].Path != d.path || !strings.Contains(e.Violations[0].Message, "SECRET_X") {
			t.Errorf("%s: violations %+v, want one at %s naming SECRET_X", what, e.Violations, d.path)
		}
		if !strings.Contains(e.Suggestion, "--allow-env SECRET_X") {
			t.Errorf("%s: the suggestion does not name the flag: %q", what, e.Suggestion)
		}
	}
	runs, _, err := svc.ListRuns(context.Background(), store.RunFilter{Limit: 10})
	if err != nil || len(runs) != 0 {
		t.Fatalf("refused runs were recorded: %v %v", runs, err)
	}
	// What the policy allows starts.
	l, err := svc.Parse([]byte("version: 1\nname: w\nenv: [OK_A]\nsteps:\n  - {id: a, uses: noop}\noutputs:\n  a: ${{ env.OK_A }}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.StartRun(context.Background(), l, nil, false); err != nil {
		t.Fatalf("allowed: %v", err)
	}
}

func TestEnvCheckFollowsSubWorkflows(t *testing.T) {
	svc := restricted(t)
	l := outerCalling(t, svc, "version: 1\nname: inner\nenv: [SECRET_X]\nsteps:\n  - {id: s, uses: noop}\n")
	if err := svc.CheckEnv(l); engine.CodeOf(err) != CodeEnvNotAllowed || !strings.Contains(err.Error(), "inner") {
		t.Fatalf("sub-workflow: %v", err)
	}
	if err := openWith(t, Options{}).CheckEnv(l); err != nil {
		t.Fatalf("without a policy: %v", err)
	}
}

// The start checks what the workflows declare then; reads are checked too:
// a sub-workflow edited after the start sees a refused variable as unset,
// and a secret the agent answers with a $NAME reference is refused.
func TestEnvPolicyAppliesToReads(t *testing.T) {
	// Without a policy the same run reads both variables: what the
	// restricted one does not see is the policy's doing.
	if out := readsAfterStart(t, openWith(t, Options{LookupEnv: testEnv}), "$SECRET_X"); out["a"] != "va" || out["x"] != "vx" {
		t.Fatalf("without a policy: outputs %v, want a=va x=vx", out)
	}
	if out := readsAfterStart(t, restricted(t), "$OK_A"); out["a"] != "va" || out["x"] != nil {
		t.Fatalf("restricted: outputs %v, want a=va and x unset", out)
	}
}

// readsAfterStart runs a workflow whose sub-workflow starts reading
// SECRET_X after the run started, its secret question answered through the
// agent with answer; it returns the run's outputs.
func readsAfterStart(t *testing.T, svc *Service, answer string) map[string]any {
	t.Helper()
	ctx := context.Background()
	lib := filepath.Join(svc.Home.Dir, "workflows")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	writeChild := func(doc string) {
		if err := os.WriteFile(filepath.Join(lib, "child.yaml"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeChild("version: 1\nname: child\nenv: [OK_A]\nsteps:\n  - {id: s, uses: noop}\noutputs:\n  a: ${{ env.OK_A }}\n")
	l, err := svc.Parse([]byte("version: 1\nname: parent\nsteps:\n  - id: key\n    ask: {prompt: key?, type: string, secret: true}\n  - {id: call, workflow: child}\n" +
		"outputs:\n  a: ${{ steps.call.output.a }}\n  x: ${{ steps.call.output.x }}\n"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := svc.StartRun(ctx, l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	v, err := svc.AwaitBrief(ctx, id, 20*time.Second, nil, nil)
	if err != nil || v.Pause == nil {
		t.Fatalf("no pause: %+v %v", v, err)
	}
	writeChild("version: 1\nname: child\nenv: [OK_A, SECRET_X]\nsteps:\n  - {id: s, uses: noop}\noutputs:\n  a: ${{ env.OK_A }}\n  x: ${{ env.SECRET_X }}\n")
	if svc.EnvPolicy.Restricted {
		_, err = svc.ContinueFromAgent(ctx, v.Pause.Token, "$SECRET_X")
		var e *engine.Error
		if !errors.As(err, &e) || len(e.Violations) != 1 || !strings.Contains(e.Violations[0].Message, "--allow-env SECRET_X") {
			t.Fatalf("a secret answered with a refused variable: %v", err)
		}
	}
	if _, err := svc.ContinueFromAgent(ctx, v.Pause.Token, answer); err != nil {
		t.Fatalf("a secret answered with %s: %v", answer, err)
	}
	if st, err := svc.Wait(ctx, id, 20*time.Second); st != store.StatusSucceeded {
		t.Fatalf("run: %s %v", st, err)
	}
	done, err := svc.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return done.Outputs
}

// A run started where the policy did not apply is checked again when a
// restricted server retries, forks, rewinds or restarts it.
func TestRetryAndForkCheckTheEnvPolicy(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	open := func(p secret.EnvPolicy) *Service {
		svc, err := Open(ctx, Options{Home: home, Durability: "normal", LookupEnv: testEnv, EnvPolicy: p})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	local := open(secret.EnvPolicy{})
	l, err := local.Parse([]byte("version: 1\nname: w\nenv: [SECRET_X]\nsteps:\n  - {id: a, uses: noop, with: {fail: boom}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := local.StartRun(ctx, l, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := local.Wait(ctx, id, 20*time.Second); st != store.StatusFailed {
		t.Fatalf("run: %s %v", st, err)
	}
	if err := local.Close(ctx); err != nil {
		t.Fatal(err)
	}
	server := open(secret.EnvPolicy{Restricted: true})
	defer server.Close(ctx)
	if err := server.RetryRun(ctx, id, nil); engine.CodeOf(err) != CodeEnvNotAllowed {
		t.Errorf("retry: %v, want %s", err, CodeEnvNotAllowed)
	}
	if _, err := server.ForkRun(ctx, id, "a", nil); engine.CodeOf(err) != CodeEnvNotAllowed {
		t.Errorf("fork: %v, want %s", err, CodeEnvNotAllowed)
	}
	if _, err := server.RewindRun(ctx, id, "a"); engine.CodeOf(err) != CodeEnvNotAllowed {
		t.Errorf("rewind: %v, want %s", err, CodeEnvNotAllowed)
	}
	if _, err := server.RestartRun(ctx, id); engine.CodeOf(err) != CodeEnvNotAllowed {
		t.Errorf("restart: %v, want %s", err, CodeEnvNotAllowed)
	}
}

// A catalog's credentials name variables its operations send away: the
// import checks them against the policy and writes nothing when refused.
func TestCatalogImportChecksTheEnvPolicy(t *testing.T) {
	ctx := context.Background()
	svc := openWith(t, Options{LookupEnv: testEnv, EnvPolicy: secret.EnvPolicy{Restricted: true, Allow: []string{"PETSTORE_KEY"}}})
	_, err := svc.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "Petstore", Enabled: true,
		Auth: map[string]catalog.Credential{"api_key": {Value: "$SECRET_X"}}})
	var e *engine.Error
	if !errors.As(err, &e) || e.Code != CodeEnvNotAllowed || len(e.Violations) != 1 || e.Violations[0].Path != "/auth/api_key/value" {
		t.Fatalf("refused credential: %v %+v", err, e)
	}
	if cs, _ := svc.ListCatalogs(ctx); len(cs) != 0 {
		t.Fatalf("a refused import wrote %d catalogs", len(cs))
	}
	if _, err := svc.ImportCatalog(ctx, CatalogImportRequest{Source: petstoreDoc, Title: "Petstore", Enabled: true,
		Auth: map[string]catalog.Credential{"api_key": {Value: "$PETSTORE_KEY"}}}); err != nil {
		t.Fatalf("allowed credential: %v", err)
	}
}

// A plan says what a start would refuse.
func TestPlanReportsTheEnvPolicy(t *testing.T) {
	content := []byte("version: 1\nname: w\nenv: [OK_A, SECRET_X]\nsteps:\n  - {id: a, uses: noop}\n")
	p, err := restricted(t).Plan(context.Background(), PlanRequest{Content: content})
	if err != nil {
		t.Fatal(err)
	}
	rules := []string{}
	for _, v := range p.Violations {
		rules = append(rules, v.Rule+" "+v.Path)
	}
	if p.Ready || !slices.Equal(rules, []string{"env-not-allowed /env/1"}) || !strings.Contains(p.Violations[0].Hint, "--allow-env SECRET_X") {
		t.Fatalf("refused: %+v", p)
	}
	if p, err := openWith(t, Options{LookupEnv: testEnv}).Plan(context.Background(), PlanRequest{Content: content}); err != nil || !p.Ready {
		t.Fatalf("without a policy: %+v %v", p, err)
	}
}

// A secret input given as $NAME reads the environment through the policy;
// the refusal says how to allow the variable (and only where a policy
// restricts reads).
func TestSecretInputReferencesFollowTheEnvPolicy(t *testing.T) {
	ctx := context.Background()
	doc := []byte("version: 1\nname: w\ninputs:\n  token: {type: string, secret: true}\nsteps:\n  - {id: a, uses: noop}\n")
	start := func(svc *Service, ref string) error {
		l, err := svc.Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.StartRun(ctx, l, map[string]any{"token": ref}, false)
		return err
	}
	svc := restricted(t)
	if err := start(svc, "$SECRET_X"); err == nil || !strings.Contains(err.Error(), "--allow-env SECRET_X") {
		t.Errorf("a refused variable: %v", err)
	}
	if err := start(svc, "$OK_A"); err != nil {
		t.Errorf("an allowed variable: %v", err)
	}
	if err := start(openWith(t, Options{LookupEnv: testEnv}), "$NOPE"); err == nil || strings.Contains(err.Error(), "--allow-env") {
		t.Errorf("an unset variable without a policy: %v", err)
	}
}

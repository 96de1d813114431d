package service

import (
	"context"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/store"
)

// inputValue draws a value of any type the data model has, fitting or not.
func inputValue() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Map(rapid.Int64Range(-5, 20), func(n int64) any { return n }),
		rapid.Map(rapid.SampledFrom([]string{"fsn1", "nbg1", "mars", "", "$VAULT_TOKEN", "$UNSET", "s3cr3t-value"}), func(s string) any { return s }),
		rapid.Just[any](true),
		rapid.Just[any](nil),
		rapid.Just[any]([]any{"dev"}),
		rapid.Just[any](map[string]any{"a": int64(1)}),
	)
}

// A plan only reads: whatever the workflow and the inputs, it records no
// run and no version, and its verdict is the start's — ready exactly when
// a start with the same inputs succeeds.
func TestPlanNeverWritesAndAgreesWithStart(t *testing.T) {
	ctx := context.Background()
	svc := planEnv(t, map[string]string{"VAULT_TOKEN": "s3cr3t-from-env", "DEPLOY_REGION": "nbg1", "NOTIFY_URL": "https://x"})
	flows := []string{deployFlow, secretFlow, flowFlow,
		strings.Replace(deployFlow, "enum: [fsn1, nbg1]}", "enum: [fsn1, nbg1], env: DEPLOY_REGION}", 1)}
	names := []string{"region", "replicas", "token", "user", "n", "envs", "mode", "extra"}
	countRuns := func() int {
		runs, _, err := svc.Store.ListRuns(ctx, store.RunFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(runs)
	}
	rapid.Check(t, func(rt *rapid.T) {
		flow := rapid.SampledFrom(flows).Draw(rt, "flow")
		inputs := map[string]any{}
		for _, name := range rapid.SliceOfDistinct(rapid.SampledFrom(names), func(s string) string { return s }).Draw(rt, "names") {
			inputs[name] = inputValue().Draw(rt, name)
		}
		l, err := svc.Parse([]byte(flow))
		if err != nil {
			rt.Fatal(err)
		}
		hasVersion := func() bool { _, err := svc.Store.GetVersion(ctx, l.Version); return err == nil }
		runsBefore, versionBefore := countRuns(), hasVersion()
		p, err := svc.Plan(ctx, PlanRequest{Content: []byte(flow), Inputs: inputs})
		if err != nil {
			rt.Fatal(err)
		}
		if runs := countRuns(); runs != runsBefore || hasVersion() != versionBefore {
			rt.Fatalf("plan wrote: runs %d → %d, version recorded %v → %v", runsBefore, runs, versionBefore, hasVersion())
		}
		if tok, ok := inputs["token"].(string); ok && flow == secretFlow {
			clear := tok
			if tok == "$VAULT_TOKEN" {
				clear = "s3cr3t-from-env"
			}
			if len(clear) >= 3 && strings.Contains(toJSON(p), clear) {
				rt.Fatalf("the plan shows the secret %q: %s", clear, toJSON(p))
			}
		}
		_, err = svc.StartRun(ctx, l, inputs, true)
		if p.Ready != (err == nil) {
			rt.Fatalf("plan ready %v, start error %v (plan violations %+v)", p.Ready, err, p.Violations)
		}
	})
}

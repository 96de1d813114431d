package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// scaleFlow is a workflow of n top-level steps of every kind a plan
// treats apart: actions, skipped steps, switches that jump forward (decided
// by the inputs or at run time) and back (a loop bounded by max_visits),
// steps that may fail the run, foreach loops and parallel groups.
func scaleFlow(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: scale\ninputs:\n  mode: {type: string, default: fast}\nsteps:\n")
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		prev := fmt.Sprintf("s%d", max(i-1, 0))
		switch {
		case i%8 == 2 && i+2 < n:
			fmt.Fprintf(&b, "  - id: %s\n    switch:\n      - {if: '${{ steps.%s.status == \"failed\" }}', goto: s%d}\n", id, prev, i+2)
		case i%8 == 7 && i+1 < n:
			fmt.Fprintf(&b, "  - id: %s\n    switch:\n      - {if: '${{ inputs.mode == \"fast\" }}', goto: s%d}\n", id, i+1)
		case i%64 == 9:
			fmt.Fprintf(&b, "  - id: %s\n    max_visits: 3\n    switch:\n      - {if: '${{ steps.%s.status == \"failed\" }}', goto: s%d}\n", id, prev, i-5)
		case i%8 == 3:
			fmt.Fprintf(&b, "  - id: %s\n    if: ${{ inputs.mode == \"slow\" }}\n    uses: log\n    with: {message: slow}\n", id)
		case i%8 == 4:
			fmt.Fprintf(&b, "  - id: %s\n    foreach: ${{ [1, 2] }}\n    steps:\n      - {id: %s_item, uses: log, with: {message: '${{ item }}'}}\n", id, id)
		case i%8 == 5:
			fmt.Fprintf(&b, "  - id: %s\n    parallel:\n      - {id: %s_a, uses: log, with: {message: a}}\n      - {id: %s_b, uses: transform, with: {value: '${{ inputs.mode }}'}}\n", id, id, id)
		case i%8 == 6:
			fmt.Fprintf(&b, "  - id: %s\n    if: ${{ steps.%s.status == \"failed\" }}\n    fail: step %s failed\n", id, prev, prev)
		default:
			fmt.Fprintf(&b, "  - id: %s\n    uses: log\n    with: {message: '${{ inputs.mode }} %s'}\n", id, id)
		}
	}
	return b.String()
}

// nestedFlow nests depth groups (parallel or foreach), each holding the
// next group and leaves steps with an if of their own.
func nestedFlow(depth, leaves int, kind string) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: nest\ninputs:\n  mode: {type: string, default: fast}\nsteps:\n")
	ind := "  "
	for d := range depth {
		if kind == "foreach" {
			fmt.Fprintf(&b, "%s- id: g%d\n%s  foreach: ${{ [1] }}\n%s  steps:\n", ind, d, ind, ind)
		} else {
			fmt.Fprintf(&b, "%s- id: g%d\n%s  parallel:\n", ind, d, ind)
		}
		for l := range leaves {
			fmt.Fprintf(&b, "%s    - {id: l%d_%d, if: '${{ inputs.mode == \"x\" }}', uses: log, with: {message: hi}}\n", ind, d, l)
		}
		ind += "    "
	}
	fmt.Fprintf(&b, "%s- {id: last, uses: log, with: {message: hi}}\n", ind)
	return b.String()
}

func TestScaleFlowPlans(t *testing.T) {
	svc := planEnv(t, nil)
	p := planOf(t, svc, scaleFlow(200), nil)
	if !p.Valid || !p.Ready {
		t.Fatalf("valid %v ready %v: %v", p.Valid, p.Ready, p.Violations)
	}
}

// go test ./service -run '^$' -bench BenchmarkPlan -benchtime 1x
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{2_500, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			svc, err := Open(context.Background(), Options{Home: b.TempDir(), Durability: "normal"})
			if err != nil {
				b.Fatal(err)
			}
			defer svc.Close(context.Background())
			req := PlanRequest{Content: []byte(scaleFlow(n))}
			b.ReportAllocs()
			for b.Loop() {
				p, err := svc.Plan(context.Background(), req)
				if err != nil || !p.Valid {
					b.Fatal(err, p.Violations)
				}
			}
		})
	}
}

// A plan's work grows with the workflow, not with its square: planning
// four times the steps allocates about four times as much (a plan that
// walked a list once per step of it, or worked out what a group's steps
// do once per group around them, allocated up to sixteen times as much).
func TestPlanGrowsLinearly(t *testing.T) {
	svc := planEnv(t, nil)
	allocs := func(doc string) float64 {
		req := PlanRequest{Content: []byte(doc)}
		return testing.AllocsPerRun(1, func() {
			if p, err := svc.Plan(context.Background(), req); err != nil || !p.Valid {
				t.Fatal(err, p.Violations)
			}
		})
	}
	for name, flow := range map[string]func(n int) string{
		"a list with switches": func(n int) string { return scaleFlow(500 * n) },
		"nested foreach":       func(n int) string { return nestedFlow(10*n, 20, "foreach") },
		"nested parallel":      func(n int) string { return nestedFlow(10*n, 20, "parallel") },
	} {
		small, large := allocs(flow(1)), allocs(flow(4))
		ratio := large / small
		t.Logf("%s: four times the steps allocate %.1f times as much", name, ratio)
		if ratio > 6 {
			t.Errorf("%s: four times the steps allocate %.1f times as much (%.0f, %.0f)", name, ratio, small, large)
		}
	}
}

//go:build linux

package hostile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// cases is the suite: one entry per hostile input, by issue 21's items.
// A new case is one more entry in its item's table (a helper may already
// send and check what it needs).
func cases() []Case {
	return slices.Concat(
		boundCases(),    // items 1, 3, 5, 6: budgets and bounds
		crashCases(),    // item 2: crash_test.go
		protocolCases(), // item 4: protocol_test.go
		resultCases(),   // item 7: results_test.go
		secretCases(),   // item 8: secrets_test.go
		networkCases(),  // item 9: network_test.go
		startupCases(),  // item 10: startup_test.go
	)
}

// boundCases are the inputs that would cost unbounded memory or time but
// for a budget: items 1, 3, 5 and 6.
func boundCases() []Case {
	return []Case{
		// Item 1: expressions that would allocate gigabytes fail on the
		// evaluation's memory budget before they allocate.
		{
			Name: "expr: replace 100k a's by 100k b's (10 GB)", Transport: Stdio, Want: "EXPRESSION_BUDGET",
			Run: runFails(oneStep(`${{ len(replace(repeat("a", 100000), "a", repeat("b", 100000))) }}`)),
		},
		{
			Name: "expr: repeat of a repeat (10 GB)", Transport: Stdio, Want: "EXPRESSION_BUDGET",
			Run: runFails(oneStep(`${{ len(repeat(repeat("x", 100000), 100000)) }}`)),
		},
		{
			// A plan reports what it cannot evaluate as the step's problem.
			Name: "expr: workflow_plan evaluating a 10 GB repeat", Transport: Stdio, Want: "step problem: budget",
			Run: planProblem(oneStep(`${{ len(repeat(repeat("x", 100000), 100000)) }}`), "expression memory budget exceeded"),
		},
		{
			Name: "expr: 10 GB replace over HTTP", Transport: HTTP, Want: "EXPRESSION_BUDGET",
			Run: runFails(oneStep(`${{ len(replace(repeat("a", 100000), "a", repeat("b", 100000))) }}`)),
		},

		// Item 3: YAML aliases are bounded in expanded bytes (16 MiB for a
		// workflow, 64 MiB for a catalog), measured before expanding.
		{
			Name: "yaml: 1 MB scalar aliased 5,000 times, validate", Transport: Stdio, Want: "invalid: syntax",
			Run: refusedByValidate(aliasedWorkflow()),
		},
		{
			Name: "yaml: billion laughs, validate", Transport: Stdio, Want: "invalid: syntax",
			Run: refusedByValidate(laughsWorkflow(9, 10, 3)),
		},
		{
			Name: "yaml: 1 MB scalar aliased 5,000 times, run_start", Transport: Stdio, Want: "WORKFLOW_INVALID",
			Run: toolFails("run_start", map[string]any{"definition": aliasedWorkflow()}),
		},
		{
			Name: "yaml: 1 MB scalar aliased 5,000 times, validate over HTTP", Transport: HTTP, Want: "invalid: syntax",
			Run: refusedByValidate(aliasedWorkflow()),
		},
		{
			Name: "yaml: catalog_validate of an alias bomb", Transport: Stdio, Want: "CATALOG_INVALID",
			Run: catalogRefused("catalog_validate", map[string]any{"source": aliasedCatalog()}),
		},
		{
			Name: "yaml: catalog_preview of an alias bomb", Transport: Stdio, Want: "CATALOG_INVALID",
			Run: catalogRefused("catalog_preview", map[string]any{"source": aliasedCatalog(), "title": "Bomb"}),
		},
		{
			Name: "yaml: catalog_preview of billion laughs (1 KB)", Transport: Stdio, Want: "CATALOG_INVALID",
			Run: catalogRefused("catalog_preview", map[string]any{"source": laughsCatalog(9, 10, 1000), "title": "Laughs"}),
		},

		// Item 5: a plan grows with the workflow, not its square. A plan
		// of 10,000 steps is more than one result holds (item 7): it is
		// read in pages of its steps, each a plan of the whole workflow.
		{
			Name: "plan: 10,000 steps, paged", Transport: Stdio, Want: "ok",
			Deadline: 120 * time.Second, // a plan per page, about 14 pages
			Run:      plannedInPages(scaleFlow(10_000)),
		},

		// Item 6: process-wide caches are bounded (the compiled
		// expressions: the 4,096 used last). 20,000 distinct expressions
		// evaluated by 20 plans of 1,000 steps (each plan's result under
		// 256 KiB).
		{
			Name: "caches: 20,000 distinct expressions (20 plans)", Transport: Stdio, Want: "ok",
			Run: distinctPlans(20, 1_000, 40),
		},
		// The same with a 12 KB literal in each, by 80 plans of 250 steps
		// (3 MB each, under the 4 MiB a message may be): a compiled
		// expression keeps about 2.7 times its literal, so an unbounded
		// cache ends above 600 MB (725 MB measured before the bound), the
		// bounded one near 130 MB.
		{
			Name: "caches: 20,000 distinct 12 KB expressions (80 plans)", Transport: Stdio, Want: "ok", Long: true,
			Deadline: 150 * time.Second, // 240 MB sent in all
			Run:      distinctPlans(80, 250, 12_000),
		},
	}
}

// TestHostile runs every case against its own server and reports, per
// case, the outcome, the wall time and the server's peak RSS.
func TestHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary once per case")
	}
	binary(t) // built before the first case's deadline starts
	var rows []row
	defer func() {
		t.Log("hostile-input report:\n" + report(rows))
		writeReport(t, rows)
	}()
	for _, c := range cases() {
		t.Run(c.Name, func(t *testing.T) {
			if c.Long && !long() {
				t.Skip("a long case: -hostile.long or STEPWISE_HOSTILE_LONG=1 runs it")
			}
			r := row{Case: c.Name, Transport: string(c.Transport), Note: "the server did not start (see the log)"}
			defer func() { rows = append(rows, r) }()
			runCase(t, c, &r)
		})
	}
}

// oneStep is a workflow whose one step renders value.
func oneStep(value string) string {
	return "version: 1\nname: hostile\nsteps:\n  - id: big\n    uses: transform\n    with:\n      value: '" +
		strings.ReplaceAll(value, "'", "''") + "'\n"
}

// runFails starts a run of definition and wants it failed, its error's
// code the outcome.
func runFails(definition string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		r, err := c.Tool(ctx, "run_start", map[string]any{"definition": definition, "wait_seconds": 25})
		if err != nil {
			return "", err
		}
		if r.IsError {
			return r.ErrorCode(), nil
		}
		if r.Structured["status"] != "failed" {
			return "", fmt.Errorf("run status %v, want failed: %v", r.Structured["status"], r.Structured)
		}
		runErr, _ := r.Structured["error"].(map[string]any)
		code, _ := runErr["code"].(string)
		if code == "" {
			return "", fmt.Errorf("run error without a code: %v", r.Structured["error"])
		}
		return code, nil
	}
}

// toolFails calls name with args and wants a structured tool error, its
// code the outcome.
func toolFails(name string, args map[string]any) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		r, err := c.Tool(ctx, name, args)
		if err != nil {
			return "", err
		}
		if !r.IsError {
			return "", fmt.Errorf("%s answered without an error: %.300v", name, r.Structured)
		}
		return r.ErrorCode(), nil
	}
}

// refusedByValidate validates content and wants it invalid: the outcome
// is "invalid: " and the rule of its one violation, which must say that
// the aliases expand too far.
func refusedByValidate(content string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		r, err := c.Tool(ctx, "workflow_validate", map[string]any{"content": content})
		if err != nil {
			return "", err
		}
		if r.IsError {
			return r.ErrorCode(), nil
		}
		vs, _ := r.Structured["violations"].([]any)
		if r.Structured["valid"] != false || len(vs) != 1 {
			return "", fmt.Errorf("want one violation, got valid %v, %.300v", r.Structured["valid"], vs)
		}
		v, _ := vs[0].(map[string]any)
		if msg, _ := v["message"].(string); !strings.Contains(msg, "expands to more than") {
			return "", fmt.Errorf("violation %v does not say the aliases expand too far", v)
		}
		return fmt.Sprintf("invalid: %v", v["rule"]), nil
	}
}

// catalogRefused calls a catalog tool with an alias bomb and wants
// CATALOG_INVALID naming the expansion: a tool error, or (catalog_validate)
// a report that is not valid, whose problem says so.
func catalogRefused(name string, args map[string]any) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		r, err := c.Tool(ctx, name, args)
		if err != nil {
			return "", err
		}
		text := fmt.Sprint(r.Structured)
		if !strings.Contains(text, "expands to more than") {
			return "", fmt.Errorf("%s: %.300s does not say the aliases expand too far", name, text)
		}
		if r.IsError {
			return r.ErrorCode(), nil
		}
		if r.Structured["valid"] == false {
			return "CATALOG_INVALID", nil
		}
		return "", fmt.Errorf("%s: neither an error nor invalid: %.300s", name, text)
	}
}

// plans plans content and wants a valid, ready plan.
func plans(content string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		r, err := c.Tool(ctx, "workflow_plan", map[string]any{"content": content})
		if err != nil {
			return "", err
		}
		if r.IsError {
			return r.ErrorCode(), fmt.Errorf("workflow_plan: %.300v", r.Structured)
		}
		if r.Structured["valid"] != true || r.Structured["ready"] != true {
			return "", fmt.Errorf("plan valid %v ready %v: %.300v", r.Structured["valid"], r.Structured["ready"], r.Structured["violations"])
		}
		return "ok", nil
	}
}

// plannedInPages plans content page by page (steps_cursor) and wants a
// valid, ready plan whose pages hold every step once.
func plannedInPages(content string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		read, total, cursor := 0, -1, ""
		for pages := 0; ; pages++ {
			args := map[string]any{"content": content}
			if cursor != "" {
				args["steps_cursor"] = cursor
			}
			r, err := c.Tool(ctx, "workflow_plan", args)
			if err != nil {
				return "", err
			}
			if r.IsError {
				return r.ErrorCode(), fmt.Errorf("workflow_plan page %d: %.300v", pages, r.Structured)
			}
			if r.Structured["valid"] != true || r.Structured["ready"] != true {
				return "", fmt.Errorf("plan valid %v ready %v", r.Structured["valid"], r.Structured["ready"])
			}
			steps, _ := r.Structured["steps"].([]any)
			n, _ := r.Structured["steps_total"].(float64)
			if total = int(n); len(steps) == 0 {
				return "", fmt.Errorf("page %d holds no steps", pages)
			}
			read += len(steps)
			if cursor, _ = r.Structured["steps_next_cursor"].(string); cursor == "" {
				break
			}
		}
		if read != total {
			return "", fmt.Errorf("the pages held %d steps of %d", read, total)
		}
		return "ok", nil
	}
}

// planProblem plans content and wants its first step's problem to say
// want.
func planProblem(content, want string) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, _ *testing.T, c *Conn) (string, error) {
		r, err := c.Tool(ctx, "workflow_plan", map[string]any{"content": content})
		if err != nil {
			return "", err
		}
		if r.IsError {
			return r.ErrorCode(), nil
		}
		steps, _ := r.Structured["steps"].([]any)
		if len(steps) == 0 {
			return "", fmt.Errorf("plan without steps: %.300v", r.Structured)
		}
		step, _ := steps[0].(map[string]any)
		if !strings.Contains(fmt.Sprint(step["problems"]), want) {
			return "", fmt.Errorf("step problems %v, want %q", step["problems"], want)
		}
		return "step problem: budget", nil
	}
}

// distinctPlans plans calls workflows of steps distinct expressions each
// (none shared between them), with literals of size bytes.
func distinctPlans(calls, steps, size int) func(context.Context, *testing.T, *Conn) (string, error) {
	return func(ctx context.Context, t *testing.T, c *Conn) (string, error) {
		for i := range calls {
			if out, err := plans(distinctExpressions(i*steps, steps, size))(ctx, t, c); err != nil {
				return out, fmt.Errorf("plan %d of %d: %w", i+1, calls, err)
			}
		}
		return "ok", nil
	}
}

// aliasedWorkflow is a workflow of about a megabyte whose one-megabyte
// description is aliased 5,000 times in its tags: five gigabytes once the
// aliases are expanded.
func aliasedWorkflow() string {
	return "version: 1\nname: bomb\ndescription: &d '" + strings.Repeat("x", 1_000_000) +
		"'\ntags: [" + strings.Repeat("*d, ", 4999) + "*d]\nsteps:\n  - {id: a, uses: noop}\n"
}

// laughsWorkflow nests aliases of aliases in a step's with: every level
// lists the one before it fanout times, the first a scalar of size bytes.
func laughsWorkflow(levels, fanout, size int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: laughs\nsteps:\n  - id: a\n    uses: noop\n    with:\n")
	fmt.Fprintf(&b, "      l0: &l0 '%s'\n", strings.Repeat("x", size))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "      l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), fanout-1), i-1)
	}
	return b.String()
}

// aliasedCatalog is an OpenAPI document of about a megabyte whose
// operation's one-megabyte description is aliased 5,000 times in its tags.
func aliasedCatalog() string {
	return "openapi: 3.0.3\ninfo: {title: Bomb, version: '1'}\nservers: [{url: 'https://example.com'}]\npaths:\n  /a:\n    get:\n" +
		"      description: &d '" + strings.Repeat("x", 1_000_000) + "'\n" +
		"      tags: [" + strings.Repeat("*d, ", 4999) + "*d]\n" +
		"      responses: {'200': {description: ok}}\n"
}

// laughsCatalog nests aliases of aliases in an OpenAPI document and uses
// the last level as an operation's tags.
func laughsCatalog(levels, fanout, size int) string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: Laughs, version: '1'}\nservers: [{url: 'https://example.com'}]\nx-laughs:\n")
	fmt.Fprintf(&b, "  l0: &l0 '%s'\n", strings.Repeat("x", size))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), fanout-1), i-1)
	}
	fmt.Fprintf(&b, "paths:\n  /a:\n    get:\n      tags: *l%d\n      responses: {'200': {description: ok}}\n", levels)
	return b.String()
}

// scaleFlow is a workflow of n top-level steps of every kind a plan treats
// apart: actions, skipped steps, switches that jump forward and back, steps
// that may fail the run, foreach loops and parallel groups (the workflow
// of service's plan benchmark).
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

// distinctExpressions is a workflow of n steps, each rendering an
// expression of its own (numbered from first) holding a string literal of
// size bytes, over a known input, so that a plan evaluates every one.
func distinctExpressions(first, n, size int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: exprs\ninputs:\n  n: {type: integer, default: 3}\nsteps:\n")
	for i := first; i < first+n; i++ {
		lit := fmt.Sprint(i)
		lit += strings.Repeat("e", max(size-len(lit), 0))
		fmt.Fprintf(&b, "  - {id: s%d, uses: transform, with: {value: '${{ inputs.n + len(\"%s\") }}'}}\n", i, lit)
	}
	return b.String()
}

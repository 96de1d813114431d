package expr_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"stepwise.dev/stepwise/internal/expr"
)

var templateSeeds = []string{
	"plain text",
	"${{ inputs.region }}",
	"web-${{ inputs.region }}-${{ inputs.replicas }}",
	"Bearer ${{ inputs.api_token }}",
	"https://api.example.com/v1/servers/${{ steps.create.output.body.id }}",
	`${{ env.CLOUD_API_URL ?? "https://api.cloud.example.com" }}`,
	`${{ hasPrefix(item, "windows") ? ".exe" : "" }}`,
	"${{ index + 1 }}",
	`${{ "}}" }}`,
	`${{ {"a": {"b": 1}}.a }}`,
	"${{ map(list, {{name: .name}}) }}",
	"echo $${{ not evaluated }} ${{ 'x' }}",
	"$$${{ a }}",
	"a$${{b}}${{c}}",
	"${{ `raw }} string` }}",
	`${{ "esc\"aped }}" + 'sin\'gle' }}`,
	"${{ a",
	"x ${{ }}",
	"${{ a } b",
	"é ${{ steps.日本.output }} 😀",
	"${{ let x = inputs.n; x * 2 }}",
	"${{ filter(steps.fetch.output.items, .price < 10 && # != nil) }}",
	"${{ reduce(1..5, #acc + #index, 0) }}",
	"${{ steps.car.output?.body?.price ?? 0 }}",
	`${{ steps.fetch.output.headers["Content-Type"] | lower() }}`,
	"${{ if inputs.x { 1 } else { 2 } }}",
	"${{ $env.x }} ${{ inputs[name] }}",
}

func FuzzScan(f *testing.F) {
	for _, s := range templateSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := expr.Scan(s)
		if err != nil {
			se, ok := err.(*expr.ScanError)
			if !ok {
				t.Fatalf("Scan(%q) error %T, want *ScanError", s, err)
			}
			if se.Offset < 0 || se.Offset > len(s) {
				t.Fatalf("Scan(%q) error offset %d out of range", s, se.Offset)
			}
			return
		}
		escaped := strings.Contains(s, "$${{")
		var rebuilt strings.Builder
		end := 0 // where the previous segment ends in s
		hasExpr := false
		for i, sg := range segs {
			if sg.Offset < end || sg.Offset > len(s) {
				t.Fatalf("Scan(%q): segment %d offset %d, previous segment ends at %d", s, i, sg.Offset, end)
			}
			if sg.Expr {
				hasExpr = true
				if sg.Offset+len(sg.Text) > len(s) || s[sg.Offset:sg.Offset+len(sg.Text)] != sg.Text {
					t.Fatalf("Scan(%q): expression %q is not at offset %d", s, sg.Text, sg.Offset)
				}
				if sg.Offset < 3 || s[sg.Offset-3:sg.Offset] != "${{" || !strings.HasPrefix(s[sg.Offset+len(sg.Text):], "}}") {
					t.Fatalf("Scan(%q): expression %q at %d is not between ${{ and }}", s, sg.Text, sg.Offset)
				}
				if strings.TrimSpace(sg.Text) == "" {
					t.Fatalf("Scan(%q): empty expression", s)
				}
				end = sg.Offset + len(sg.Text) + 2
				rebuilt.WriteString("${{" + sg.Text + "}}")
				continue
			}
			if sg.Text == "" {
				t.Fatalf("Scan(%q): empty literal segment", s)
			}
			if i > 0 && !segs[i-1].Expr {
				t.Fatalf("Scan(%q): adjacent literal segments", s)
			}
			if !escaped {
				if sg.Offset+len(sg.Text) > len(s) || s[sg.Offset:sg.Offset+len(sg.Text)] != sg.Text {
					t.Fatalf("Scan(%q): literal %q is not at offset %d", s, sg.Text, sg.Offset)
				}
				end = sg.Offset + len(sg.Text)
			} else {
				end = sg.Offset + 1
			}
			rebuilt.WriteString(sg.Text)
		}
		if !escaped && rebuilt.String() != s {
			t.Fatalf("Scan(%q) does not round-trip: %q", s, rebuilt.String())
		}
		if got := expr.HasExpr(s); got != hasExpr {
			t.Fatalf("HasExpr(%q) = %v, but Scan found expressions: %v", s, got, hasExpr)
		}
	})
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range templateSeeds {
		if segs, err := expr.Scan(s); err == nil {
			for _, sg := range segs {
				if sg.Expr {
					f.Add(sg.Text)
				}
			}
		}
	}
	for _, s := range []string{
		"inputs.n > 1", "!steps.confirm.answer", "steps.x.output.body.items[0].name", `steps.x["y"].z`,
		"steps[name].output", "1 == true", "len(1)", "let len = 1; len", "foo(1)", "inputs?.a?.b", "now().Format('2006')",
		"{a: 1}", "[1, 2][1:]", "#", ".a", "1..3 | map(# * 2)", "nil ?? inputs.z", `"a" matches inputs.re`,
		// Expressions that would allocate gigabytes (issue 21).
		`len(replace(repeat("a",100000),"a",repeat("b",100000)))`, `len(repeat(repeat("x",100000),100000))`,
		`len(1..1000000000)`, `let a = [repeat("x", 1000)]; let b = [a,a,a,a]; toJSON([b,b,b,b])`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		done := make(chan struct{})
		var a *expr.Analysis
		var err error
		go func() {
			defer close(done)
			a, err = expr.Analyze(src)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Analyze(%q) did not return within 10s", src)
		}
		if err != nil {
			se, ok := err.(*expr.SyntaxError)
			if !ok {
				t.Fatalf("Analyze(%q) error %T, want *SyntaxError", src, err)
			}
			if se.Offset < 0 || se.Offset > len(src) {
				t.Fatalf("Analyze(%q): error offset %d out of range", src, se.Offset)
			}
			return
		}
		for _, r := range a.Refs {
			if r.Offset < 0 || r.Offset > len(src) {
				t.Fatalf("Analyze(%q): reference %+v offset out of range", src, r)
			}
			if r.Root == "" {
				t.Fatalf("Analyze(%q): reference without a root: %+v", src, r)
			}
			if !strings.HasPrefix(r.Root, "<") && !strings.HasPrefix(src[r.Offset:], r.Root) {
				t.Fatalf("Analyze(%q): reference %q is not at offset %d", src, r.Root, r.Offset)
			}
		}
		for _, c := range a.Calls {
			if c.Offset < 0 || c.Offset > len(src) {
				t.Fatalf("Analyze(%q): call %+v offset out of range", src, c)
			}
			if !strings.HasPrefix(src[c.Offset:], c.Name) {
				t.Fatalf("Analyze(%q): call %q is not at offset %d", src, c.Name, c.Offset)
			}
		}
	})
}

// evalSeeds are expressions for FuzzEval: ordinary ones, and ones that
// would allocate gigabytes without the evaluation budget.
var evalSeeds = []string{
	"inputs.count * 2", `inputs.region + "-" + string(inputs.count)`, "map(inputs.tags, upper(#))",
	`len(replace(repeat("a",100000),"a",repeat("b",100000)))`,
	`len(repeat(repeat("x",100000),100000))`,
	`reduce(1..100000, #acc + "xxxxxxxxxx", "")`,
	`let s = repeat("x", 100000); join([s, s, s, s, s, s, s, s, s, s, s, s])`,
	`split(repeat(",", 1000000), ",")`, `fromJSON("[" + repeat("[],", 100000) + "[]]")`,
	`let a = [repeat("x", 1000)]; let b = [a,a,a,a,a,a,a,a]; let c = [b,b,b,b,b,b,b,b]; [c,c,c,c,c,c,c,c]`,
	`let a = 1..100; let b = [a,a,a,a,a,a,a,a,a,a]; flatten([b,b,b,b,b,b,b,b,b,b])`,
	"map(1..1000000, #)", "groupBy(1..100000, #)", "sortBy(1..100000, -#)", `string(1..1000000)`,
	`toBase64(repeat("x", 1000000))`, `upper(repeat("ß", 1000000))`, `concat(1..100000, 1..100000)`,
	`map(1..10000, [#, #, #, #, #, #, #, #])`, `filter(1..100, "a" matches repeat("a", 10000))`,
}

// FuzzEval evaluates any expression under a 1 MiB ceiling: it returns
// (no panic), within the fuzzing deadline, and an evaluation that fails on
// its budget says so with a *BudgetError of that limit.
func FuzzEval(f *testing.F) {
	for _, s := range evalSeeds {
		f.Add(s)
	}
	env := map[string]any{"inputs": map[string]any{"region": "fsn1", "count": 3, "tags": []any{"a", "b"}}}
	f.Fuzz(func(t *testing.T, src string) {
		const limit = 1 << 20
		defer expr.SetMemoryLimit(expr.SetMemoryLimit(limit))
		_, err := expr.Eval(src, env)
		var be *expr.BudgetError
		if errors.As(err, &be) && be.Limit != limit {
			t.Fatalf("Eval(%q): budget error with limit %d, want %d", src, be.Limit, limit)
		}
		if err != nil {
			var ee *expr.EvalError
			if !errors.As(err, &ee) {
				t.Fatalf("Eval(%q) error %T, want *EvalError", src, err)
			}
		}
	})
}

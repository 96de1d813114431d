package workflow

import (
	"fmt"
	"strings"
	"testing"
)

// bigWorkflow generates a valid workflow of n steps that exercises
// templates, references, questions and nested groups, for benchmarks.
func bigWorkflow(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: big\ninputs:\n  region: {type: string, enum: [a, b], default: a}\n  count: {type: integer, minimum: 1, default: 3}\nsteps:\n")
	for i := 0; i < n; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "  - id: s%d\n    uses: log\n    with: {message: \"step %d in ${{ inputs.region }}\"}\n    retry: {attempts: 3, backoff: 1s, max_backoff: 10s}\n", i, i)
		case 1:
			fmt.Fprintf(&b, "  - id: s%d\n    ask: {prompt: \"Value for ${{ steps.s%d.output.message }}?\", type: string, pattern: '^[a-z]+$', default: abc}\n", i, i-1)
		case 2:
			fmt.Fprintf(&b, "  - id: s%d\n    if: ${{ steps.s%d.answer != '' && inputs.count > 1 }}\n    uses: transform\n    with: {value: {a: \"${{ steps.s%d.answer }}\", n: \"${{ inputs.count * 2 }}\"}}\n    timeout: 30s\n", i, i-1, i-1)
		case 3:
			fmt.Fprintf(&b, "  - id: s%d\n    parallel:\n      - id: s%d_a\n        uses: log\n        with: {message: \"${{ steps.s%d.output.a }}\"}\n      - id: s%d_b\n        uses: log\n        with: {message: b}\n", i, i, i-1, i)
		case 4:
			fmt.Fprintf(&b, "  - id: s%d\n    foreach: ${{ [1, 2, 3] }}\n    concurrency: 2\n    steps:\n      - id: s%d_body\n        uses: log\n        with: {message: \"${{ item }} ${{ index }} ${{ steps.s%d_a.output }}\"}\n", i, i, i-1)
		}
	}
	b.WriteString("outputs:\n  last: ${{ steps.s0.output }}\n")
	return []byte(b.String())
}

func TestBigWorkflowIsValid(t *testing.T) {
	t.Parallel()
	res := Check(bigWorkflow(500), Options{})
	for _, v := range res.Violations {
		t.Errorf("%s", v)
	}
}

// BenchmarkCheck500 measures parse + validate of a 500-step workflow.
func BenchmarkCheck500(b *testing.B) {
	data := bigWorkflow(500)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if res := Check(data, Options{}); !res.Valid() {
			b.Fatal(res.Violations[0])
		}
	}
}

// BenchmarkCheck500JSON is BenchmarkCheck500 with the same workflow spelled
// as JSON (read by the JSON reader rather than the YAML parser).
func BenchmarkCheck500JSON(b *testing.B) {
	src, vs := Parse(bigWorkflow(500))
	if src == nil {
		b.Fatal(vs)
	}
	data, err := Canonical(src.Value)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if res := Check(data, Options{}); !res.Valid() {
			b.Fatal(res.Violations[0])
		}
	}
}

// BenchmarkParseYAML500 isolates the YAML parser's share of Check.
func BenchmarkParseYAML500(b *testing.B) {
	data := bigWorkflow(500)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if src, vs := Parse(data); src == nil {
			b.Fatal(vs)
		}
	}
}

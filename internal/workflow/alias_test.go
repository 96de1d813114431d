package workflow_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/workflow"
)

// aliasedScalar is a workflow of about a megabyte whose one-megabyte
// description is aliased 5,000 times in its tags: five gigabytes once the
// aliases are expanded, in 5,000 nodes.
func aliasedScalar() []byte {
	return []byte("version: 1\nname: bomb\ndescription: &d '" + strings.Repeat("x", 1_000_000) +
		"'\ntags: [" + strings.Repeat("*d, ", 4999) + "*d]\nsteps:\n  - {id: a, uses: noop}\n")
}

// laughs nests aliases of aliases: every level lists the one before it
// fanout times, the first holding a scalar of size bytes.
func laughs(levels, fanout, size int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: laughs\nsteps:\n  - id: a\n    uses: noop\n    with:\n")
	fmt.Fprintf(&b, "      l0: &l0 '%s'\n", strings.Repeat("x", size))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "      l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), fanout-1), i-1)
	}
	return []byte(b.String())
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A document whose aliases expand beyond the bound is refused as it is
// parsed, before anything is built from it: one syntax violation, and
// memory of the order of the document, not of its expansion.
func TestAliasExpansionBounded(t *testing.T) {
	// Not parallel: it measures the process's allocations.
	for name, doc := range map[string][]byte{
		"megabyte scalar aliased 5,000 times":  aliasedScalar(),
		"100 KB scalar, aliases of aliases":    laughs(6, 4, 100_000), // 4,096 copies: 400 MB in 5,000 nodes
		"billion laughs":                       laughs(9, 10, 3),      // 10^9 copies
		"billion laughs of a kilobyte, 3 wide": laughs(12, 3, 1000),   // 531,441 copies: 531 MB
	} {
		t.Run(name, func(t *testing.T) {
			var res *workflow.Result
			alloc := allocated(func() { res = workflow.Check(doc, workflow.Options{}) })
			if len(res.Violations) != 1 || res.Violations[0].Rule != workflow.RuleSyntax || !strings.Contains(res.Violations[0].Message, "expands to more than 16 MiB") {
				t.Fatalf("want one syntax violation about the expansion, got %v", res.Violations)
			}
			if res.Source != nil {
				t.Errorf("a refused document has a source")
			}
			if limit := uint64(32*len(doc)) + 16<<20; alloc > limit {
				t.Errorf("refusing a %d-byte document allocated %d bytes, want at most %d", len(doc), alloc, limit)
			}
		})
	}
}

// Ordinary aliases still expand: a template and a mapping reused, and a
// document whose expansion is just under the bound.
func TestAliasesWithinBound(t *testing.T) {
	t.Parallel()
	doc := "version: 1\nname: reuse\ndescription: &d Reuses its parts.\ntags: [*d]\nsteps:\n" +
		"  - id: a\n    uses: noop\n    with: &w {greeting: hello, n: 2}\n" +
		"  - id: b\n    uses: noop\n    with: *w\n"
	res := workflow.Check([]byte(doc), workflow.Options{})
	if !res.Valid() {
		t.Fatalf("a document with ordinary aliases is invalid: %v", res.Violations)
	}
	with := res.Source.Value.(map[string]any)["steps"].([]any)[1].(map[string]any)["with"].(map[string]any)
	if with["greeting"] != "hello" || res.Source.Value.(map[string]any)["tags"].([]any)[0] != "Reuses its parts." {
		t.Errorf("aliases not expanded: %v", res.Source.Value)
	}
	// 15 copies of a megabyte: 15 MB, within 16 MiB.
	big := []byte("version: 1\nname: big\ndescription: &d '" + strings.Repeat("x", 1_000_000) +
		"'\ntags: [" + strings.Repeat("*d, ", 13) + "*d]\nsteps:\n  - {id: a, uses: noop}\n")
	if res := workflow.Check(big, workflow.Options{}); !res.Valid() {
		t.Fatalf("15 MB of expansion refused: %v", res.Violations)
	}
}

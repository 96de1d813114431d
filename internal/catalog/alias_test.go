package catalog

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// aliasedScalar is an OpenAPI document of about a megabyte whose operation
// has a one-megabyte description aliased 5,000 times in its tags: five
// gigabytes once the aliases are expanded, in 5,000 nodes.
func aliasedScalar() []byte {
	return []byte("openapi: 3.0.3\ninfo: {title: Bomb, version: '1'}\nservers: [{url: 'https://example.com'}]\npaths:\n  /a:\n    get:\n" +
		"      description: &d '" + strings.Repeat("x", 1_000_000) + "'\n" +
		"      tags: [" + strings.Repeat("*d, ", 4999) + "*d]\n" +
		"      responses: {'200': {description: ok}}\n")
}

// laughs nests aliases of aliases in an operation's tags: every level lists
// the one before it fanout times, the first holding a scalar of size bytes.
func laughs(levels, fanout, size int) []byte {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: Laughs, version: '1'}\nservers: [{url: 'https://example.com'}]\nx-laughs:\n")
	fmt.Fprintf(&b, "  l0: &l0 '%s'\n", strings.Repeat("x", size))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), fanout-1), i-1)
	}
	fmt.Fprintf(&b, "paths:\n  /a:\n    get:\n      tags: *l%d\n      responses: {'200': {description: ok}}\n", levels)
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
// read, before anything is built from it, by validate (catalog_validate)
// and build (catalog_import and its preview) alike: an invalid catalog,
// and memory of the order of the document, not of its expansion.
func TestAliasExpansionBounded(t *testing.T) {
	ctx := context.Background()
	for name, doc := range map[string][]byte{
		"megabyte scalar aliased 5,000 times": aliasedScalar(),
		"1 MB scalar, aliases of aliases":     laughs(5, 4, 1_000_000), // 1,024 copies: a gigabyte in 1,400 nodes
		"billion laughs of a kilobyte":        laughs(9, 10, 1000),     // 10^9 copies: a terabyte
	} {
		t.Run(name, func(t *testing.T) {
			limit := uint64(32*len(doc)) + 16<<20
			var r *Report
			if alloc := allocated(func() { r = Validate(ctx, doc, "") }); alloc > limit {
				t.Errorf("validating a %d-byte document allocated %d bytes, want at most %d", len(doc), alloc, limit)
			}
			if r.Valid || len(r.Problems) != 1 || !strings.Contains(r.Problems[0], "expands to more than 64 MiB") {
				t.Errorf("want one problem about the expansion, got %v", r.Problems)
			}
			for _, dry := range []bool{true, false} {
				var err error
				if alloc := allocated(func() { _, _, err = Build(ctx, doc, Options{Title: "Bomb", DryRun: dry}) }); alloc > limit {
					t.Errorf("building (dry run %v) allocated %d bytes, want at most %d", dry, alloc, limit)
				}
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "expands to more than 64 MiB") {
					t.Errorf("build (dry run %v): %v, want an invalid catalog", dry, err)
				}
			}
		})
	}
}

// Ordinary aliases still expand, up to the bound: an operation's parameter
// reused, and a document whose expansion is just under it.
func TestAliasesWithinBound(t *testing.T) {
	doc := "openapi: 3.0.3\ninfo: {title: Reuse, version: '1'}\nservers: [{url: 'https://example.com'}]\npaths:\n" +
		"  /a: {get: {operationId: a, parameters: [&p {name: q, in: query, schema: {type: string}}], responses: {'200': {description: ok}}}}\n" +
		"  /b: {get: {operationId: b, parameters: [*p], responses: {'200': {description: ok}}}}\n"
	c, _, err := Build(context.Background(), []byte(doc), Options{Title: "Reuse"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Operations) != 2 || !strings.Contains(jsonOf(c.Operations[1].InputSchema), `"q"`) {
		t.Errorf("aliases not expanded: %s", jsonOf(c.Operations))
	}
	// 60 copies of a megabyte: 60 MB, within 64 MiB.
	big := []byte(strings.Replace(string(aliasedScalar()), "tags: ["+strings.Repeat("*d, ", 4999), "tags: ["+strings.Repeat("*d, ", 59), 1))
	if r := Validate(context.Background(), big, ""); !r.Valid {
		t.Fatalf("60 MB of expansion refused: %v", r.Problems)
	}
}

package yamlsize

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"
)

func parse(t *testing.T, doc string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

func TestExpanded(t *testing.T) {
	t.Parallel()
	const big = 1 << 62
	for doc, want := range map[string]int64{
		// document 1 + mapping 1 + key "a" 2 + value "bc" 3
		"a: bc\n": 7,
		// the alias stands for its anchor's text: "xyz" twice
		"a: &x xyz\nb: *x\n": 1 + 1 + 2 + 4 + 2 + 4,
		// an aliased list: [1, 2] = 1 + 2 + 2, twice
		"a: &l [1, 2]\nb: *l\n": 1 + 1 + 2 + 5 + 2 + 5,
		// a cycle counts the alias as one node
		"a: &a [*a]\n": 1 + 1 + 2 + 1 + 1,
	} {
		if got := Expanded(parse(t, doc), big); got != want {
			t.Errorf("%q: %d, want %d", doc, got, want)
		}
	}
}

// A megabyte scalar aliased 5,000 times stands for 5 GB; the measure says
// so without building it and stops at the limit.
func TestExpandedLargeScalarAliases(t *testing.T) {
	t.Parallel()
	doc := "description: &d '" + strings.Repeat("x", 1_000_000) + "'\ntags: [" + strings.TrimSuffix(strings.Repeat("*d, ", 5000), ", ") + "]\n"
	root := parse(t, doc)
	if got := Expanded(root, 1<<62); got < 5000*1_000_000 {
		t.Errorf("expanded size %d, want at least 5e9", got)
	}
	const limit = 16 << 20
	if got := Expanded(root, limit); got <= limit {
		t.Errorf("expanded size %d within the limit %d", got, limit)
	}
}

// Aliases of aliases double (here: multiply by ten) at every level; the
// measure remembers every anchor's size, so it visits each node once, and
// saturates instead of overflowing.
func TestExpandedBillionLaughs(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 30; i++ {
		b.WriteString("l" + itoa(i) + ": &l" + itoa(i) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*l" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	root := parse(t, b.String())
	const max = int64(^uint64(0) >> 1)
	if got := Expanded(root, max-1); got != max {
		t.Errorf("expanded size %d, want saturated at %d", got, max)
	}
	if got := Expanded(root, 1<<20); got <= 1<<20 {
		t.Errorf("expanded size %d within the limit", got)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

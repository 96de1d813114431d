package workflow

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/invalid")

// TestInvalidGolden checks every file in testdata/invalid against the
// violations recorded beside it (NAME.golden): one line per violation,
// LINE:COL: RULE: MESSAGE (hint: …) @PATH.
func TestInvalidGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../testdata/invalid/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res := Check(data, Options{})
			if res.Valid() {
				t.Fatal("an invalid example validated")
			}
			var b strings.Builder
			for _, v := range res.Violations {
				b.WriteString(v.String())
				b.WriteString(" @")
				b.WriteString(v.Path)
				b.WriteByte('\n')
			}
			golden := strings.TrimSuffix(f, filepath.Ext(f)) + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./workflow -run InvalidGolden -update)", err)
			}
			if got := b.String(); got != string(want) {
				t.Errorf("violations differ from %s\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
	if n < 10 {
		t.Fatalf("expected at least 10 invalid examples, found %d", n)
	}
}

// TestFiveMistakes is the acceptance case: five different mistakes in one
// file are all reported in one run, each at its own line and column.
func TestFiveMistakes(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../testdata/invalid/five-mistakes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res := Check(data, Options{})
	want := []struct {
		rule      string
		line, col int
		path      string
	}{
		{RuleRegex, 6, 37, "/inputs/hostname/pattern"},
		{RuleReference, 11, 42, "/steps/0/with/message"},
		{RuleUnknownField, 12, 5, "/steps/0/timout"},
		{RuleDuplicateID, 13, 9, "/steps/1/id"},
		{RuleGotoTarget, 19, 15, "/steps/2/switch/0/goto"},
	}
	if len(res.Violations) != len(want) {
		t.Fatalf("got %d violations, want %d: %v", len(res.Violations), len(want), res.Violations)
	}
	for i, w := range want {
		v := res.Violations[i]
		if v.Rule != w.rule || v.Line != w.line || v.Column != w.col || v.Path != w.path {
			t.Errorf("violation %d = %s @%s, want %s at %d:%d @%s", i, v, v.Path, w.rule, w.line, w.col, w.path)
		}
		if v.Message == "" {
			t.Errorf("violation %d has no message", i)
		}
	}
}

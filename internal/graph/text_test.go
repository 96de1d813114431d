package graph

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"
)

func TestText(t *testing.T) {
	cases := []struct{ in, want string }{
		{`say "hi"`, "say #quot;hi#quot;"},
		{"a<b>&c", "a#lt;b#gt;#amp;c"},
		{"C# is #1;", "C#35; is #35;1;"},
		{"`md`", "#96;md#96;"},
		{"[x] {y} (z) | ; %%", "[x] {y} (z) | ; %%"},
		{"line\nbreak\r\n\ttab  spaces", "line break tab spaces"},
		{"  trimmed  ", "trimmed"},
		{"para\u2028sep\u200bzero-width", "para sep zero-width"},
		{"ünï 🙂 “q”", "ünï 🙂 “q”"},
		{"ﬂ°°60¶ß", "#64258;°°60#182;ß"},
		{"bad \xff byte", "bad \uFFFD byte"},
	}
	for _, c := range cases {
		if got := text(c.in, 0); got != c.want {
			t.Errorf("text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTextTruncates(t *testing.T) {
	long := strings.Repeat("é", 100)
	got := text(long, 10)
	if utf8.RuneCountInString(got) != 10 || !strings.HasSuffix(got, "…") {
		t.Errorf("text(100 runes, 10) = %q", got)
	}
	if got := text("short", 10); got != "short" {
		t.Errorf("a short text changed: %q", got)
	}
	// Escaping comes after cutting: an entity is never cut in half.
	if got := text(strings.Repeat(`"`, 20), 5); got != strings.Repeat("#quot;", 4)+"…" {
		t.Errorf("cut entities: %q", got)
	}
}

// TestTextProperty: whatever the input, the result is one line a quoted
// Mermaid string can hold, with every # opening an entity code.
func TestTextProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := rapid.String().Draw(t, "in")
		got := text(in, 20)
		if err := checkLabel(got); err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 %q", got)
		}
		if strings.ContainsAny(got, "ﬂ¶") {
			t.Fatalf("Mermaid's entity markers left raw in %q", got)
		}
	})
}

var nodeIDRE = regexp.MustCompile(`^[a-z][A-Za-z0-9_]*$`)

// TestNodeIDProperty: node ids are Mermaid identifiers, and distinct step
// ids (any bytes at all) never share one.
func TestNodeIDProperty(t *testing.T) {
	ids := rapid.OneOf(rapid.String(), rapid.StringMatching(`[A-Za-z0-9_-]{0,6}`), rapid.StringMatching(`[a-z]x?_[0-9a-f]{2}_`))
	rapid.Check(t, func(t *rapid.T) {
		a, b := ids.Draw(t, "a"), ids.Draw(t, "b")
		na, nb := nodeID('s', a), nodeID('s', b)
		if !nodeIDRE.MatchString(na) {
			t.Fatalf("nodeID(%q) = %q is not an identifier", a, na)
		}
		if a != b && na == nb {
			t.Fatalf("%q and %q share the node id %q", a, b, na)
		}
		if nodeID('i', a) == na {
			t.Fatal("roles share ids")
		}
	})
}

func TestNodeIDReadable(t *testing.T) {
	for in, want := range map[string]string{
		"fetch":       "s_fetch",
		"after_page":  "s_after_page",
		"end":         "s_end",
		"9lives":      "s_9lives",
		"deploy-prod": "sx_deploy_2d_prod",
		"":            "sx_",
		"a_b-c":       "sx_a_5f_b_2d_c",
	} {
		if got := nodeID('s', in); got != want {
			t.Errorf("nodeID(%q) = %q, want %q", in, got, want)
		}
	}
}

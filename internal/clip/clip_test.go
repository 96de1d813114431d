package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer text", 10, "a longe…"},
		{"ééééé", 6, "é…"},
	} {
		if got := Text(c.in, c.max); got != c.want || len(got) > c.max {
			t.Errorf("Text(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("r", 3<<20)
	got := Words(`no run "`+huge+`" here; and no run `+huge, 2048)
	if len(got) > 2048 || !strings.HasPrefix(got, `no run "rrr`) || !strings.Contains(got, `…" here; and no run rrr`) || !strings.HasSuffix(got, "…") {
		t.Errorf("Words: %d bytes: %.300q", len(got), got)
	}
	if !utf8.ValidString(Words(strings.Repeat("é", 1000), 100)) {
		t.Error("Words cut a rune")
	}
	many := strings.Repeat("word ", 10000)
	if got := Words(many, 2048); len(got) > 2048 {
		t.Errorf("Words: %d bytes", len(got))
	}
	if s := "a message of ordinary words that is not cut at all"; Words(s, 2048) != s {
		t.Errorf("Words changed %q", s)
	}
}

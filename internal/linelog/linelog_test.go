package linelog

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func collect(max int) (*Writer, *[]string) {
	var got []string
	return &Writer{Max: max, Emit: func(l []byte) { got = append(got, string(l)) }}, &got
}

func TestLines(t *testing.T) {
	t.Parallel()
	w, got := collect(8)
	for _, p := range []string{"ab", "c\r\nde", "f\n", "0123456789", "\nx"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	w.Flush()
	want := []string{"abc", "def", "01234567", "89", "x"}
	if strings.Join(*got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines %q, want %q", *got, want)
	}
}

// TestSplitProperty: whatever the writes, the emitted lines are the
// stream's lines cut into pieces of at most Max bytes, in order.
func TestSplitProperty(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(1, 16).Draw(t, "max")
		lines := rapid.SliceOf(rapid.StringMatching(`[a-z]{0,40}`)).Draw(t, "lines")
		stream := strings.Join(lines, "\n")
		w, got := collect(max)
		for rest := stream; rest != ""; {
			n := rapid.IntRange(1, len(rest)).Draw(t, "chunk")
			w.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		w.Flush()
		var want []string
		for i, l := range lines {
			last := i == len(lines)-1
			for len(l) > max {
				want = append(want, l[:max])
				l = l[max:]
			}
			if l != "" || !last {
				want = append(want, l)
			}
		}
		if strings.Join(*got, "\x00") != strings.Join(want, "\x00") || len(*got) != len(want) {
			t.Fatalf("max %d stream %q: got %q, want %q", max, stream, *got, want)
		}
	})
}

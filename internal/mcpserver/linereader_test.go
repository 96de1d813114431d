package mcpserver

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// An oversized line is dropped as it streams by, its first bytes kept;
// the lines around it come through whole, their ends ("\n", "\r\n", none
// at the end) left out.
func TestLineReader(t *testing.T) {
	long := `{"id":1,"x":"` + strings.Repeat("a", 300<<10) + `"}`
	in := "one\r\n" + long + "\n" + "two\n\n" + strings.Repeat("b", 100) + "\n" + "last"
	l := newLineReader(strings.NewReader(in), 100)
	want := []string{"one", "!", "two", "", strings.Repeat("b", 100), "last"}
	for i, w := range want {
		line, err := l.next()
		var tooLong *lineTooLongError
		if w == "!" {
			if !errors.As(err, &tooLong) || tooLong.Limit != 100 || !strings.HasPrefix(long, string(tooLong.Head)) || len(tooLong.Head) != lineHead {
				t.Fatalf("line %d: want a line too long, got %q %v", i, line, err)
			}
			if id := headID(tooLong.Head); id.Raw() != int64(1) {
				t.Fatalf("id from the head: %v", id.Raw())
			}
			continue
		}
		if err != nil || string(line) != w {
			t.Fatalf("line %d: %q %v, want %q", i, line, err, w)
		}
	}
	if line, err := l.next(); err != io.EOF {
		t.Fatalf("after the last line: %q %v", line, err)
	}
	// A line one byte over, its end aside.
	l = newLineReader(strings.NewReader(strings.Repeat("c", 101)+"\r\n"+strings.Repeat("d", 100)+"\r\n"), 100)
	var tooLong *lineTooLongError
	if _, err := l.next(); !errors.As(err, &tooLong) {
		t.Fatalf("101 bytes: %v", err)
	}
	if line, err := l.next(); err != nil || len(line) != 100 {
		t.Fatalf("100 bytes: %d %v", len(line), err)
	}
}

package cli

import (
	"io"
	"os"
	"testing"
)

// readUntilHeld reads what s hands out, the bytes a form gets, and checks
// that s then holds the keys that follow (a read would wait).
func readUntilHeld(t *testing.T, s *inputSession, want string) {
	t.Helper()
	readKeys(t, s, want)
	s.in.mu.Lock()
	held := s.held
	s.in.mu.Unlock()
	if !held {
		t.Fatalf("after %q the session does not hold the keys that follow", want)
	}
}

func readKeys(t *testing.T, s *inputSession, want string) {
	t.Helper()
	var got []byte
	b := make([]byte, 64)
	for len(got) < len(want) {
		n, err := s.Read(b)
		if err != nil {
			t.Fatalf("read after %q: %v", got, err)
		}
		got = append(got, b[:n]...)
	}
	if string(got) != want {
		t.Fatalf("the form got %q, want %q", got, want)
	}
}

// TestInputSessionsShareKeys: keys typed ahead of a question go to it, not
// to the form before it; a gate key inside an escape sequence or a paste
// is not one.
func TestInputSessionsShareKeys(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	in := newTermInput(r, nil)
	defer in.close()
	typed := "alpha\rbr\x1b[200~x\ry\x1b[201~avo\x1b[?2026;2$y\ryes"
	if _, err := io.WriteString(w, typed); err != nil {
		t.Fatal(err)
	}

	first := in.session(gateEnter)
	readUntilHeld(t, first, "alpha\r")
	first.close()
	if n, err := first.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("a closed session read %d, %v", n, err)
	}

	second := in.session(gateEnter)
	readUntilHeld(t, second, "br\x1b[200~x\ry\x1b[201~avo\x1b[?2026;2$y\r")
	second.close()

	third := in.session(gateEnter | gateYesNo)
	readUntilHeld(t, third, "y")
	third.release(1, gateEnter)
	readKeys(t, third, "es")
}

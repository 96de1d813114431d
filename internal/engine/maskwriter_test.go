package engine

import (
	"bytes"
	"strings"
	"testing"

	"stepwise.dev/stepwise/internal/secret"
)

// A secret that a long line's cut puts across two writes (the shell action
// forwards a line longer than 4 KB in 4 KB pieces) is masked all the same,
// and the text around it arrives whole.
func TestMaskWriterHidesASecretCutAcrossWrites(t *testing.T) {
	const s3 = "s3cr3t-v4lue"
	m := secret.NewMasker()
	m.Add(s3)
	for _, at := range []int{4096 - 1, 4096 - 5, 4096 - len(s3) + 1, 4096} {
		var buf bytes.Buffer
		w := &maskWriter{w: &buf, mask: m}
		line := strings.Repeat("x", at) + s3 + " end\n"
		for rest := line; rest != ""; {
			n := min(4096, len(rest))
			if _, err := w.Write([]byte(rest[:n])); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		w.flush()
		want := strings.Repeat("x", at) + secret.Redacted + " end\n"
		if got := buf.String(); got != want {
			t.Fatalf("secret at %d: wrote %d bytes, containing the secret: %v; want the line with it masked", at, len(got), strings.Contains(got, s3[:4]))
		}
	}
	// What is held back at the end goes out with flush.
	var buf bytes.Buffer
	w := &maskWriter{w: &buf, mask: m}
	_, _ = w.Write([]byte("tail s3cr"))
	w.flush()
	if buf.String() != "tail s3cr" {
		t.Fatalf("flush wrote %q", buf.String())
	}
}

//go:build linux

package cli

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A pipe on standard input is read through a description of its own,
// non-blocking (read through the poller): the same bytes and end of input,
// the inherited description left blocking.
// Anything else is standard input itself.
func TestServeStdinReopensAPipe(t *testing.T) {
	saved := os.Stdin
	t.Cleanup(func() { os.Stdin = saved })

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	os.Stdin = r
	in := serveStdin()
	if in == r {
		t.Fatal("a pipe on standard input was not opened again")
	}
	defer in.Close()
	if sc, err := in.SyscallConn(); err != nil {
		t.Fatal(err)
	} else {
		var flags int
		_ = sc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
		if err != nil || flags&unix.O_NONBLOCK == 0 {
			t.Fatalf("the pipe opened again is not read through the poller: %#x %v", flags, err)
		}
	}
	if _, err := w.WriteString(`{"jsonrpc":"2.0"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, err := io.ReadAll(in)
	if err != nil || string(got) != `{"jsonrpc":"2.0"}`+"\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	flags, err := unix.FcntlInt(r.Fd(), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("the inherited description's flags changed: %#x %v", flags, err)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "requests"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	os.Stdin = f
	if got := serveStdin(); got != f {
		t.Fatal("a file on standard input should be read as it is")
	}
}

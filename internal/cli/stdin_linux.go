//go:build linux

package cli

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// serveStdin returns what the stdio transport reads. When standard input
// is a pipe (as MCP clients start servers), it is the same pipe opened
// again through /proc/self/fd: a file description of its own, which Go
// makes non-blocking and reads through its network poller, so that a read
// waiting for the next request parks its goroutine instead of holding a
// thread in the read system call (which the runtime must notice, hand its
// processor off and wake again for every message). The description the
// process inherited, which others may share, keeps its flags. Anything
// else (a terminal, a socket, a file) is read as it is.
func serveStdin() *os.File {
	fd := int(os.Stdin.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return os.Stdin
	}
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return os.Stdin
	}
	return f
}

// pollableTerminal returns the terminal f opened again through
// /proc/self/fd: a file description of its own, which Go reads through its
// poller, so that a read waiting for a key can be stopped (a deadline);
// the description f shares with the shell keeps its flags. f itself when
// that fails.
func pollableTerminal(f *os.File) *os.File {
	r, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return f
	}
	return r
}

//go:build linux

package mcpserver

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pipeRoom returns, when w is a pipe, a check that n more bytes go into it
// now, without waiting for its reader: the pipe is empty (its reader took
// everything) and n is at most half its size. Bytes queued in a pipe may
// hold far more of its buffers than their number says (a write starts a
// new page when its bytes do not fit in the last one), so only an empty
// pipe's room is known. Written while nothing else writes to it, such
// bytes go in at once. It returns nil for anything else (a file, a
// socket, a terminal).
func pipeRoom(w io.Writer) func(n int) bool {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	size := 0
	err = sc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return
		}
		size, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
	})
	if err != nil || size <= 0 {
		return nil
	}
	return func(n int) bool {
		fits := false
		_ = sc.Control(func(fd uintptr) {
			queued, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
			fits = err == nil && queued == 0 && n <= size/2
		})
		return fits
	}
}

//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// keysMode sets the terminal on f to hand over every key as it is typed
// (no line editing, no echo, Enter kept as CR) while signals (Ctrl-C) and
// output processing stay as they were, so that keys typed between two
// questions wait, unchanged, for the next one and progress lines still
// print. It returns the function that puts the previous mode back.
func keysMode(f *os.File) (restore func(), err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO | unix.ECHONL | unix.IEXTEN
	t.Iflag &^= unix.ICRNL | unix.INLCR | unix.IGNCR | unix.IXON
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &t); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}

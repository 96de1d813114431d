//go:build unix

package engine

import (
	"errors"
	"os"
	"strings"
	"syscall"
)

// processGone reports whether no process of that id exists on this
// machine (a process that exists but is not ours is alive).
func processGone(pid int) bool {
	if pid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// pidNamespace names this process's pid namespace ("" when unknown).
func pidNamespace() string {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.Trim(strings.TrimPrefix(link, "pid:"), "[]")
}

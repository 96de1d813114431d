//go:build unix

package cli

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// reserveStdout keeps the process's standard output for the MCP transport
// alone: it returns a private copy of it and points file descriptor 1 at
// standard error, so that nothing else — a stray print, a library, a child
// process — can write a byte that is not JSON-RPC.
func reserveStdout() (*os.File, error) {
	fd, err := unix.Dup(int(os.Stdout.Fd()))
	if err != nil {
		return nil, fmt.Errorf("reserve stdout: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(int(os.Stderr.Fd()), int(os.Stdout.Fd())); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("reserve stdout: %w", err)
	}
	return os.NewFile(uintptr(fd), "mcp-stdout"), nil
}

//go:build !linux

package mcpserver

import "io"

// pipeRoom is nil where the room left in a pipe is not known: every quick
// answer is written by the connection's writer.
func pipeRoom(io.Writer) func(n int) bool { return nil }

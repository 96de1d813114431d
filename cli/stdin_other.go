//go:build !linux

package cli

import "os"

// serveStdin returns standard input, which the stdio transport reads.
func serveStdin() *os.File { return os.Stdin }

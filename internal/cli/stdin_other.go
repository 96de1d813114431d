//go:build !linux

package cli

import "os"

// serveStdin returns standard input, which the stdio transport reads.
func serveStdin() *os.File { return os.Stdin }

// pollableTerminal returns f: reads of it cannot be stopped here.
func pollableTerminal(f *os.File) *os.File { return f }

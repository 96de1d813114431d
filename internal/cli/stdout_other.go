//go:build !unix

package cli

import "os"

// reserveStdout returns standard output: on this platform other writers
// are not diverted.
func reserveStdout() (*os.File, error) { return os.Stdout, nil }

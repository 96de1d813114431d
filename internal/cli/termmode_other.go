//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package cli

import "os"

// keysMode leaves the terminal as it is where termios is not available.
func keysMode(*os.File) (func(), error) { return func() {}, nil }

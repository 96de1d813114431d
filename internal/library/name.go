package library

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"stepwise.dev/stepwise/internal/home"
)

// ErrUnsafeName is wrapped by every error about a name that could leave
// the library: a path, "..", a NUL, an absolute name, or an entry that is a
// symlink leading outside.
var ErrUnsafeName = home.ErrUnsafeName

// CheckName returns an error wrapping ErrUnsafeName unless name is a valid
// library name (^[a-z0-9][a-z0-9_-]{0,63}$: no separators, no dots, no
// NUL, not absolute). The message says what is wrong with it.
func CheckName(name string) error {
	if home.ValidName(name) {
		return nil
	}
	var why string
	switch {
	case name == "":
		why = "it is empty"
	case strings.ContainsRune(name, 0):
		why = "it contains a NUL byte"
	case filepath.IsAbs(name) || strings.HasPrefix(name, "/"):
		why = "it is an absolute path"
	case strings.Contains(name, ".."):
		why = "it contains \"..\""
	case strings.ContainsAny(name, `/\`):
		why = "it contains a path separator"
	default:
		why = "names match ^[a-z0-9][a-z0-9_-]{0,63}$"
	}
	return fmt.Errorf("%w: %q is not a workflow name: %s", ErrUnsafeName, printable(name), why)
}

// printable keeps control bytes out of messages.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '�'
		}
		return r
	}, s)
}

// IsUnsafe reports whether err is about an unsafe name.
func IsUnsafe(err error) bool { return errors.Is(err, ErrUnsafeName) }

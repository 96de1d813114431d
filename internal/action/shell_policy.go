package action

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"stepwise.dev/stepwise/code"
)

// CodeShellNotAllowed is the stable error code of a shell command that the
// policy refuses. Surfaces match on it (the MCP error data); the run-time
// refusal carries it in the step's error message.
const CodeShellNotAllowed = code.ShellNotAllowed

// ErrShellNotAllowed matches every refusal of the shell policy
// (errors.Is).
var ErrShellNotAllowed = errors.New(CodeShellNotAllowed)

// ShellRefusal is the policy's refusal of a command. Its message starts
// with the code, so that a run's error text carries it too.
type ShellRefusal struct {
	// Reason says why, and which flag of `stepwise serve` would allow it.
	Reason string
}

func (r *ShellRefusal) Error() string { return CodeShellNotAllowed + ": " + r.Reason }

// Is makes errors.Is(err, ErrShellNotAllowed) hold.
func (r *ShellRefusal) Is(target error) bool { return target == ErrShellNotAllowed }

// refuse is a refusal that no retry can overcome.
func refuse(format string, args ...any) error {
	return &Error{Err: &ShellRefusal{Reason: fmt.Sprintf(format, args...)}, Code: CodeShellNotAllowed}
}

// ShellPolicy says which commands the shell action may start. The zero
// value refuses every command: a server that agents call must be told to
// run commands (stepwise serve --allow-shell or --allow-shell-cmd NAME),
// while the local CLI, whose user could run the command anyway, enables
// it.
type ShellPolicy struct {
	// Enabled turns the shell action on.
	Enabled bool
	// Allow, when not empty, restricts it to these programs: a bare name
	// allows that command written as a bare name (found through PATH), a
	// path allows exactly that path. shell: true runs "sh", so it needs
	// "sh" listed.
	Allow []string
}

// Check refuses a program (the command as written, "sh" for shell: true)
// that the policy does not allow. env is the step's environment overrides:
// under an allowlist they may not change which code a program loads
// (PATH, LD_*, DYLD_*), or an allowed name could run anything.
func (p ShellPolicy) Check(program string, env map[string]string) error {
	if !p.Enabled {
		return refuse("this server does not run shell commands for its callers; "+
			"the operator allows them by starting the server with --allow-shell (any command) or --allow-shell-cmd %s (this program only)",
			flagValue(program))
	}
	if len(p.Allow) == 0 {
		return nil
	}
	if !p.allows(program) {
		return refuse("%q is not among the programs this server may run (%s); "+
			"the operator allows it by starting the server with --allow-shell-cmd %s, or every command with --allow-shell",
			program, strings.Join(p.Allow, ", "), flagValue(program))
	}
	for k := range env {
		if k == "PATH" || strings.HasPrefix(k, "LD_") || strings.HasPrefix(k, "DYLD_") {
			return refuse("env %s would change which code %q runs, and this server allows only listed programs (--allow-shell-cmd); "+
				"drop it, or the operator allows every command with --allow-shell", k, program)
		}
	}
	return nil
}

// allows reports whether program is on the allowlist.
func (p ShellPolicy) allows(program string) bool {
	bare := !strings.ContainsRune(program, filepath.Separator) && !strings.ContainsRune(program, '/')
	return slices.ContainsFunc(p.Allow, func(entry string) bool {
		if bare {
			return entry == program
		}
		return strings.ContainsRune(entry, '/') && filepath.Clean(entry) == filepath.Clean(program)
	})
}

// flagValue spells a program for a suggested command line.
func flagValue(program string) string {
	if program == "" || strings.ContainsAny(program, " \t'\"$`\\") {
		return "NAME"
	}
	return program
}

package secret

import (
	"errors"
	"fmt"
	"regexp"
)

// ErrUnset is wrapped by ResolveEnvRef when the variable is not set.
var ErrUnset = errors.New("environment variable not set")

// envRef matches an environment reference: $ followed by a variable name.
var envRef = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`)

// IsEnvRef reports whether s is an environment reference: "$NAME" where NAME
// matches ^[A-Za-z_][A-Za-z0-9_]*$. Nothing else ("${NAME}", "$1", " $X") is.
func IsEnvRef(s string) bool {
	return envRef.MatchString(s)
}

// ResolveEnvRef returns the value of the variable ref refers to, looked up
// with lookup (os.LookupEnv in production). A variable that is set to the
// empty string resolves to "". Errors name the reference or the variable,
// never a value; when ref is not a reference at all it is not echoed either,
// since a caller may have passed a secret value by mistake.
func ResolveEnvRef(ref string, lookup func(string) (string, bool)) (string, error) {
	if !IsEnvRef(ref) {
		return "", errors.New("secret: not an environment reference (want $NAME)")
	}
	name := ref[1:]
	v, ok := lookup(name)
	if !ok {
		return "", fmt.Errorf("secret: %w: %s", ErrUnset, name)
	}
	return v, nil
}

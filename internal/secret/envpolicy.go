package secret

import (
	"fmt"
	"regexp"
	"strings"
)

// EnvPolicy says which of the server's environment variables workflows
// may read: as env.NAME in expressions, as the env that answers an input
// or a question, as a $NAME reference given for a secret, as a catalog's
// credential. The environment of a server holds its own secrets (cloud
// tokens, database URLs); whoever writes the workflow chooses the names,
// and over MCP that is the agent. So `stepwise serve` restricts reads to
// the names the operator lists (--allow-env), as it refuses shell commands
// unless told; the local CLI, whose user could read the variables anyway,
// does not restrict them. The zero value does not restrict.
type EnvPolicy struct {
	// Restricted limits reads to the names Allow matches.
	Restricted bool
	// Allow lists the readable names. A name ending in * allows every
	// name with that prefix (AWS_*); "*" alone allows every name.
	Allow []string
}

// envPattern is a variable name, or a prefix of one followed by *.
var envPattern = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*\*?|\*)$`)

// ParseEnvAllow checks --allow-env values (each may be a comma-separated
// list) and returns the names and patterns they give.
func ParseEnvAllow(values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			if !envPattern.MatchString(item) {
				return nil, fmt.Errorf("%q is not an environment variable name (letters, digits and _, not starting with a digit), a prefix ending in * (APP_*), or *", item)
			}
			out = append(out, item)
		}
	}
	return out, nil
}

// Allows reports whether workflows may read the variable name.
func (p EnvPolicy) Allows(name string) bool {
	if !p.Restricted {
		return true
	}
	for _, a := range p.Allow {
		if prefix, ok := strings.CutSuffix(a, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if a == name {
			return true
		}
	}
	return false
}

// Lookup restricts lookup to the variables the policy allows: the others
// read as unset.
func (p EnvPolicy) Lookup(lookup func(string) (string, bool)) func(string) (string, bool) {
	if !p.Restricted {
		return lookup
	}
	return func(name string) (string, bool) {
		if !p.Allows(name) {
			return "", false
		}
		return lookup(name)
	}
}

// Refused lists the names of names the policy does not allow, each once,
// in their order.
func (p EnvPolicy) Refused(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if !p.Allows(n) && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// UnsetHint says, for a variable that reads as unset, that the policy may
// be why and how to allow it ("" when the policy restricts nothing).
func (p EnvPolicy) UnsetHint(name string) string {
	if !p.Restricted {
		return ""
	}
	return "the server does not let workflows read it (the operator allows it by starting the server with --allow-env " + name + ")"
}

// AllowHint is how an operator allows names, for error messages.
func AllowHint(names []string) string {
	flags := make([]string, len(names))
	for i, n := range names {
		flags[i] = "--allow-env " + n
	}
	return "the operator allows them by starting the server with " + strings.Join(flags, " ")
}

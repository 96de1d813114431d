package mcpclient

import (
	"errors"
	"fmt"
	"strings"
)

// expand replaces every $NAME in s by the value of the environment
// variable NAME (looked up when a connection opens, so values are never
// stored) and every $$ by a single $. It returns the values it put in, for
// masking. Errors name variables, never values.
func expand(s string, lookup func(string) (string, bool)) (string, []string, error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	var used []string
	for i := 0; i < len(s); {
		if s[i] != '$' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i += 2
			continue
		}
		name := refName(s[i+1:])
		if name == "" {
			return "", nil, errors.New("a $ must start a reference $NAME (NAME: letters, digits, _) or be written $$")
		}
		v, ok := lookup(name)
		if !ok {
			return "", nil, &unsetError{name}
		}
		b.WriteString(v)
		used = append(used, v)
		i += 1 + len(name)
	}
	return b.String(), used, nil
}

// checkRefs reports a malformed reference in s without resolving it.
func checkRefs(s string) error {
	_, _, err := expand(s, func(string) (string, bool) { return "", true })
	return err
}

// refName returns the variable name at the start of s: a letter or _,
// then letters, digits and _.
func refName(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
		if !letter && !(i > 0 && c >= '0' && c <= '9') {
			return s[:i]
		}
	}
	return s
}

// unsetError is a reference to a variable that is not set.
type unsetError struct{ name string }

func (e *unsetError) Error() string { return fmt.Sprintf("environment variable %s is not set", e.name) }

// Package ident holds the rules for the names stepwise accepts: library
// workflow names, MCP server names, and the names of a workflow's inputs
// and outputs. Each is written as a regular expression (for messages and
// tests) and checked by hand: compiled when the binary starts, the {0,63}
// in each unrolled into a large program, a millisecond of every start.
package ident

// Rule is a name rule: one character that first allows, then at most 63
// that rest allows (64 in all).
type Rule struct {
	// Pattern is the rule as a regular expression.
	Pattern     string
	first, rest func(c byte) bool
}

// Valid reports whether name follows the rule.
func (r Rule) Valid(name string) bool {
	if name == "" || len(name) > 64 || !r.first(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		if !r.rest(name[i]) {
			return false
		}
	}
	return true
}

var (
	// Library is a library workflow's name (and a workflow's name:
	// field); a name that follows it is safe to join to a directory.
	Library = Rule{Pattern: `^[a-z0-9][a-z0-9_-]{0,63}$`, first: lowerDigit, rest: lowerDigitMark}
	// Server is the name of an MCP server in servers.yaml.
	Server = Rule{Pattern: `^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`, first: alnum, rest: alnumMark}
	// Field is the name of a workflow's input or output: expressions
	// refer to it (inputs.NAME).
	Field = Rule{Pattern: `^[A-Za-z_][A-Za-z0-9_]{0,63}$`, first: letter, rest: word}
)

func lower(c byte) bool          { return 'a' <= c && c <= 'z' }
func digit(c byte) bool          { return '0' <= c && c <= '9' }
func lowerDigit(c byte) bool     { return lower(c) || digit(c) }
func lowerDigitMark(c byte) bool { return lowerDigit(c) || c == '_' || c == '-' }
func alnum(c byte) bool          { return lower(c) || 'A' <= c && c <= 'Z' || digit(c) }
func alnumMark(c byte) bool      { return alnum(c) || c == '_' || c == '.' || c == '-' }
func letter(c byte) bool         { return lower(c) || 'A' <= c && c <= 'Z' || c == '_' }
func word(c byte) bool           { return letter(c) || digit(c) }

// Package clip shortens text that comes from a caller before it is shown
// back: a value an error quotes, a description a list shows. A run id of
// megabytes must not come back whole in an error; a list of a thousand
// actions must not carry a thousand long descriptions.
package clip

import (
	"strings"
	"unicode/utf8"
)

// ValueBytes is how much of a caller's value an error quotes.
const ValueBytes = 80

// Text cuts s to at most max bytes, at a rune boundary, ending it with
// "…" when it was cut.
func Text(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Value cuts a caller's value to ValueBytes: what an error quotes of a
// name, an id, a path or a token.
func Value(s string) string { return Text(s, ValueBytes) }

// Words cuts every word of s (a run without spaces) longer than
// ValueBytes+40 bytes to ValueBytes, then s to max bytes: a message that
// quotes a caller's value whole keeps its sense and loses the value's
// bulk. A quoted word keeps its closing quote.
func Words(s string, max int) string {
	const long = ValueBytes + 40
	if len(s) <= long {
		return s
	}
	var b strings.Builder
	start := 0
	word := func(end int) {
		w := s[start:end]
		if len(w) > long {
			cut := Value(w)
			if strings.HasPrefix(w, `"`) && strings.HasSuffix(w, `"`) {
				cut += `"`
			}
			w = cut
		}
		b.WriteString(w)
	}
	for i := 0; i < len(s) && b.Len() <= max; i++ {
		if c := s[i]; c == ' ' || c == '\n' || c == '\t' {
			word(i)
			b.WriteByte(c)
			start = i + 1
		}
	}
	if b.Len() <= max {
		word(len(s))
	}
	return Text(b.String(), max)
}

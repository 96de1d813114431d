package graph

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxText bounds one line of a label, in runes: prompts, instructions and
// conditions can be paragraphs, and a chart is for seeing the flow.
const maxText = 48

// text makes s safe inside a quoted Mermaid string: one line, at most max
// runes (0: no bound), with every character Mermaid could read as syntax
// written as an entity code.
func text(s string, max int) string {
	return escape(clip(s, max))
}

// clip makes s one line of at most max runes (0: no bound), not escaped.
func clip(s string, max int) string {
	return truncate(oneLine(s), max)
}

// oneLine folds every run of whitespace, line breaks and control
// characters into one space: a label's lines are ours (<br>), never the
// author's.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.In(r, unicode.Zl, unicode.Zp, unicode.Cf) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

func truncate(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	runes := []rune(s)
	return strings.TrimRight(string(runes[:max-1]), " ") + "…"
}

// escape writes the characters that end a quoted string or that Mermaid
// and its HTML labels interpret as Mermaid entity codes (#name; or #NNN;),
// which Mermaid turns back into the characters when it renders.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString("#quot;")
		case '#':
			b.WriteString("#35;")
		case '&':
			b.WriteString("#amp;")
		case '<':
			b.WriteString("#lt;")
		case '>':
			b.WriteString("#gt;")
		case '`':
			// A backtick right inside the quotes starts a Markdown string.
			b.WriteString("#96;")
		case 'ﬂ', '¶':
			// Mermaid marks entities with these while it parses (ﬂ°…¶ß);
			// written raw they would decode into stray characters.
			b.WriteString("#" + strconv.Itoa(int(r)) + ";")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// safeID reports whether a step id can be used as part of a node id as it
// is: only ASCII letters, digits and _.
func safeID(id string) bool {
	if id == "" {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// nodeID turns a step id into a Mermaid node id with a one-letter role
// prefix (s step, i its if, k its compensation, g its group). Valid step
// ids (letters, digits, _) are kept readable: "s_fetch". Any other id (a
// hand-built workflow may have "deploy-prod" or "") is encoded with a
// different second character, so the two forms never collide, and every
// byte outside [A-Za-z0-9] written as _HEX_, so the encoding is
// injective. A letter prefix also keeps ids clear of Mermaid's keywords
// (end, subgraph, graph…) and of the o/x edge endings.
func nodeID(role byte, stepID string) string {
	if safeID(stepID) {
		return string(role) + "_" + stepID
	}
	var b strings.Builder
	b.WriteByte(role)
	b.WriteString("x_")
	// Bytes, not runes: distinct invalid UTF-8 would share U+FFFD.
	for i := 0; i < len(stepID); i++ {
		c := stepID[i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b.WriteByte(c)
			continue
		}
		b.WriteString("_" + strconv.FormatUint(uint64(c), 16) + "_")
	}
	return b.String()
}

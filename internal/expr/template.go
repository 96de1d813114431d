package expr

import (
	"fmt"
	"strings"
)

// Segment is one piece of a scanned template: literal text or an expression.
type Segment struct {
	// Text is the literal text (when Expr is false) or the expression
	// source between the delimiters, untrimmed (when Expr is true).
	Text string
	// Expr reports whether the segment is an expression.
	Expr bool
	// Offset is the byte offset of Text within the template.
	Offset int
}

// ScanError reports a malformed template.
type ScanError struct {
	// Offset is the byte offset in the template where the problem starts.
	Offset  int
	Message string
}

func (e *ScanError) Error() string {
	return fmt.Sprintf("at offset %d: %s", e.Offset, e.Message)
}

const (
	openDelim  = "${{"
	closeDelim = "}}"
)

// HasExpr reports whether s contains an expression opening (escaped
// openings do not count).
func HasExpr(s string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], openDelim)
		if j < 0 {
			return false
		}
		j += i
		if j == 0 || s[j-1] != '$' {
			return true
		}
		i = j + len(openDelim)
	}
}

// Scan splits a template into literal and expression segments. Adjacent
// literal pieces are merged. An unterminated ${{ or an empty expression is
// a *ScanError.
func Scan(s string) ([]Segment, error) {
	var segs []Segment
	var lit strings.Builder
	litStart := 0
	flush := func() {
		if lit.Len() > 0 {
			segs = append(segs, Segment{Text: lit.String(), Offset: litStart})
			lit.Reset()
		}
	}
	i := 0
	for i < len(s) {
		if strings.HasPrefix(s[i:], "$"+openDelim) {
			// Escape: $${{ is a literal ${{.
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteString(openDelim)
			i += 1 + len(openDelim)
			continue
		}
		if strings.HasPrefix(s[i:], openDelim) {
			start := i + len(openDelim)
			end, err := findClose(s, start)
			if err != nil {
				return nil, &ScanError{Offset: i, Message: err.Error()}
			}
			body := s[start:end]
			if strings.TrimSpace(body) == "" {
				return nil, &ScanError{Offset: i, Message: "empty expression ${{ }}"}
			}
			flush()
			segs = append(segs, Segment{Text: body, Expr: true, Offset: start})
			i = end + len(closeDelim)
			litStart = i
			continue
		}
		if lit.Len() == 0 {
			litStart = i
		}
		lit.WriteByte(s[i])
		i++
	}
	flush()
	return segs, nil
}

// findClose returns the index of the }} that closes an expression whose
// body starts at start. Delimiters inside string literals do not count, and
// neither do braces of map literals opened inside the expression.
func findClose(s string, start int) (int, error) {
	depth := 0
	for i := start; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'', '`':
			j, ok := skipString(s, i)
			if !ok {
				return 0, fmt.Errorf("unterminated string literal in expression")
			}
			i = j
		case '{':
			depth++
		case '}':
			if depth == 0 {
				if i+1 < len(s) && s[i+1] == '}' {
					return i, nil
				}
				return 0, fmt.Errorf("unbalanced } in expression (close it with }})")
			}
			depth--
		}
	}
	return 0, fmt.Errorf("unterminated ${{: add the closing }}")
}

// skipString returns the index of the quote closing the string literal
// that opens at i.
func skipString(s string, i int) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			return j, true
		}
	}
	return 0, false
}

// Single reports whether the template is exactly one expression, possibly
// surrounded by whitespace, and returns it. Such templates evaluate to the
// typed value of the expression rather than to text.
func Single(segs []Segment) (Segment, bool) {
	var found Segment
	n := 0
	for _, sg := range segs {
		if sg.Expr {
			found = sg
			n++
			continue
		}
		if strings.TrimSpace(sg.Text) != "" {
			return Segment{}, false
		}
	}
	return found, n == 1
}

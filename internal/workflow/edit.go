package workflow

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v4"
)

// WithName returns the document's text with its top-level name replaced,
// every other byte unchanged (comments, order, formatting and the quoting
// style of the name). It fails when the name is not a plain or quoted
// scalar written on one line — then the caller must edit by hand.
func (s *Source) WithName(name string) ([]byte, error) {
	n, _ := s.find("/name")
	if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" {
		return nil, fmt.Errorf("the document has no name to replace")
	}
	line := s.lineText(n.Line)
	col := byteOffsetOfColumn(line, n.Column)
	if n.Line < 1 || col < 0 {
		return nil, fmt.Errorf("the name's position is unknown")
	}
	off := s.lines[n.Line-1] + col
	rest := s.text[off:]
	start := off
	if len(rest) > 0 && (rest[0] == '"' || rest[0] == '\'') {
		if !bytes.HasPrefix(rest[1:], []byte(n.Value)) || len(rest) < len(n.Value)+2 || rest[len(n.Value)+1] != rest[0] {
			return nil, fmt.Errorf("the name %q is written with escapes: rename it by hand", n.Value)
		}
		start++
	} else if !bytes.HasPrefix(rest, []byte(n.Value)) {
		return nil, fmt.Errorf("the name %q is not written on one line: rename it by hand", n.Value)
	}
	out := make([]byte, 0, len(s.text)-len(n.Value)+len(name))
	out = append(out, s.text[:start]...)
	out = append(out, name...)
	out = append(out, s.text[start+len(n.Value):]...)
	return out, nil
}

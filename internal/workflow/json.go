package workflow

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// parseJSON builds the same node tree the YAML parser builds, from JSON
// text that encoding/json has already accepted. JSON is not read through
// the YAML parser because YAML folds some characters JSON keeps (U+2028,
// U+2029 and U+0085 are line breaks to YAML), and this is also faster.
func parseJSON(data []byte) (*yaml.Node, error) {
	p := jsonParser{data: data, line: 1, col: 1}
	p.space()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	return n, nil
}

type jsonParser struct {
	data      []byte
	i         int
	line, col int
}

func (p *jsonParser) advance(n int) {
	for k := 0; k < n && p.i < len(p.data); {
		r, size := utf8.DecodeRune(p.data[p.i:])
		if r == '\n' {
			p.line++
			p.col = 1
		} else {
			p.col++
		}
		p.i += size
		k += size
	}
}

func (p *jsonParser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\r', '\n':
			p.advance(1)
		default:
			if p.i == 0 && len(p.data) >= 3 && string(p.data[:3]) == "\ufeff" {
				p.i += 3 // byte order mark
				continue
			}
			return
		}
	}
}

func (p *jsonParser) node(kind yaml.Kind, tag string) *yaml.Node {
	return &yaml.Node{Kind: kind, Tag: tag, Line: p.line, Column: p.col}
}

func (p *jsonParser) value(depth int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("the document nests deeper than %d levels", maxDepth)
	}
	if p.i >= len(p.data) {
		return nil, fmt.Errorf("unexpected end of JSON")
	}
	switch c := p.data[p.i]; {
	case c == '{':
		n := p.node(yaml.MappingNode, "!!map")
		n.Style = yaml.FlowStyle
		p.advance(1)
		p.space()
		if p.i < len(p.data) && p.data[p.i] == '}' {
			p.advance(1)
			return n, nil
		}
		for {
			p.space()
			k, err := p.str()
			if err != nil {
				return nil, err
			}
			p.space()
			p.advance(1) // ':'
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, k, v)
			p.space()
			if p.i < len(p.data) && p.data[p.i] == ',' {
				p.advance(1)
				continue
			}
			p.advance(1) // '}'
			return n, nil
		}
	case c == '[':
		n := p.node(yaml.SequenceNode, "!!seq")
		n.Style = yaml.FlowStyle
		p.advance(1)
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.advance(1)
			return n, nil
		}
		for {
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
			p.space()
			if p.i < len(p.data) && p.data[p.i] == ',' {
				p.advance(1)
				continue
			}
			p.advance(1) // ']'
			return n, nil
		}
	case c == '"':
		return p.str()
	case c == 't' || c == 'f':
		n := p.node(yaml.ScalarNode, "!!bool")
		n.Value = "true"
		if c == 'f' {
			n.Value = "false"
		}
		p.advance(len(n.Value))
		return n, nil
	case c == 'n':
		n := p.node(yaml.ScalarNode, "!!null")
		n.Value = "null"
		p.advance(4)
		return n, nil
	default:
		start := p.i
		n := p.node(yaml.ScalarNode, "!!int")
		for p.i < len(p.data) {
			b := p.data[p.i]
			if b == '.' || b == 'e' || b == 'E' {
				n.Tag = "!!float"
			}
			if !(b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E' || (b >= '0' && b <= '9')) {
				break
			}
			p.advance(1)
		}
		n.Value = string(p.data[start:p.i])
		if n.Value == "" {
			return nil, fmt.Errorf("unexpected character %q in JSON", c)
		}
		return n, nil
	}
}

// str reads a string; the node's position is that of the opening quote,
// as for YAML's double-quoted scalars.
func (p *jsonParser) str() (*yaml.Node, error) {
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return nil, fmt.Errorf("expected a string in JSON")
	}
	n := p.node(yaml.ScalarNode, "!!str")
	n.Style = yaml.DoubleQuotedStyle
	start := p.i
	escaped := false
	j := p.i + 1
	for ; j < len(p.data); j++ {
		if p.data[j] == '\\' {
			escaped = true
			j++
			continue
		}
		if p.data[j] == '"' {
			break
		}
	}
	raw := p.data[start : j+1]
	if escaped {
		if err := json.Unmarshal(raw, &n.Value); err != nil {
			return nil, err
		}
	} else {
		n.Value = string(raw[1 : len(raw)-1])
	}
	p.advance(len(raw))
	return n, nil
}

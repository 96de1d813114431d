package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/internal/yamlsize"
)

// Pos is a 1-based line and column in a source file.
type Pos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// Source is a parsed document: its plain value (maps, slices, strings,
// int64, float64, bool, nil — the JSON data model) and where each part of
// it came from.
type Source struct {
	// Value is the document as plain data.
	Value any
	// Format is "yaml" or "json".
	Format string

	text  []byte
	root  *yaml.Node // positions are looked up in the node tree on demand
	lines []int      // byte offset of each line start
}

// maxNodes bounds the size of a document after alias expansion, so that a
// few lines of YAML aliases cannot expand into gigabytes.
const maxNodes = 100_000

// maxExpanded bounds, in bytes, what a document stands for once its aliases
// are expanded (yamlsize.Expanded: the text of its scalars and a byte per
// node), or twice the document's size when that is more, so that every
// document without aliases passes: a megabyte scalar aliased a few thousand
// times is few nodes but gigabytes of text for everything that reads it.
const maxExpanded = 16 << 20

// Parse reads a YAML or JSON document. Syntax problems and structural
// problems that the JSON data model cannot express (duplicate keys, merge
// keys, custom tags, non-scalar keys) are returned as violations; when a
// violation of rule "syntax" is among them the Source is nil.
func Parse(data []byte) (*Source, []Violation) {
	src := &Source{
		Format: "yaml",
		text:   data,
	}
	src.lines = lineStarts(data)
	if !utf8.Valid(data) {
		return nil, []Violation{{Path: "", Pos: Pos{1, 1}, Rule: RuleSyntax, Message: "the file is not valid UTF-8 text"}}
	}
	var root *yaml.Node
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		src.Format = "json"
		if v := src.jsonSyntax(); v != nil {
			return nil, []Violation{*v}
		}
		n, err := parseJSON(data)
		if err != nil {
			return nil, []Violation{{Pos: Pos{1, 1}, Rule: RuleSyntax, Message: "invalid JSON: " + err.Error()}}
		}
		root = n
	} else {
		data = protectSeparators(data)
		var doc yaml.Node
		dec := yaml.NewDecoder(bytes.NewReader(data))
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return nil, []Violation{{Pos: Pos{1, 1}, Rule: RuleSyntax, Message: "the file is empty"}}
			}
			return nil, []Violation{yamlSyntax(err)}
		}
		var extra yaml.Node
		if err := dec.Decode(&extra); err == nil {
			return nil, []Violation{{Pos: Pos{extra.Line, extra.Column}, Rule: RuleSyntax, Message: "the file holds more than one YAML document; a workflow is one document"}}
		}
		root = &doc
		if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
	}
	// Measured on the node tree, before anything is built from it.
	if limit := max(maxExpanded, 2*int64(len(data))); yamlsize.Expanded(root, limit) > limit {
		return nil, []Violation{{Pos: Pos{1, 1}, Rule: RuleSyntax, Message: fmt.Sprintf("the document expands to more than %d MiB when its aliases are expanded (an alias repeated too often?)", limit>>20)}}
	}
	b := builder{src: src}
	src.root = root
	src.Value = b.value(root, "", 0)
	if b.tooDeep {
		return nil, []Violation{{Pos: Pos{1, 1}, Rule: RuleSyntax, Message: fmt.Sprintf("the document nests deeper than %d levels", maxDepth)}}
	}
	if b.count > maxNodes {
		return nil, []Violation{{Pos: Pos{1, 1}, Rule: RuleSyntax, Message: fmt.Sprintf("the document expands to more than %d nodes (alias bomb?)", maxNodes)}}
	}
	return src, b.violations
}

// Keys returns the keys of the mapping at ptr in the order they were
// written (the first occurrence of a duplicated key only).
func (s *Source) Keys(ptr string) []string {
	n, _ := s.find(ptr)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	keys := make([]string, 0, len(n.Content)/2)
	seen := make(map[string]bool, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" || seen[k.Value] {
			continue
		}
		seen[k.Value] = true
		keys = append(keys, k.Value)
	}
	return keys
}

// find returns the node at a JSON pointer and the key node naming it (nil
// for list items and the root). A pointer that leads nowhere gives nil.
func (s *Source) find(ptr string) (node, key *yaml.Node) {
	n := s.root
	if n == nil {
		return nil, nil
	}
	if ptr == "" {
		return n, nil
	}
	for _, part := range strings.Split(ptr[1:], "/") {
		part = unescapePointer(part)
		n = deref(n)
		key = nil
		switch n.Kind {
		case yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := deref(n.Content[i]); k.Kind == yaml.ScalarNode && k.Value == part && k.Tag != "!!merge" {
					next, key = n.Content[i+1], n.Content[i]
					break
				}
			}
			if next == nil {
				return nil, nil
			}
			n = next
		case yaml.SequenceNode:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(n.Content) {
				return nil, nil
			}
			n = n.Content[i]
		default:
			return nil, nil
		}
	}
	return n, key
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// ValuePos returns the position of the value at a JSON pointer, or of its
// nearest ancestor that has one.
func (s *Source) ValuePos(ptr string) Pos {
	for {
		if n, _ := s.find(ptr); n != nil {
			return Pos{n.Line, n.Column}
		}
		if ptr == "" {
			return Pos{1, 1}
		}
		ptr = parentPointer(ptr)
	}
}

// KeyPos returns the position of the key of the member at ptr, falling back
// to the value's position.
func (s *Source) KeyPos(ptr string) Pos {
	if _, k := s.find(ptr); k != nil {
		return Pos{k.Line, k.Column}
	}
	return s.ValuePos(ptr)
}

// OffsetPos maps a byte offset within the string value at ptr to a file
// position. Plain, quoted and literal-block scalars map exactly; for folded
// and multi-line flow scalars the start of the value is returned.
func (s *Source) OffsetPos(ptr string, off int) Pos {
	n, _ := s.find(ptr)
	if n != nil {
		n = deref(n)
	}
	if n == nil || n.Kind != yaml.ScalarNode {
		return s.ValuePos(ptr)
	}
	start := Pos{n.Line, n.Column}
	val := n.Value
	if off > len(val) {
		off = len(val)
	}
	switch n.Style {
	case 0, yaml.FlowStyle:
		// A plain scalar may continue on later lines (folded into
		// spaces); map only what stands on its first line as written.
		raw := s.lineText(n.Line)
		at := byteOffsetOfColumn(raw, n.Column)
		if strings.Contains(val, "\n") || at < 0 || !strings.HasPrefix(raw[at:], val[:off]) {
			return start
		}
		return Pos{n.Line, n.Column + utf8.RuneCountInString(val[:off])}
	case yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle:
		raw := s.lineText(n.Line)
		col := n.Column // column of the opening quote
		rawOff := byteOffsetOfColumn(raw, col)
		if rawOff < 0 || rawOff >= len(raw) {
			return start
		}
		r, ok := rawIndex(raw[rawOff+1:], val, off, n.Style == yaml.DoubleQuotedStyle)
		if !ok {
			return start
		}
		return Pos{n.Line, col + 1 + utf8.RuneCountInString(raw[rawOff+1:][:r])}
	case yaml.LiteralStyle:
		nl := strings.Count(val[:off], "\n")
		lineStart := strings.LastIndexByte(val[:off], '\n') + 1
		line := n.Line + 1 + nl
		// The block's indentation is given by its indicator (|2) when it
		// has one, relative to the line that holds the indicator;
		// otherwise by its first non-blank line.
		indent := -1
		if header := s.lineText(n.Line); header != "" {
			if i := strings.LastIndexAny(header, "|"); i >= 0 {
				for _, r := range header[i+1:] {
					if r >= '1' && r <= '9' {
						indent = len(header) - len(strings.TrimLeft(header, " ")) + int(r-'0')
						if strings.HasPrefix(strings.TrimLeft(header, " "), "- ") {
							indent += 2 // a list item's mapping is indented past "- "
						}
						break
					}
				}
			}
		}
		for l := n.Line + 1; indent < 0 && l <= len(s.lines); l++ {
			t := s.lineText(l)
			if strings.TrimSpace(t) != "" {
				indent = len(t) - len(strings.TrimLeft(t, " "))
				break
			}
		}
		indent = max(indent, 0)
		return Pos{line, indent + 1 + utf8.RuneCountInString(val[lineStart:off])}
	}
	return start
}

// rawIndex walks the raw text of a quoted scalar alongside its decoded value
// and returns the raw byte index that corresponds to decoded offset off.
func rawIndex(raw, val string, off int, double bool) (int, bool) {
	ri, vi := 0, 0
	for vi < off {
		if ri >= len(raw) {
			return 0, false
		}
		c := raw[ri]
		switch {
		case double && c == '\\':
			if ri+1 >= len(raw) {
				return 0, false
			}
			step := 2
			switch raw[ri+1] {
			case 'x':
				step = 4
			case 'u':
				step = 6
				// A UTF-16 surrogate pair (\ud83d\ude00) is one character.
				if ri+12 <= len(raw) && (raw[ri+2] == 'd' || raw[ri+2] == 'D') && strings.ContainsRune("89abAB", rune(raw[ri+3])) && raw[ri+6] == '\\' && raw[ri+7] == 'u' {
					step = 12
				}
			case 'U':
				step = 10
			}
			_, size := utf8.DecodeRuneInString(val[vi:])
			ri += step
			vi += size
		case !double && c == '\'' && ri+1 < len(raw) && raw[ri+1] == '\'':
			ri += 2
			vi++
		case c == '"' && double, c == '\'' && !double:
			return 0, false // closing quote before reaching off
		default:
			_, size := utf8.DecodeRuneInString(raw[ri:])
			ri += size
			vi += size
		}
	}
	return ri, true
}

func (s *Source) lineText(line int) string {
	if line < 1 || line > len(s.lines) {
		return ""
	}
	start := s.lines[line-1]
	end := len(s.text)
	if line < len(s.lines) {
		end = s.lines[line]
	}
	return strings.TrimRight(string(s.text[start:end]), "\r\n")
}

func byteOffsetOfColumn(line string, col int) int {
	c := 1
	for i := range line {
		if c == col {
			return i
		}
		c++
	}
	return -1
}

func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, b := range data {
		if b == '\n' && i+1 <= len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// posOfOffset converts a byte offset in the file to a position.
func (s *Source) posOfOffset(off int) Pos {
	line := 1
	for i, st := range s.lines {
		if st > off {
			break
		}
		line = i + 1
	}
	start := s.lines[line-1]
	if off > len(s.text) {
		off = len(s.text)
	}
	return Pos{line, utf8.RuneCount(s.text[start:off]) + 1}
}

func (s *Source) jsonSyntax() *Violation {
	var v any
	err := json.Unmarshal(s.text, &v)
	if err == nil {
		return nil
	}
	var off int64
	msg := err.Error()
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
		if off > 0 {
			off-- // Offset is just past the offending byte.
		}
	default:
		off = int64(len(s.text))
	}
	return &Violation{Pos: s.posOfOffset(int(off)), Rule: RuleSyntax, Message: "invalid JSON: " + strings.TrimPrefix(msg, "invalid character ")}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlSyntax(err error) Violation {
	var le *yaml.LoadError
	if errors.As(err, &le) && le.Mark.Line > 0 {
		msg := le.Message
		if le.ContextMsg != "" {
			msg = le.ContextMsg + ": " + msg
		}
		return Violation{Pos: Pos{le.Mark.Line, max(le.Mark.Column, 1)}, Rule: RuleSyntax, Message: "invalid YAML: " + msg}
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Violation{Pos: Pos{line, 1}, Rule: RuleSyntax, Message: "invalid YAML: " + m[2]}
	}
	return Violation{Pos: Pos{1, 1}, Rule: RuleSyntax, Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

type builder struct {
	src        *Source
	violations []Violation
	count      int
	tooDeep    bool
}

// maxDepth bounds nesting (and so recursion, even through self-referencing
// aliases).
const maxDepth = 256

func (b *builder) add(ptr string, pos Pos, rule, msg string) {
	b.violations = append(b.violations, Violation{Path: ptr, Pos: pos, Rule: rule, Message: msg})
}

func (b *builder) value(n *yaml.Node, ptr string, depth int) any {
	b.count++
	if b.count > maxNodes {
		return nil
	}
	if depth > maxDepth {
		b.tooDeep = true
		return nil
	}
	pos := Pos{n.Line, n.Column}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil
		}
		return b.value(n.Alias, ptr, depth+1)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		first := map[string]Pos{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			kpos := Pos{k.Line, k.Column}
			if k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				b.add(ptr, kpos, RuleSyntax, "a mapping key must be a plain value, not a mapping or list")
				continue
			}
			if k.Tag == "!!merge" {
				b.add(ptr, kpos, RuleSyntax, "YAML merge keys (<<) are not supported; repeat the fields or use an alias for the whole value")
				continue
			}
			key := restoreSeparators(k.Value)
			child := ptr + "/" + escapePointer(key)
			if p, dup := first[key]; dup {
				b.add(child, kpos, RuleDuplicateKey, fmt.Sprintf("duplicate key %q (first defined at line %d, column %d)", key, p.Line, p.Column))
				continue
			}
			first[key] = kpos
			m[key] = b.value(v, child, depth+1)
		}
		return m
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			l[i] = b.value(c, ptr+"/"+strconv.Itoa(i), depth+1)
		}
		return l
	case yaml.ScalarNode:
		return b.scalar(n, ptr, pos)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil
		}
		return b.value(n.Content[0], ptr, depth+1)
	}
	return nil
}

func (b *builder) scalar(n *yaml.Node, ptr string, pos Pos) any {
	switch n.Tag {
	case "!!str", "!!timestamp", "!!binary", "":
		return restoreSeparators(n.Value)
	case "!!null":
		return nil
	case "!!bool":
		switch strings.ToLower(n.Value) {
		case "true", "yes", "on", "y":
			return true
		case "false", "no", "off", "n":
			return false
		}
		b.add(ptr, pos, RuleSyntax, "invalid boolean "+strconv.Quote(n.Value))
		return n.Value
	case "!!int":
		v := strings.ReplaceAll(n.Value, "_", "")
		if i, err := strconv.ParseInt(v, 0, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) {
			return f // beyond int64: keep it as a number
		}
		b.add(ptr, pos, RuleSyntax, "integer out of range: "+n.Value)
		return nil
	case "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			b.add(ptr, pos, RuleSyntax, "numbers must be finite: "+n.Value)
			return nil
		}
		return f
	}
	b.add(ptr, pos, RuleSyntax, fmt.Sprintf("unsupported YAML tag %s; quote the value to make it a string", n.Tag))
	// Keep the text so that the tag is the only thing reported.
	return n.Value
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapePointer(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

func parentPointer(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return ""
	}
	return p[:i]
}

// Pointer builds a JSON pointer from path segments.
func Pointer(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		b.WriteString(escapePointer(p))
	}
	return b.String()
}

// YAML 1.2 reads U+0085, U+2028 and U+2029 as ordinary characters, but the
// YAML parser treats them as line breaks (as YAML 1.1 did), rejecting or
// changing text that holds them. They are swapped for private-use
// characters (one character each, so columns stay right) before parsing and
// swapped back in every string. A document that already holds one of the
// stand-ins is left alone.
var separators = [][2]rune{{'\u0085', '\U0010FF85'}, {'\u2028', '\U0010F028'}, {'\u2029', '\U0010F029'}}

func protectSeparators(data []byte) []byte {
	has := false
	for _, sep := range separators {
		if bytes.ContainsRune(data, sep[1]) {
			return data
		}
		has = has || bytes.ContainsRune(data, sep[0])
	}
	if !has {
		return data
	}
	for _, sep := range separators {
		data = bytes.ReplaceAll(data, []byte(string(sep[0])), []byte(string(sep[1])))
	}
	return data
}

func restoreSeparators(s string) string {
	for _, sep := range separators {
		if strings.ContainsRune(s, sep[1]) {
			s = strings.ReplaceAll(s, string(sep[1]), string(sep[0]))
		}
	}
	return s
}

package workflow_test

// Random spellings of one plain value, for the property tests: YAML and JSON
// in random key order, indentation, flow or block style, scalar quoting,
// number notation, string escapes, comments and line endings. Every spelling
// denotes the same data, so every spelling must have the same version.

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/workflow"
)

// formatter makes the formatting choices of one spelling. They come from a
// seeded source rather than from individual draws: the choices matter for
// finding a bug, but shrinking them one by one would not make a failure any
// easier to read.
type formatter struct {
	rng *rand.Rand
	// plain avoids the YAML layouts the encoder gets wrong: block scalars,
	// comments and line breaks in quoted scalars.
	plain bool
}

func newFormatter(t *rapid.T, label string) *formatter {
	seed := rapid.Uint64().Draw(t, label+"_seed")
	return &formatter{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func (f *formatter) oneIn(n int) bool { return f.rng.IntN(n) == 0 }

func pickOf[E any](f *formatter, options ...E) E { return options[f.rng.IntN(len(options))] }

// keys returns the keys of m in a random order.
func (f *formatter) keys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // map order is random but not seeded
	f.rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// yamlSpelling writes v as a YAML document.
func yamlSpelling(t *rapid.T, v any) []byte {
	f := newFormatter(t, "yaml")
	want, err := workflow.Canonical(v)
	if err != nil {
		t.Fatalf("Canonical: %v", err)
	}
	out := f.yaml(t, v)
	// The encoder has bugs of its own (a folded scalar with an indentation
	// indicator after a head comment; a multi-line quoted scalar in a flow
	// collection that is not indented): check the spelling with the
	// encoder's parser and with the one workflow.Parse uses, and fall back to
	// plainer formatting when either reads something else.
	if !readsAs(out, want) {
		f.plain = true
		out = f.yaml(t, v)
		if !readsAs(out, want) {
			t.Fatalf("test serializer: the YAML spelling does not read back\n%s", out)
		}
	}
	return out
}

func readsAs(doc, want []byte) bool {
	var v3, v4 any
	return yaml.Unmarshal(doc, &v3) == nil && sameCanonical(v3, want) &&
		yaml.Unmarshal(doc, &v4) == nil && sameCanonical(v4, want)
}

func sameCanonical(v any, want []byte) bool {
	got, err := workflow.Canonical(v)
	return err == nil && bytes.Equal(got, want)
}

func (f *formatter) yaml(t *rapid.T, v any) []byte {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2 + f.rng.IntN(6))
	if err := enc.Encode(f.yamlNodeAt(v, false, true)); err != nil {
		t.Fatalf("test serializer: yaml encoder: %v", err)
	}
	if err := enc.Close(); err != nil {
		t.Fatalf("test serializer: yaml encoder: %v", err)
	}
	out := buf.Bytes()
	if f.oneIn(4) {
		out = append([]byte("---\n"), out...)
	}
	if f.oneIn(4) {
		out = append([]byte("# a workflow\n"), out...)
	}
	if f.oneIn(4) {
		out = append(out, "# end\n"...)
	}
	if f.oneIn(4) {
		out = bytes.ReplaceAll(out, []byte("\n"), []byte("\r\n"))
	}
	return out
}

func (f *formatter) yamlNode(v any, flow bool) *yaml.Node {
	return f.yamlNodeAt(v, flow, false)
}

// yamlNodeAt builds the node of v; root is true for the document's value.
func (f *formatter) yamlNodeAt(v any, flow, root bool) *yaml.Node {
	switch x := v.(type) {
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		// A document that starts with { is read as JSON (see
		// TestYAMLFlowMappingDocumentIsAccepted), so the root stays block.
		if flow || (!root && f.oneIn(5)) {
			n.Style, flow = yaml.FlowStyle, true
		}
		for _, k := range f.keys(x) {
			kn := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k,
				Style: pickOf(f, yaml.Style(0), 0, yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle)}
			if strings.ContainsFunc(k, yamlBreak) || f.plain && strings.Contains(k, "\n") {
				kn.Style = yaml.DoubleQuotedStyle
			}
			if !flow && !f.plain && f.oneIn(10) {
				kn.HeadComment = "# " + pickOf(f, "note", "key: value", "${{ not.an.expression }}")
			}
			n.Content = append(n.Content, kn, f.yamlNode(x[k], flow))
		}
		return n
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if flow || f.oneIn(4) {
			n.Style, flow = yaml.FlowStyle, true
		}
		for _, e := range x {
			n.Content = append(n.Content, f.yamlNode(e, flow))
		}
		return n
	case string:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
		n.Style = pickOf(f, yaml.Style(0), 0, 0, yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle, yaml.LiteralStyle, yaml.FoldedStyle, yaml.TaggedStyle)
		if f.plain && (n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle || strings.Contains(x, "\n")) || strings.ContainsFunc(x, yamlBreak) {
			n.Style = yaml.DoubleQuotedStyle
		}
		if !flow && !f.plain && n.Style != yaml.LiteralStyle && n.Style != yaml.FoldedStyle && f.oneIn(10) {
			n.LineComment = "# trailing comment"
		}
		return n
	case int64:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(x, 10)}
		if x >= 0 {
			n.Value = pickOf(f, n.Value, n.Value, "+"+n.Value, fmt.Sprintf("0x%x", x), fmt.Sprintf("0o%o", x))
		}
		return n
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, pickOf(f, byte('g'), 'e', 'E'), -1, 64)}
	case bool:
		s := strconv.FormatBool(x)
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: pickOf(f, s, strings.ToUpper(s[:1])+s[1:], strings.ToUpper(s))}
	case nil:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: pickOf(f, "null", "~", "Null", "")}
		if flow && n.Value == "" {
			n.Value = "null" // the encoder quotes an empty plain scalar in flow style
		}
		return n
	}
	panic(fmt.Sprintf("test serializer: unexpected %T", v))
}

// jsonSpelling writes v as a JSON document.
func jsonSpelling(t *rapid.T, v any) []byte {
	return newFormatter(t, "json").json(v)
}

func (f *formatter) json(v any) []byte {
	w := &jsonWriter{f: f,
		indent:  pickOf(f, "", "", " ", "  ", "    ", "\t"),
		newline: pickOf(f, "\n", "\r\n"),
		colon:   pickOf(f, ":", ": ", " : "),
	}
	w.b.WriteString(pickOf(f, "", " ", "\n", "\t"))
	w.value(v, 0)
	w.b.WriteString(pickOf(f, "", "\n", " \n\n"))
	return w.b.Bytes()
}

type jsonWriter struct {
	f                      *formatter
	b                      bytes.Buffer
	indent, newline, colon string
}

func (w *jsonWriter) line(level int) {
	if w.indent == "" {
		return
	}
	w.b.WriteString(w.newline)
	w.b.WriteString(strings.Repeat(w.indent, level))
}

func (w *jsonWriter) value(v any, level int) {
	switch x := v.(type) {
	case map[string]any:
		w.b.WriteByte('{')
		for i, k := range w.f.keys(x) {
			if i > 0 {
				w.b.WriteByte(',')
			}
			w.line(level + 1)
			w.string(k)
			w.b.WriteString(w.colon)
			w.value(x[k], level+1)
		}
		if len(x) > 0 {
			w.line(level)
		}
		w.b.WriteByte('}')
	case []any:
		w.b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				w.b.WriteString(pickOf(w.f, ",", ", "))
			}
			w.line(level + 1)
			w.value(e, level+1)
		}
		if len(x) > 0 {
			w.line(level)
		}
		w.b.WriteByte(']')
	case string:
		w.string(x)
	case int64:
		s := strconv.FormatInt(x, 10)
		if x > -1<<53 && x < 1<<53 && w.f.oneIn(5) {
			// The same number written as a float.
			s = pickOf(w.f, s+".0", s+"e0", s+".000E+0")
		}
		w.b.WriteString(s)
	case float64:
		format := pickOf(w.f, byte('g'), 'e', 'E')
		if a := math.Abs(x); a == 0 || (a > 1e-6 && a < 1e20) {
			format = pickOf(w.f, format, 'f')
		}
		w.b.WriteString(strconv.FormatFloat(x, format, -1, 64))
	case bool:
		w.b.WriteString(strconv.FormatBool(x))
	case nil:
		w.b.WriteString("null")
	default:
		panic(fmt.Sprintf("test serializer: unexpected %T", v))
	}
}

// yamlBreak reports whether r is a line break to the YAML parser that
// workflow.Parse uses, though not to YAML 1.2 (nor to the encoder, which
// writes it raw unless the scalar is double-quoted; then it escapes it).
// See TestYAMLKeepsUnicodeLineSeparators.
func yamlBreak(r rune) bool { return r == 0x85 || r == 0x2028 || r == 0x2029 }

func (w *jsonWriter) string(s string) {
	b, f := &w.b, w.f
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n' && f.oneIn(2):
			b.WriteString(`\n`)
		case r == '\t' && f.oneIn(2):
			b.WriteString(`\t`)
		case r == '\r' && f.oneIn(2):
			b.WriteString(`\r`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case r == '/' && f.oneIn(2):
			b.WriteString(`\/`)
		case r > 0xffff && f.oneIn(2):
			r1, r2 := utf16Surrogates(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		case r > 0x7f && r <= 0xffff && f.oneIn(3):
			fmt.Fprintf(b, `\u%04x`, r)
		case r < 0x7f && f.oneIn(20):
			fmt.Fprintf(b, `\u%04X`, r)
		default:
			var buf [utf8.UTFMax]byte
			b.Write(buf[:utf8.EncodeRune(buf[:], r)])
		}
	}
	b.WriteByte('"')
}

func utf16Surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}

// Package generate writes question flows: a workflow whose `ask` steps
// come from a JSON Schema object (one question per property, with its
// type, choices, pattern, bounds, default and secrecy), optionally
// followed by the `uses` step that calls an action with the answers.
//
// Property order follows the schema document as written; nested objects
// become questions named parent_child whose answers are assembled back
// into objects. What a question cannot express (free lists, unions) is
// asked as text and said so in the question's help.
package generate

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// Options name the generated workflow.
type Options struct {
	// Name is the workflow's name (a library name).
	Name string
	// Title and Description describe it.
	Title, Description string
	// Action, when set, adds a final step `uses: Action` whose `with` is the
	// assembled answers; the workflow's output is the action's output.
	Action string
}

// FromSchema generates the workflow for a JSON Schema object (JSON or
// YAML text).
func FromSchema(schema []byte, o Options) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(schema, &doc); err != nil {
		return nil, fmt.Errorf("the schema is not JSON or YAML: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("the schema is empty")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the schema is not an object")
	}
	if t := scalar(root, "type"); t != "" && t != "object" {
		return nil, fmt.Errorf("the schema's type is %q: a question flow needs an object schema", t)
	}
	props := child(root, "properties")
	if props == nil || len(props.Content) == 0 {
		return nil, fmt.Errorf("the schema has no properties to ask for")
	}
	if o.Name == "" {
		o.Name = "form"
	}
	if o.Title == "" {
		o.Title = scalar(root, "title")
	}
	if o.Description == "" {
		o.Description = scalar(root, "description")
	}
	g := &gen{ids: map[string]bool{}}
	value := g.object("", root)
	if g.err != nil {
		return nil, g.err
	}
	return g.render(o, value)
}

// question is one ask step.
type question struct {
	id  string
	ask *orderedMap
	// split turns a comma-separated text answer into a list.
	split bool
}

type gen struct {
	questions []question
	ids       map[string]bool
	err       error
}

// object adds the questions of an object schema's properties and returns
// the value that assembles their answers.
func (g *gen) object(prefix string, n *yaml.Node) *orderedMap {
	props := child(n, "properties")
	required := map[string]bool{}
	if r := child(n, "required"); r != nil {
		for _, c := range r.Content {
			required[c.Value] = true
		}
	}
	out := &orderedMap{}
	if props == nil {
		return out
	}
	for i := 0; i+1 < len(props.Content); i += 2 {
		name, p := props.Content[i].Value, props.Content[i+1]
		if p.Kind != yaml.MappingNode {
			continue
		}
		if scalar(p, "readOnly") == "true" {
			continue // the server sets it; nobody is asked
		}
		id := g.id(prefix, name)
		if scalar(p, "type") == "object" && child(p, "properties") != nil {
			out.set(name, g.object(id, p))
			continue
		}
		q := g.question(id, name, p, required[name])
		g.questions = append(g.questions, q)
		ref := "${{ steps." + id + ".answer }}"
		if q.split {
			ref = "${{ map(split(steps." + id + ".answer, \",\"), trim(#)) }}"
		}
		out.set(name, ref)
	}
	return out
}

var nonID = regexp.MustCompile(`[^a-z0-9_]+`)

// id makes a unique step id from a property path.
func (g *gen) id(prefix, name string) string {
	base := strings.Trim(nonID.ReplaceAllString(strings.ToLower(name), "_"), "_")
	if base == "" || base[0] >= '0' && base[0] <= '9' {
		base = "q_" + base
	}
	if prefix != "" {
		base = prefix + "_" + base
	}
	id := base
	for i := 2; g.ids[id]; i++ {
		id = base + "_" + strconv.Itoa(i)
	}
	g.ids[id] = true
	return id
}

// question maps one property schema to an ask.
func (g *gen) question(id, name string, p *yaml.Node, required bool) question {
	a := &orderedMap{}
	prompt := scalar(p, "title")
	if prompt == "" {
		prompt = humanize(name)
	}
	if !strings.HasSuffix(prompt, "?") {
		prompt += "?"
	}
	a.set("prompt", prompt)
	var help []string
	if d := scalar(p, "description"); d != "" {
		help = append(help, d)
	}
	typ := scalar(p, "type")
	enum := child(p, "enum")
	q := question{id: id, ask: a}
	switch {
	case enum != nil:
		a.set("type", "choice")
		a.set("choices", values(enum))
	case typ == "array" && child(child(p, "items"), "enum") != nil:
		a.set("type", "multi-choice")
		a.set("choices", values(child(child(p, "items"), "enum")))
		bounds(a, p, "minItems", "maxItems", false)
	case typ == "integer":
		a.set("type", "integer")
		bounds(a, p, "minimum", "maximum", true)
	case typ == "number":
		a.set("type", "number")
		bounds(a, p, "minimum", "maximum", false)
	case typ == "boolean":
		a.set("type", "boolean")
	case typ == "array":
		q.split = true
		help = append(help, "Several values, separated by commas.")
	default: // string, and what a question cannot express
		if typ != "" && typ != "string" {
			help = append(help, fmt.Sprintf("(a %s, written as text)", typ))
		}
		if pat := scalar(p, "pattern"); pat != "" {
			a.set("pattern", pat)
		}
		bounds(a, p, "minLength", "maxLength", false)
	}
	if scalar(p, "writeOnly") == "true" || scalar(p, "format") == "password" {
		a.set("secret", true)
	}
	if d := child(p, "default"); d != nil {
		var v any
		if err := d.Decode(&v); err == nil {
			if q.split {
				if list, ok := v.([]any); ok {
					parts := make([]string, len(list))
					for i, x := range list {
						parts[i] = fmt.Sprint(x)
					}
					v = strings.Join(parts, ", ")
				}
			}
			a.set("default", v)
		}
	} else if !required && (typ == "string" || typ == "") && enum == nil && !q.split && scalar(p, "minLength") == "" {
		// An optional text may stay empty: an empty default, and a pattern
		// that accepts the empty answer too.
		a.set("default", "")
		if pat, ok := a.vals["pattern"].(string); ok {
			a.set("pattern", "^$|(?:"+pat+")")
		}
		help = append(help, "Optional.")
	}
	if len(help) > 0 {
		a.set("help", strings.Join(help, " "))
	}
	return q
}

// bounds copies a numeric pair of keywords to min/max.
func bounds(a *orderedMap, p *yaml.Node, lo, hi string, integer bool) {
	for _, k := range []struct{ from, to string }{{lo, "min"}, {hi, "max"}} {
		if s := scalar(p, k.from); s != "" {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				a.set(k.to, f)
			}
		}
	}
	// exclusive bounds of integers become inclusive ones.
	if integer {
		if s := scalar(p, "exclusiveMinimum"); s != "" {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				a.set("min", f+1)
			}
		}
		if s := scalar(p, "exclusiveMaximum"); s != "" {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				a.set("max", f-1)
			}
		}
	}
}

func values(enum *yaml.Node) []any {
	var out []any
	for _, c := range enum.Content {
		var v any
		if err := c.Decode(&v); err == nil {
			out = append(out, v)
		}
	}
	return out
}

func humanize(name string) string {
	s := strings.NewReplacer("_", " ", "-", " ", ".", " ").Replace(name)
	// camelCase → camel case
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	s = strings.ToLower(strings.Join(strings.Fields(b.String()), " "))
	if s == "" {
		return name
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func child(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node, key string) string {
	c := child(n, key)
	if c == nil || c.Kind != yaml.ScalarNode {
		return ""
	}
	return c.Value
}

// render writes the workflow as YAML.
func (g *gen) render(o Options, value *orderedMap) ([]byte, error) {
	wf := &orderedMap{}
	wf.set("version", 1)
	wf.set("name", o.Name)
	if o.Title != "" {
		wf.set("title", o.Title)
	}
	if o.Description != "" {
		wf.set("description", o.Description)
	}
	var steps []any
	for _, q := range g.questions {
		st := &orderedMap{}
		st.set("id", q.id)
		st.set("ask", q.ask)
		steps = append(steps, st)
	}
	last := &orderedMap{}
	outputs := &orderedMap{}
	if o.Action != "" {
		last.set("id", "call")
		last.set("uses", o.Action)
		last.set("with", value)
		outputs.set("result", "${{ steps.call.output }}")
	} else {
		last.set("id", "answers")
		last.set("uses", "transform")
		last.set("with", map[string]any{"value": value})
		outputs.set("value", "${{ steps.answers.output }}")
	}
	steps = append(steps, last)
	wf.set("steps", steps)
	wf.set("outputs", outputs)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(wf.node()); err != nil {
		return nil, err
	}
	_ = enc.Close()
	return b.Bytes(), nil
}

// orderedMap keeps keys in insertion order for the YAML output.
type orderedMap struct {
	keys []string
	vals map[string]any
}

func (m *orderedMap) set(k string, v any) {
	if m.vals == nil {
		m.vals = map[string]any{}
	}
	if _, ok := m.vals[k]; !ok {
		m.keys = append(m.keys, k)
	}
	m.vals[k] = v
}

func (m *orderedMap) node() *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range m.keys {
		n.Content = append(n.Content, stringNode(k), toNode(m.vals[k]))
	}
	return n
}

func toNode(v any) *yaml.Node {
	switch x := v.(type) {
	case *orderedMap:
		return x.node()
	case map[string]any:
		m := &orderedMap{}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			m.set(k, x[k])
		}
		return m.node()
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range x {
			n.Content = append(n.Content, toNode(e))
		}
		return n
	}
	if s, ok := v.(string); ok && strings.ContainsAny(s, lineSeparators) {
		return stringNode(s)
	}
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(v)}
	}
	return &n
}

// lineSeparators are the characters the YAML encoder breaks a quoted line
// at (YAML 1.1's line breaks), indenting what follows; a YAML 1.2 reader,
// as stepwise's is, keeps them as characters and the indentation as text.
// Double-quoted, they are written as escapes (\N, \L, \P) instead.
const lineSeparators = "\u0085\u2028\u2029"

// stringNode is a string scalar, double-quoted when it holds a line
// separator.
func stringNode(s string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.ScalarNode, Value: s}
	if strings.ContainsAny(s, lineSeparators) {
		n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
	}
	return n
}

package workflow

//go:generate sh -c "go run ../../cmd/stepwise schema > ../../docs/workflow.schema.json"

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"stepwise.dev/stepwise/internal/schema"
)

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema of the workflow language (draft 2020-12).
// It is the one source of the language's structure.
func Schema() []byte {
	out := make([]byte, len(schemaJSON))
	copy(out, schemaJSON)
	return out
}

var (
	schemaOnce sync.Once
	compiled   *schema.Schema
	schemaDoc  map[string]any
)

// loadSchema compiles the language schema when a workflow is first
// checked, not when the program starts.
func loadSchema() {
	schemaOnce.Do(func() {
		if err := json.Unmarshal(schemaJSON, &schemaDoc); err != nil {
			panic(fmt.Sprintf("workflow schema is not JSON: %v", err))
		}
		compiled = schema.MustCompile(schemaDoc)
	})
}

// schemaCheck validates a document against the language schema.
func schemaCheck(src *Source) []Violation {
	loadSchema()
	err := compiled.Validate(src.Value)
	if err == nil {
		return nil
	}
	var ve *schema.Error
	if !errors.As(err, &ve) {
		return []Violation{{Pos: Pos{1, 1}, Rule: RuleSyntax, Message: err.Error()}}
	}
	t := translator{src: src}
	t.walk(ve)
	return t.out
}

type translator struct {
	src *Source
	out []Violation
}

func (t *translator) walk(e *schema.Error) {
	ptr := Pointer(e.InstanceLocation...)
	switch e.Keyword {
	case "":
		for _, c := range e.Causes {
			t.walk(c)
		}
	case "oneOf", "anyOf":
		if strings.HasSuffix(e.SchemaLocation, "/$defs/step") {
			// "Exactly one kind" is reported by the semantic check, which
			// can name the kinds it found.
			return
		}
		if e.Keyword == "oneOf" && e.Matches > 1 {
			t.add(ptr, t.src.ValuePos(ptr), RuleType, "the value matches more than one allowed form", "", "")
			return
		}
		t.union(e, ptr)
	case "propertyNames":
		// The checker validates input and output names itself, with
		// better messages.
		return
	case "additionalProperties", "unevaluatedProperties":
		allowed := t.allowed(e.SchemaLocation)
		for _, p := range e.Names {
			t.unknown(ptr+"/"+escapePointer(p), p, allowed, e.SchemaLocation)
		}
	case "false":
		name := ""
		if n := len(e.InstanceLocation); n > 0 {
			name = e.InstanceLocation[n-1]
		}
		t.unknown(ptr, name, nil, e.SchemaLocation)
	case "required":
		for _, m := range e.Names {
			t.add(ptr, t.src.ValuePos(ptr), RuleRequired, fmt.Sprintf("missing required field %q in %s", m, t.where(e.SchemaLocation, ptr)), "", "")
		}
	case "type":
		t.add(ptr, t.src.ValuePos(ptr), RuleType, fmt.Sprintf("%s must be %s, not %s", t.subject(ptr), article(e.Want), e.Got), strings.Join(e.Want, " or "), e.Got)
	case "enum":
		var want []string
		for _, w := range e.Allowed {
			want = append(want, fmt.Sprint(w))
		}
		hint := ""
		if s, ok := e.Value.(string); ok {
			hint = didYouMean(s, want)
		}
		v := Violation{Path: ptr, Pos: t.src.ValuePos(ptr), Rule: RuleEnum,
			Message:  fmt.Sprintf("%s must be one of %s", t.subject(ptr), strings.Join(want, ", ")),
			Expected: strings.Join(want, "|"), Actual: fmt.Sprint(e.Value), Hint: hint}
		t.out = append(t.out, v)
	case "minimum":
		t.add(ptr, t.src.ValuePos(ptr), RuleFormat, fmt.Sprintf("%s must be at least %s", t.subject(ptr), e.Limit), ">= "+e.Limit, fmt.Sprint(e.Value))
	case "maximum":
		t.add(ptr, t.src.ValuePos(ptr), RuleFormat, fmt.Sprintf("%s must be at most %s", t.subject(ptr), e.Limit), "<= "+e.Limit, fmt.Sprint(e.Value))
	case "minItems":
		n, _ := strconv.Atoi(e.Limit)
		t.add(ptr, t.src.ValuePos(ptr), RuleFormat, fmt.Sprintf("%s must have at least %d %s", t.subject(ptr), n, plural(n, "item", "items")), "", "")
	case "minLength":
		t.add(ptr, t.src.ValuePos(ptr), RuleFormat, fmt.Sprintf("%s must not be empty", t.subject(ptr)), "", "")
	case "const":
		t.add(ptr, t.src.ValuePos(ptr), RuleEnum, fmt.Sprintf("%s must be %v", t.subject(ptr), e.Allowed[0]), fmt.Sprint(e.Allowed[0]), fmt.Sprint(e.Value))
	case "pattern":
		rule := RuleFormat
		if ptr == "/name" || strings.HasSuffix(e.SchemaLocation, "/$defs/workflowName") {
			rule = RuleName
		}
		got, _ := e.Value.(string)
		desc, _ := t.node(e.SchemaLocation)["description"].(string)
		msg := fmt.Sprintf("%s %q is not valid", strings.Trim(t.subject(ptr), `"`), got)
		if desc != "" {
			msg += ": use " + desc
		}
		t.add(ptr, t.src.ValuePos(ptr), rule, msg, e.Limit, got)
	default:
		t.add(ptr, t.src.ValuePos(ptr), RuleFormat, fmt.Sprintf("%s: %s", t.subject(ptr), e.Message), "", "")
	}
}

// union reports a failed oneOf/anyOf. When the value's type fits none of the
// branches, one type violation names them all; otherwise the errors of the
// branches whose type did fit are reported.
func (t *translator) union(e *schema.Error, ptr string) {
	var wants []string
	got := ""
	var fitting []*schema.Error
	for _, c := range e.Causes {
		if c.Keyword == "type" && len(c.InstanceLocation) == len(e.InstanceLocation) {
			wants = append(wants, c.Want...)
			got = c.Got
			continue
		}
		fitting = append(fitting, c)
	}
	if len(fitting) == 0 {
		t.add(ptr, t.src.ValuePos(ptr), RuleType, fmt.Sprintf("%s must be %s, not %s", t.subject(ptr), article(wants), got), strings.Join(wants, " or "), got)
		return
	}
	for _, c := range fitting {
		t.walk(c)
	}
}

func (t *translator) unknown(ptr, name string, allowed []string, schemaURL string) {
	t.out = append(t.out, Violation{
		Path:    ptr,
		Pos:     t.src.KeyPos(ptr),
		Rule:    RuleUnknownField,
		Message: fmt.Sprintf("unknown field %q in %s", name, t.where(schemaURL, parentPointer(ptr))),
		Hint:    didYouMean(name, allowed),
	})
}

func (t *translator) add(ptr string, pos Pos, rule, msg, expected, actual string) {
	t.out = append(t.out, Violation{Path: ptr, Pos: pos, Rule: rule, Message: msg, Expected: expected, Actual: actual})
}

// node returns the schema object a JSON pointer (or a "#" reference)
// points at.
func (t *translator) node(url string) map[string]any {
	_, frag, found := strings.Cut(url, "#")
	if !found {
		frag = url
	}
	var cur any = schemaDoc
	for _, part := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if part == "" {
			continue
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}

// allowed lists the property names a schema object (and what it $refs)
// accepts, for "did you mean" hints.
func (t *translator) allowed(url string) []string {
	var names []string
	for n, depth := t.node(url), 0; n != nil && depth < 8; depth++ {
		if props, ok := n["properties"].(map[string]any); ok {
			for k := range props {
				names = append(names, k)
			}
		}
		ref, _ := n["$ref"].(string)
		if ref == "" {
			break
		}
		n = t.node(ref)
	}
	sort.Strings(names)
	return names
}

// where names the object a violation is in, for messages: "step \"x\"",
// "input \"region\"", "the workflow".
func (t *translator) where(schemaURL, ptr string) string {
	def := schemaURL[strings.LastIndex(schemaURL, "/")+1:]
	if ptr == "" {
		return "the workflow"
	}
	if def == "step" || def == "hook" || def == "field" || def == "input" {
		if id := t.idAt(ptr); id != "" {
			return fmt.Sprintf("%s %q", def, id)
		}
		return def
	}
	// Otherwise name the object by the field that holds it: "retry",
	// "compensate", "ask", "sleep".
	last := ptr[strings.LastIndexByte(ptr, '/')+1:]
	if _, err := strconv.Atoi(last); err == nil {
		return def
	}
	return strings.ReplaceAll(strings.ReplaceAll(last, "~1", "/"), "~0", "~")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// idAt returns the id (or name) of the object at ptr.
func (t *translator) idAt(ptr string) string {
	v := lookup(t.src.Value, ptr)
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"id", "name"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
	}
	if strings.HasPrefix(ptr, "/inputs/") {
		return strings.TrimPrefix(ptr, "/inputs/")
	}
	return ""
}

// subject names the value at ptr for a message: `field "timeout"`.
func (t *translator) subject(ptr string) string {
	if ptr == "" {
		return "the workflow"
	}
	last := unescapePointer(ptr[strings.LastIndexByte(ptr, '/')+1:])
	if _, err := strconv.Atoi(last); err == nil {
		parent := parentPointer(ptr)
		return fmt.Sprintf("item %s of %s", last, t.subject(parent))
	}
	return fmt.Sprintf("%q", last)
}

func article(types []string) string {
	out := make([]string, len(types))
	for i, ty := range types {
		switch ty {
		case "object", "array", "integer":
			out[i] = "an " + ty
		case "null":
			out[i] = "null"
		default:
			out[i] = "a " + ty
		}
	}
	return strings.Join(out, " or ")
}

// lookup returns the value at a JSON pointer, or nil.
func lookup(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, part := range strings.Split(ptr[1:], "/") {
		part = unescapePointer(part)
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

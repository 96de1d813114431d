package workflow_test

// Helpers of the property tests: finding and editing the parts of a
// workflow held as plain data, by JSON pointer, and reading positions back
// from a document.

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"pgregory.net/rapid"

	"stepwise.dev/stepwise/internal/workflow"
)

func splitPointer(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(ptr[1:], "/")
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts
}

func valueAt(v any, ptr string) any {
	for _, p := range splitPointer(ptr) {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, _ := strconv.Atoi(p)
			v = x[i]
		}
	}
	return v
}

// without returns a copy of doc without the member at ptr.
func without(doc map[string]any, ptr string) map[string]any {
	out := deepCopy(doc).(map[string]any)
	parts := splitPointer(ptr)
	parent := valueAt(out, parentOf(ptr)).(map[string]any)
	delete(parent, parts[len(parts)-1])
	return out
}

func parentOf(ptr string) string { return ptr[:strings.LastIndexByte(ptr, '/')] }

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// atOrAbove reports whether the pointer p is ptr or one of its ancestors.
func atOrAbove(p, ptr string) bool {
	return p == ptr || p == "" || strings.HasPrefix(ptr, p+"/")
}

type stepAt struct {
	path string
	step map[string]any
}

// allSteps lists every step of doc, nested ones included, in document order.
func allSteps(doc map[string]any) []stepAt {
	var out []stepAt
	var walk func(list any, base string)
	walk = func(list any, base string) {
		l, _ := list.([]any)
		for i, e := range l {
			s := e.(map[string]any)
			p := base + "/" + strconv.Itoa(i)
			out = append(out, stepAt{p, s})
			walk(s["parallel"], p+"/parallel")
			walk(s["steps"], p+"/steps")
		}
	}
	walk(doc["steps"], "/steps")
	return out
}

func allHooks(doc map[string]any) []stepAt {
	var out []stepAt
	for _, key := range []string{"on_success", "on_failure"} {
		l, _ := doc[key].([]any)
		for i, h := range l {
			out = append(out, stepAt{"/" + key + "/" + strconv.Itoa(i), h.(map[string]any)})
		}
	}
	return out
}

var stepKinds = []string{"uses", "ask", "agent", "workflow", "sleep", "fail", "switch", "parallel", "foreach"}

// requiredFields lists the pointers of the fields doc cannot do without:
// required by the schema, or the one field that gives a step its kind.
func requiredFields(doc map[string]any) []string {
	out := []string{"/version", "/name", "/steps"}
	inputs, _ := doc["inputs"].(map[string]any)
	for name := range inputs {
		out = append(out, workflow.Pointer("inputs", name, "type"))
	}
	retry := func(p string, m map[string]any) {
		if _, ok := m["retry"]; ok {
			out = append(out, p+"/retry/attempts")
		}
	}
	action := func(p string, m map[string]any) {
		out = append(out, p+"/uses")
		retry(p, m)
	}
	for _, st := range allSteps(doc) {
		p, s := st.path, st.step
		out = append(out, p+"/id")
		for _, k := range stepKinds {
			if _, ok := s[k]; ok {
				out = append(out, p+"/"+k)
			}
		}
		if _, ok := s["foreach"]; ok {
			out = append(out, p+"/steps")
		}
		if _, ok := s["agent"]; ok {
			out = append(out, p+"/agent/instructions")
		}
		if a, ok := s["ask"].(map[string]any); ok {
			if fields, ok := a["fields"].([]any); ok {
				for i := range fields {
					out = append(out, fmt.Sprintf("%s/ask/fields/%d/name", p, i))
				}
			} else {
				out = append(out, p+"/ask/prompt")
				if _, ok := a["choices"]; ok && (a["type"] == "choice" || a["type"] == "multi-choice") {
					out = append(out, p+"/ask/choices")
				}
			}
		}
		if sl, ok := s["sleep"].(map[string]any); ok {
			for k := range sl {
				out = append(out, p+"/sleep/"+k) // the only member
			}
		}
		if cases, ok := s["switch"].([]any); ok {
			for i := range cases {
				out = append(out, fmt.Sprintf("%s/switch/%d/goto", p, i))
			}
		}
		retry(p, s)
		if _, ok := s["repeat"]; ok {
			out = append(out, p+"/repeat/until")
		}
		if c, ok := s["compensate"].(map[string]any); ok {
			action(p+"/compensate", c)
		}
	}
	for _, h := range allHooks(doc) {
		action(h.path, h.step)
		if c, ok := h.step["compensate"].(map[string]any); ok {
			action(h.path+"/compensate", c)
		}
	}
	sort.Strings(out)
	return out
}

// undeclaredRefs are expressions that reference inputs.%s.
var undeclaredRefs = []string{
	"inputs.%s", `inputs["%s"]`, "inputs?.%s", "len(inputs.%s) > 0", "let v = inputs.%s; v", `inputs.%s ?? "x"`,
	"[inputs.%s][0]", `{"k": inputs.%s}`, "filter([1], # == inputs.%s)", "upper(inputs.%s.sub)", "inputs.%s[0]",
	`inputs.%s.a["b"]`, "!inputs.%s", "inputs.%s ? 1 : 2", "steps != nil && inputs.%s",
}

// insertUndeclaredInput puts a reference to an input that doc does not
// declare somewhere an expression may stand, and returns the pointer of the
// value it changed.
func insertUndeclaredInput(t *rapid.T, doc map[string]any) (name, ptr string) {
	inputs, _ := doc["inputs"].(map[string]any)
	name = identifier.Filter(func(s string) bool { _, ok := inputs[s]; return !ok }).Draw(t, "undeclared")
	e := fmt.Sprintf(rapid.SampledFrom(undeclaredRefs).Draw(t, "ref_form"), name)
	tmpl := rapid.SampledFrom([]string{"${{ %s }}", "${{%s}}", "id-${{ %s }}-x", "${{ 1 }} and ${{ %s }}", "é ${{ %s }}"}).Draw(t, "template_form")
	if !strings.Contains(tmpl, "%s") {
		tmpl += "%s"
	}
	template := fmt.Sprintf(tmpl, e)
	cond := rapid.SampledFrom([]string{e, "${{ " + e + " }}", " ${{" + e + "}}"}).Draw(t, "cond_form")

	type slot struct {
		ptr   string
		value any
	}
	var slots []slot
	add := func(ptr string, v any) { slots = append(slots, slot{ptr, v}) }
	add("/outputs/"+name, template)
	for _, st := range allSteps(doc) {
		p, s := st.path, st.step
		add(p+"/if", cond)
		add(p+"/timeout", "${{ "+e+" }}s")
		if _, ok := s["uses"]; ok {
			add(p+"/with", map[string]any{"x": map[string]any{"y": []any{int64(1), template}}})
			add(p+"/repeat", map[string]any{"until": cond})
			add(p+"/retry", map[string]any{"attempts": int64(2), "backoff": template})
			add(p+"/compensate", map[string]any{"uses": "http", "with": map[string]any{"x": template}})
		}
		if _, ok := s["workflow"]; ok {
			add(p+"/with", map[string]any{"x": template})
		}
		if a, ok := s["ask"].(map[string]any); ok {
			if fields, ok := a["fields"].([]any); ok {
				add(p+"/ask/prompt", template)
				add(p+"/ask/help", template)
				for i := range fields {
					add(fmt.Sprintf("%s/ask/fields/%d/prompt", p, i), template)
					add(fmt.Sprintf("%s/ask/fields/%d/auto", p, i), cond)
				}
			} else {
				add(p+"/ask/prompt", template)
				add(p+"/ask/help", template)
				add(p+"/ask/auto", cond)
				add(p+"/ask/default", template)
			}
		}
		if _, ok := s["agent"]; ok {
			add(p+"/agent/instructions", template)
			add(p+"/agent/persona", template)
			add(p+"/agent/context", []any{map[string]any{"x": template}})
		}
		if _, ok := s["fail"]; ok {
			add(p+"/fail", template)
		}
		if _, ok := s["sleep"]; ok {
			add(p+"/sleep", template)
			add(p+"/sleep", map[string]any{"until": template})
		}
		if _, ok := s["foreach"]; ok {
			add(p+"/foreach", "${{ "+e+" }}")
		}
		if cases, ok := s["switch"].([]any); ok {
			for i := range cases {
				add(fmt.Sprintf("%s/switch/%d/if", p, i), cond)
			}
		}
	}
	for _, h := range allHooks(doc) {
		add(h.path+"/if", cond)
		add(h.path+"/with", map[string]any{"x": template})
	}
	s := rapid.SampledFrom(slots).Draw(t, "slot")
	parent := valueAt(doc, parentOf(s.ptr))
	if parent == nil { // outputs
		doc["outputs"] = map[string]any{}
		parent = doc["outputs"]
	}
	parent.(map[string]any)[splitPointer(s.ptr)[len(splitPointer(s.ptr))-1]] = s.value
	return name, s.ptr
}

// textAt returns the rest of the line at a 1-based line and column
// (counted in characters).
func textAt(doc []byte, p workflow.Pos) string {
	lines := bytes.Split(doc, []byte("\n"))
	if p.Line < 1 || p.Line > len(lines) {
		return ""
	}
	l := string(bytes.TrimRight(lines[p.Line-1], "\r"))
	for i := 1; i < p.Column; i++ {
		_, size := utf8.DecodeRuneInString(l)
		if size == 0 {
			return ""
		}
		l = l[size:]
	}
	return l
}

// unescapeASCII decodes the \uXXXX and \xXX escapes of ASCII characters
// in a piece of a JSON or YAML double-quoted string, so that an escaped
// spelling of "inputs" reads as "inputs".
func unescapeASCII(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			n := map[byte]int{'u': 4, 'x': 2}[s[i+1]]
			if n > 0 && i+2+n <= len(s) {
				if c, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32); err == nil && c < 0x80 {
					b.WriteByte(byte(c))
					i += 1 + n
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mutate breaks a generated workflow in one of the ways the other
// properties exercise, or leaves it valid.
func mutate(t *rapid.T, wf map[string]any) map[string]any {
	switch rapid.SampledFrom([]string{"none", "remove", "duplicate", "undeclared"}).Draw(t, "mutation") {
	case "remove":
		return without(wf, rapid.SampledFrom(requiredFields(wf)).Draw(t, "removed"))
	case "duplicate":
		steps := allSteps(wf)
		a := rapid.SampledFrom(steps).Draw(t, "original")
		b := rapid.SampledFrom(steps).Draw(t, "duplicate")
		b.step["id"] = a.step["id"]
	case "undeclared":
		insertUndeclaredInput(t, wf)
	}
	return wf
}

var positionInMessage = regexp.MustCompile(`line \d+, column \d+`)

// violationSet lists what a check found, leaving out where in the file:
// positions, and the positions messages quote.
func violationSet(vs []workflow.Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Path + " " + v.Rule + " " + positionInMessage.ReplaceAllString(v.Message, "line L, column C")
	}
	sort.Strings(out)
	return out
}

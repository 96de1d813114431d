package workflow_test

// A generator of valid workflows for the property tests in property_test.go.
//
// A workflow is drawn as plain data (map[string]any, []any, string, int64,
// float64, bool, nil: the JSON data model that workflow.Parse produces), so
// that the properties can serialize it freely and edit it before checking.
// Every reference the generator writes points at something in scope: declared
// inputs and env names, steps that complete earlier, item/index inside a
// foreach body, the step itself in repeat.until and compensate.

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// wfGen holds what has been declared so far while one workflow is drawn.
type wfGen struct {
	t      *rapid.T
	inputs []inputDecl
	env    []string
	used   map[string]bool // step and hook ids (one namespace)
	seq    int
}

type inputDecl struct{ name, typ string }

// visible is a step that expressions may reference.
type visible struct {
	id     string
	ask    bool     // a question: referenced as .answer
	fields []string // the field names of a form
}

// genScope is what an expression at some point of the workflow may see.
type genScope struct {
	steps   []visible
	foreach bool
}

func (s genScope) plus(v ...visible) genScope {
	out := genScope{foreach: s.foreach, steps: make([]visible, 0, len(s.steps)+len(v))}
	out.steps = append(append(out.steps, s.steps...), v...)
	return out
}

// genWorkflow draws one valid workflow.
func genWorkflow(t *rapid.T) map[string]any {
	g := &wfGen{t: t, used: map[string]bool{}}
	wf := map[string]any{
		"version": int64(1),
		"name":    rapid.StringMatching(`[a-z0-9][a-z0-9_-]{0,20}`).Draw(t, "name"),
	}
	if g.chance("has_title", 3) {
		wf["title"] = g.text("title")
	}
	if g.chance("has_description", 3) {
		wf["description"] = g.text("description")
	}
	if g.chance("has_tags", 4) {
		tags := rapid.SliceOfN(rapid.StringMatching(`[a-z]{1,8}`), 1, 3).Draw(t, "tags")
		wf["tags"] = toAny(tags)
	}
	if g.chance("has_env", 3) {
		g.env = rapid.SliceOfNDistinct(rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,10}`), 1, 3, rapid.ID[string]).Draw(t, "env")
		wf["env"] = toAny(g.env)
	}
	if n := rapid.IntRange(0, 5).Draw(t, "inputs"); n > 0 {
		inputs := map[string]any{}
		names := rapid.SliceOfNDistinct(identifier, n, n, rapid.ID[string]).Draw(t, "input_names")
		for _, name := range names {
			inputs[name] = g.input(name)
		}
		wf["inputs"] = inputs
	}
	steps, top := g.stepList(genScope{}, 0, rapid.IntRange(1, 6).Draw(t, "steps"))
	wf["steps"] = steps
	if n := rapid.IntRange(0, 3).Draw(t, "outputs"); n > 0 {
		outputs := map[string]any{}
		for _, name := range rapid.SliceOfNDistinct(identifier, n, n, rapid.ID[string]).Draw(t, "output_names") {
			outputs[name] = g.value(top, 1)
		}
		wf["outputs"] = outputs
	}
	for _, key := range []string{"on_success", "on_failure"} {
		if n := rapid.IntRange(0, 2).Draw(t, key); n > 0 {
			hooks := make([]any, n)
			for i := range hooks {
				hooks[i] = g.hook(top)
			}
			wf[key] = hooks
		}
	}
	return wf
}

var identifier = rapid.StringMatching(`[A-Za-z_][A-Za-z0-9_]{0,11}`)

func (g *wfGen) chance(label string, oneIn int) bool {
	return rapid.IntRange(1, oneIn).Draw(g.t, label) == 1
}

func (g *wfGen) pick(label string, options ...string) string {
	return rapid.SampledFrom(options).Draw(g.t, label)
}

// freshID draws an id no step or hook has yet.
func (g *wfGen) freshID(label string) string {
	id := identifier.Draw(g.t, label)
	for g.used[id] {
		g.seq++
		id = fmt.Sprintf("%s_%d", id, g.seq)
	}
	g.used[id] = true
	return id
}

// textTokens are the pieces literal text is made of: words, unicode, and
// the characters that make YAML quoting and JSON escaping interesting. None
// ends with '$', so text never forms ${{ (or the escape $${{) by accident.
var textTokens = []string{
	"hello", "Server", " ", "  ", "é", "日本", "😀", "\u00a0", "\u2028", ":", ": ", "#", " #x", "- ", "-",
	"{", "}", "}}", "[", "]", ",", "'", "\"", "\\", "\n", "\t", "\r\n", "\x00", "$5", "$HOME", "%", "&a", "*b",
	"!x", "?", "|", ">", "@", "`", "yes", "no", "true", "null", "~", "0x10", "1e3", "123", "-7", "2026-01-02",
	"a/b", "~0", "~1",
}

// text draws literal text (possibly empty) with no ${{ in it.
func (g *wfGen) text(label string) string {
	parts := rapid.SliceOfN(rapid.SampledFrom(textTokens), 0, 5).Draw(g.t, label)
	return strings.Join(parts, "")
}

// expr draws an expression (without delimiters) that only references what
// sc can see. Expressions are type-checked without knowing the data, so
// operations on constants must make sense: compound forms combine only
// operands of unknown type (see operand).
func (g *wfGen) expr(sc genScope, depth int) string {
	constants := []string{`1`, `2.5`, `"s"`, `'}}'`, `"a\"b"`, `true`, `nil`, `[1, "x"]`, `{"k": 1}`}
	switch g.pick("expr", "constant", "operand", "compound", "compound") {
	case "constant":
		return rapid.SampledFrom(constants).Draw(g.t, "constant")
	case "operand":
		return g.operand(sc, depth)
	}
	a, b := g.operand(sc, depth+1), g.operand(sc, depth+1)
	forms := []string{
		"%s == %s", "%s != %s", "%s + %s", "%s && %s", "!%s || %s", "%s ?? %s", "%s ? %s : 0",
		"len(%s) > len(%s)", "upper(string(%s)) + string(%s)", "let v = %s; v == %s", "(%s) in [%s, 1]",
		`{"k": %s, "l": %s}`, "[%s, %s]", "filter([1, 2], # > 0 && %s != %s)", "%s?.x ?? %s", "not (%s in %s)",
	}
	return fmt.Sprintf(rapid.SampledFrom(forms).Draw(g.t, "form"), a, b)
}

// operand draws an expression of unknown type: a reference, or a
// combination of references that stays of unknown type.
func (g *wfGen) operand(sc genScope, depth int) string {
	refs := []string{"run.id", "run.workflow", "run.version", "run.started_at"}
	for _, in := range g.inputs {
		refs = append(refs, "inputs."+in.name, fmt.Sprintf("inputs[%q]", in.name), "inputs?."+in.name)
	}
	for _, s := range sc.steps {
		refs = append(refs, "steps."+s.id+".status", "steps."+s.id+".error", "steps."+s.id+".attempts")
		switch {
		case s.ask && len(s.fields) > 0:
			// Not the bare form answer: the "%s?.x" form would read a field
			// the form does not have, which the checker rightly refuses.
			refs = append(refs, "steps."+s.id+".answer."+s.fields[0], "steps."+s.id+".answer."+s.fields[len(s.fields)-1])
		case s.ask:
			refs = append(refs, "steps."+s.id+".answer")
		default:
			refs = append(refs, "steps."+s.id+".output", "steps."+s.id+".output.body.id", fmt.Sprintf("steps[%q].output", s.id))
		}
	}
	for _, e := range g.env {
		refs = append(refs, "env."+e)
	}
	if sc.foreach {
		refs = append(refs, "item", "item.name", "index")
	}
	if depth >= 2 || g.chance("ref", 2) {
		return rapid.SampledFrom(refs).Draw(g.t, "ref")
	}
	a, b := g.operand(sc, depth+1), g.operand(sc, depth+1)
	forms := []string{"(%s ?? %s)", "(%s ? %s : nil)", "[%s, %s][0]", "(%s + %s)", "(%s)[%s]"}
	return fmt.Sprintf(rapid.SampledFrom(forms).Draw(g.t, "operand_form"), a, b)
}

// template draws a string of literal text and ${{ }} expressions.
func (g *wfGen) template(sc genScope) string {
	n := rapid.IntRange(1, 3).Draw(g.t, "template_parts")
	var b strings.Builder
	for i := 0; i < n; i++ {
		switch g.pick("part", "text", "expr", "expr", "escape") {
		case "text":
			b.WriteString(g.text("text"))
		case "expr":
			pad := g.pick("pad", "", " ", "  ")
			b.WriteString("${{" + pad + g.expr(sc, 0) + pad + "}}")
		case "escape":
			// An escaped opening is literal text: its content is not
			// checked, whatever it refers to.
			b.WriteString("$${{ inputs.not_declared }}")
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}

// cond draws a condition: a bare expression, one ${{ }}, or a boolean.
func (g *wfGen) cond(sc genScope) any {
	switch g.pick("cond", "bare", "wrapped", "wrapped_ws", "bool") {
	case "bare":
		return g.expr(sc, 0)
	case "wrapped":
		return "${{ " + g.expr(sc, 0) + " }}"
	case "wrapped_ws":
		return "  ${{" + g.expr(sc, 0) + "}} "
	}
	return rapid.Bool().Draw(g.t, "cond_bool")
}

// literal draws a plain value without templates.
func (g *wfGen) literal(depth int) any {
	kinds := []string{"string", "int", "float", "bool", "null"}
	if depth < 2 {
		kinds = append(kinds, "map", "list")
	}
	switch g.pick("literal", kinds...) {
	case "string":
		return g.text("literal_text")
	case "int":
		return rapid.Int64().Draw(g.t, "literal_int")
	case "float":
		return rapid.Float64().Draw(g.t, "literal_float")
	case "bool":
		return rapid.Bool().Draw(g.t, "literal_bool")
	case "map":
		m := map[string]any{}
		for _, k := range rapid.SliceOfN(rapid.SampledFrom(textTokens), 0, 3).Draw(g.t, "literal_keys") {
			m[k] = g.literal(depth + 1)
		}
		return m
	case "list":
		l := make([]any, rapid.IntRange(0, 3).Draw(g.t, "literal_len"))
		for i := range l {
			l[i] = g.literal(depth + 1)
		}
		return l
	}
	return nil
}

// value draws a value whose strings are templates over sc.
func (g *wfGen) value(sc genScope, depth int) any {
	kinds := []string{"template", "template", "literal"}
	if depth < 3 {
		kinds = append(kinds, "map", "list")
	}
	switch g.pick("value", kinds...) {
	case "template":
		return g.template(sc)
	case "map":
		m := map[string]any{}
		for _, k := range rapid.SliceOfN(rapid.StringMatching(`[a-zA-Z_/~. -]{1,8}`), 0, 3).Draw(g.t, "value_keys") {
			m[k] = g.value(sc, depth+1)
		}
		return m
	case "list":
		l := make([]any, rapid.IntRange(0, 3).Draw(g.t, "value_len"))
		for i := range l {
			l[i] = g.value(sc, depth+1)
		}
		return l
	}
	return g.literal(depth)
}

func (g *wfGen) with(sc genScope) map[string]any {
	m := map[string]any{}
	keys := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"method", "url", "headers", "body", "args", "path", "command", "n"}), 0, 4, rapid.ID[string]).Draw(g.t, "with_keys")
	for _, k := range keys {
		m[k] = g.value(sc, 1)
	}
	return m
}

var durations = []string{"100ms", "500ms", "1s", "2s", "30s", "1m", "90s", "5m", "1h", "1h30m", "1.5h", "1d", "1d12h", "2d"}

// duration draws a duration, sometimes as a template.
func (g *wfGen) duration(sc genScope) string {
	if g.chance("duration_template", 6) {
		return "${{ " + g.expr(sc, 1) + " }}s"
	}
	return rapid.SampledFrom(durations).Draw(g.t, "duration")
}

func (g *wfGen) retry() map[string]any {
	r := map[string]any{"attempts": int64(rapid.IntRange(1, 100).Draw(g.t, "attempts"))}
	// durations is sorted, so backoff <= max_backoff.
	i := rapid.IntRange(0, len(durations)-1).Draw(g.t, "backoff")
	j := rapid.IntRange(i, len(durations)-1).Draw(g.t, "max_backoff")
	if g.chance("has_backoff", 2) {
		r["backoff"] = durations[i]
	}
	if g.chance("has_max_backoff", 2) {
		r["max_backoff"] = durations[j]
	}
	return r
}

var actions = []string{"http", "shell", "file.write", "transform", "petstore.getPet", "mcp.call-tool", "A1_b-2"}

func (g *wfGen) action(sc genScope) map[string]any {
	a := map[string]any{"uses": rapid.SampledFrom(actions).Draw(g.t, "uses")}
	if g.chance("action_with", 2) {
		a["with"] = g.with(sc)
	}
	if g.chance("action_timeout", 3) {
		a["timeout"] = g.duration(sc)
	}
	if g.chance("action_retry", 3) {
		a["retry"] = g.retry()
	}
	return a
}

// input draws the declaration of one input, with constraints and a default
// that satisfies them.
func (g *wfGen) input(name string) map[string]any {
	t := g.t
	typ := g.pick("input_type", "string", "integer", "number", "boolean", "object", "array")
	in := map[string]any{"type": typ}
	var def any
	hasDefault := g.chance("has_default", 2)
	switch typ {
	case "string":
		switch g.pick("string_constraint", "enum", "pattern", "length", "none") {
		case "enum":
			vals := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z0-9]{1,6}`), 1, 4, rapid.ID[string]).Draw(t, "enum")
			in["enum"] = toAny(vals)
			def = rapid.SampledFrom(vals).Draw(t, "enum_default")
		case "pattern":
			p := rapid.SampledFrom([][2]string{
				{`^[a-z]{1,8}$`, `[a-z]{1,8}`},
				{`^[a-z0-9-]{3,63}$`, `[a-z0-9-]{3,20}`},
				{`^\d+$`, `[0-9]{1,6}`},
				{`(?i)^web-[a-z]+$`, `[wW][eE][bB]-[a-z]{1,5}`},
				{`.*`, `[a-zé ]{0,6}`},
			}).Draw(t, "pattern")
			in["pattern"] = p[0]
			def = rapid.StringMatching(p[1]).Draw(t, "pattern_default")
		case "length":
			s := g.text("length_default")
			n := utf8.RuneCountInString(s)
			in["min_length"] = int64(rapid.IntRange(0, n).Draw(t, "min_length"))
			in["max_length"] = int64(rapid.IntRange(n, n+5).Draw(t, "max_length"))
			def = s
		default:
			def = g.text("string_default")
		}
	case "integer":
		lo := rapid.Int64Range(-1000, 1000).Draw(t, "minimum")
		hi := rapid.Int64Range(lo, lo+2000).Draw(t, "maximum")
		if g.chance("has_minimum", 2) {
			in["minimum"] = lo
		}
		if g.chance("has_maximum", 2) {
			in["maximum"] = hi
		}
		if g.chance("integer_enum", 4) {
			vals := []any{lo, hi}
			in["enum"] = vals
			def = rapid.SampledFrom(vals).Draw(t, "integer_default")
		} else {
			def = rapid.Int64Range(lo, hi).Draw(t, "integer_default")
		}
	case "number":
		lo := rapid.Float64Range(-1e6, 1e6).Draw(t, "minimum")
		hi := rapid.Float64Range(lo, 2e6).Draw(t, "maximum")
		if g.chance("has_minimum", 2) {
			in["minimum"] = lo
		}
		if g.chance("has_maximum", 2) {
			in["maximum"] = hi
		}
		def = rapid.Float64Range(lo, hi).Draw(t, "number_default")
	case "boolean":
		def = rapid.Bool().Draw(t, "boolean_default")
	case "object":
		m := map[string]any{}
		for _, k := range rapid.SliceOfN(rapid.SampledFrom(textTokens), 0, 3).Draw(t, "object_keys") {
			m[k] = g.literal(1)
		}
		def = m
	case "array":
		l := make([]any, rapid.IntRange(0, 4).Draw(t, "array_len"))
		for i := range l {
			l[i] = g.literal(1)
		}
		if g.chance("array_length", 2) {
			in["min_length"] = int64(rapid.IntRange(0, len(l)).Draw(t, "min_length"))
			in["max_length"] = int64(rapid.IntRange(len(l), len(l)+3).Draw(t, "max_length"))
		}
		def = l
	}
	if hasDefault {
		in["default"] = def
	}
	if g.chance("has_required", 4) {
		in["required"] = rapid.Bool().Draw(t, "required")
	}
	if g.chance("has_input_title", 4) {
		in["title"] = g.text("input_title")
	}
	if g.chance("has_input_description", 4) {
		in["description"] = g.text("input_description")
	}
	if g.chance("secret", 5) {
		in["secret"] = true
	}
	if g.chance("input_env", 5) {
		e := rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,10}`).Draw(t, "input_env")
		in["env"] = e
		g.env = append(g.env, e) // declaring env: on an input makes env.NAME valid
	}
	g.inputs = append(g.inputs, inputDecl{name, typ})
	return in
}

// stepList draws n steps that run in order, seeing sc and each other's
// results as they complete. It returns the steps and what follows them may
// see.
func (g *wfGen) stepList(sc genScope, depth, n int) ([]any, genScope) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = g.freshID("step_id")
	}
	list := make([]any, n)
	for i, id := range ids {
		kinds := []string{"uses", "ask", "agent", "workflow", "sleep", "fail", "switch"}
		if depth < 2 {
			kinds = append(kinds, "parallel", "foreach")
		}
		kind := rapid.SampledFrom(kinds).Draw(g.t, "kind")
		step, vis := g.step(id, kind, sc, depth)
		if kind == "switch" {
			g.cases(step, sc, ids, i)
		}
		list[i] = step
		sc = sc.plus(vis...)
	}
	return list, sc
}

// cases fills the switch of the step at ids[i]. Targets are siblings; a
// target at or before the switch forms a loop, bounded by max_visits.
func (g *wfGen) cases(step map[string]any, sc genScope, ids []string, i int) {
	n := rapid.IntRange(1, 3).Draw(g.t, "cases")
	cases := make([]any, n)
	for c := range cases {
		j := rapid.IntRange(0, len(ids)-1).Draw(g.t, "goto")
		if i+1 < len(ids) && !g.chance("backward", 4) {
			j = rapid.IntRange(i+1, len(ids)-1).Draw(g.t, "goto_forward")
		}
		cs := map[string]any{"goto": ids[j]}
		// Only the last case may go without a condition.
		if c < n-1 || !g.chance("case_without_if", 3) {
			cs["if"] = g.cond(sc)
		}
		if j <= i {
			step["max_visits"] = int64(rapid.IntRange(1, 10).Draw(g.t, "max_visits"))
		}
		cases[c] = cs
	}
	step["switch"] = cases
}

// step draws one step of the given kind. It returns the step and the ids
// it makes visible to the steps after it.
func (g *wfGen) step(id, kind string, sc genScope, depth int) (map[string]any, []visible) {
	t := g.t
	s := map[string]any{"id": id}
	vis := []visible{{id: id}}
	self := sc.plus(visible{id: id})
	switch kind {
	case "uses", "workflow":
		if kind == "uses" {
			s["uses"] = rapid.SampledFrom(actions).Draw(t, "uses")
		} else {
			s["workflow"] = rapid.StringMatching(`[a-z0-9][a-z0-9_-]{0,20}`).Draw(t, "workflow")
		}
		if g.chance("with", 2) {
			s["with"] = g.with(sc)
		}
		// Inside a group only an action honours retry; repeat only an
		// action at the top level.
		if (kind == "uses" || depth == 0) && g.chance("retry", 3) {
			s["retry"] = g.retry()
		}
		if kind == "uses" && depth == 0 && g.chance("repeat", 4) {
			r := map[string]any{"until": g.cond(self)}
			if g.chance("repeat_every", 2) {
				r["every"] = g.duration(sc)
			}
			if g.chance("repeat_max", 2) {
				r["max_attempts"] = int64(rapid.IntRange(1, 50).Draw(t, "max_attempts"))
			}
			if g.chance("repeat_timeout", 2) {
				r["timeout"] = g.duration(sc)
			}
			s["repeat"] = r
		}
		if g.chance("compensate", 4) {
			s["compensate"] = g.action(self)
		}
	case "ask":
		if g.chance("form", 3) {
			form := map[string]any{}
			if g.chance("form_prompt", 2) {
				form["prompt"] = g.template(sc)
			}
			if g.chance("form_help", 3) {
				form["help"] = g.template(sc)
			}
			names := rapid.SliceOfNDistinct(identifier, 1, 4, rapid.ID[string]).Draw(t, "field_names")
			fields := make([]any, len(names))
			for i, name := range names {
				f := g.question(sc, true)
				f["name"] = name
				fields[i] = f
			}
			form["fields"] = fields
			s["ask"] = form
			vis[0] = visible{id: id, ask: true, fields: names}
		} else {
			s["ask"] = g.question(sc, false)
			vis[0] = visible{id: id, ask: true}
		}
	case "agent":
		a := map[string]any{"instructions": g.template(sc)}
		if g.chance("persona", 2) {
			a["persona"] = g.text("persona")
		}
		if g.chance("output_schema", 2) {
			a["output_schema"] = g.outputSchema()
		}
		if g.chance("context", 2) {
			a["context"] = g.value(sc, 0)
		}
		s["agent"] = a
	case "sleep":
		switch g.pick("sleep", "string", "duration", "until") {
		case "string":
			s["sleep"] = g.duration(sc)
		case "duration":
			s["sleep"] = map[string]any{"duration": g.duration(sc)}
		case "until":
			s["sleep"] = map[string]any{"until": g.pick("until", "2026-01-02T15:04:05Z", "2030-12-31T23:59:59+02:00", "2026-06-01T00:00:00.5Z")}
		}
	case "fail":
		s["fail"] = g.template(sc)
		s["if"] = g.cond(sc) // a fail step is usually guarded
	case "switch":
		// Filled by cases, which knows the siblings.
	case "parallel":
		n := rapid.IntRange(1, 3).Draw(t, "branches")
		branches := make([]any, n)
		for i := range branches {
			// Branches see what preceded the group, never each other;
			// a switch in a branch would have no sibling to go to.
			kind := rapid.SampledFrom([]string{"uses", "ask", "agent", "workflow", "sleep", "parallel", "foreach"}).Draw(t, "branch_kind")
			if depth+1 >= 2 && (kind == "parallel" || kind == "foreach") {
				kind = "uses"
			}
			b, bvis := g.step(g.freshID("branch_id"), kind, sc, depth+1)
			branches[i] = b
			vis = append(vis, bvis...) // branches are visible after the group
		}
		s["parallel"] = branches
		if g.chance("parallel_concurrency", 3) {
			s["concurrency"] = int64(rapid.IntRange(1, 1024).Draw(t, "concurrency"))
		}
	case "foreach":
		switch g.pick("foreach", "list", "template", "input") {
		case "list":
			l := make([]any, rapid.IntRange(0, 3).Draw(t, "foreach_len"))
			for i := range l {
				l[i] = g.literal(1)
			}
			s["foreach"] = l
		case "template":
			s["foreach"] = "${{ [1, 2, " + g.expr(sc, 1) + "] }}"
		case "input":
			s["foreach"] = "${{ " + g.expr(sc, 0) + " }}"
		}
		body := sc
		body.foreach = true
		// The body's steps are visible only inside it.
		s["steps"], _ = g.stepList(body, depth+1, rapid.IntRange(1, 3).Draw(t, "body_len"))
		if g.chance("foreach_concurrency", 3) {
			s["concurrency"] = int64(rapid.IntRange(1, 1024).Draw(t, "concurrency"))
		}
	}
	if kind != "fail" && g.chance("if", 4) {
		s["if"] = g.cond(sc)
	}
	if g.chance("step_title", 4) {
		s["title"] = g.text("step_title")
	}
	if g.chance("step_description", 5) {
		s["description"] = g.text("step_description")
	}
	if kind != "sleep" && kind != "fail" && kind != "switch" && (kind == "uses" || depth == 0) && g.chance("timeout", 4) {
		s["timeout"] = g.duration(sc)
	}
	if kind != "ask" && kind != "sleep" && kind != "fail" && kind != "switch" && g.chance("continue_on_error", 5) {
		s["continue_on_error"] = rapid.Bool().Draw(t, "continue_on_error")
	}
	if _, set := s["max_visits"]; !set && g.chance("max_visits", 8) {
		s["max_visits"] = int64(rapid.IntRange(1, 10).Draw(t, "max_visits"))
	}
	return s, vis
}

// question draws a question (a form's field when field is true) whose
// constraints and default agree.
func (g *wfGen) question(sc genScope, field bool) map[string]any {
	t := g.t
	q := map[string]any{}
	if !field || g.chance("field_prompt", 2) {
		q["prompt"] = g.template(sc)
	}
	typ := g.pick("question_type", "", "string", "integer", "number", "boolean", "choice", "multi-choice")
	if typ != "" {
		q["type"] = typ
	}
	var def any
	switch typ {
	case "", "string":
		if g.chance("question_pattern", 2) {
			q["pattern"] = `^[a-z0-9-]{3,63}$`
			def = rapid.StringMatching(`[a-z0-9-]{3,20}`).Draw(t, "question_default")
		} else {
			def = g.text("question_default")
		}
		n := float64(utf8.RuneCountInString(def.(string)))
		if g.chance("question_min", 3) {
			q["min"] = n
		}
		if g.chance("question_max", 3) {
			q["max"] = n + 1
		}
		if g.chance("default_template", 4) {
			def = "web-${{ " + g.expr(sc, 1) + " }}"
		}
	case "integer":
		lo := rapid.Int64Range(-100, 100).Draw(t, "min")
		hi := rapid.Int64Range(lo, 200).Draw(t, "max")
		q["min"], q["max"] = lo, hi
		def = rapid.Int64Range(lo, hi).Draw(t, "question_default")
	case "number":
		lo := rapid.Float64Range(-100, 100).Draw(t, "min")
		hi := rapid.Float64Range(lo, 200).Draw(t, "max")
		q["min"], q["max"] = lo, hi
		def = rapid.Float64Range(lo, hi).Draw(t, "question_default")
	case "boolean":
		def = rapid.Bool().Draw(t, "question_default")
	case "choice", "multi-choice":
		if g.chance("computed_choices", 5) {
			q["choices"] = "${{ " + g.expr(sc, 1) + " }}"
			def = nil
			break
		}
		values := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z]{1,6}`), 1, 4, rapid.ID[string]).Draw(t, "choice_values")
		choices := make([]any, len(values))
		for i, v := range values {
			switch g.pick("choice_form", "bare", "object", "object_full") {
			case "bare":
				choices[i] = v
			case "object":
				choices[i] = map[string]any{"value": v}
			default:
				choices[i] = map[string]any{"value": v, "label": g.text("label"), "description": g.text("choice_description")}
			}
		}
		q["choices"] = choices
		if typ == "choice" {
			def = rapid.SampledFrom(values).Draw(t, "question_default")
		} else {
			picks := rapid.SliceOfNDistinct(rapid.SampledFrom(values), 0, len(values), rapid.ID[string]).Draw(t, "picks")
			def = toAny(picks)
			if g.chance("picks_min", 2) {
				q["min"] = int64(len(picks))
			}
			if g.chance("picks_max", 2) {
				q["max"] = int64(len(picks) + 1)
			}
		}
	}
	if def != nil && g.chance("question_default", 2) {
		q["default"] = def
	}
	if g.chance("help", 3) {
		q["help"] = g.template(sc)
	}
	if g.chance("question_secret", 5) {
		q["secret"] = true
	}
	if g.chance("question_env", 5) {
		e := rapid.StringMatching(`[A-Z_][A-Z0-9_]{0,10}`).Draw(t, "question_env")
		q["env"] = e
		g.env = append(g.env, e) // env: on a question declares the name too
	}
	if g.chance("auto", 5) {
		q["auto"] = g.cond(sc)
	}
	return q
}

// outputSchema draws a valid JSON Schema for an agent's output.
func (g *wfGen) outputSchema() map[string]any {
	return rapid.SampledFrom([]func() map[string]any{
		func() map[string]any { return map[string]any{} },
		func() map[string]any {
			return map[string]any{
				"type": "object", "required": []any{"risk", "summary"},
				"properties": map[string]any{
					"risk":    map[string]any{"enum": []any{"low", "high"}},
					"summary": map[string]any{"type": "string", "minLength": int64(1)},
					"score":   map[string]any{"type": "number", "minimum": int64(0), "maximum": 1.5},
				},
				"additionalProperties": false,
			}
		},
		func() map[string]any {
			return map[string]any{"type": "array", "items": map[string]any{"type": "string", "pattern": "^[a-z]+$"}, "minItems": int64(1)}
		},
		func() map[string]any {
			return map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}}
		},
		func() map[string]any {
			return map[string]any{"$defs": map[string]any{"n": map[string]any{"type": "integer"}}, "$ref": "#/$defs/n"}
		},
	}).Draw(g.t, "output_schema")()
}

func (g *wfGen) hook(sc genScope) map[string]any {
	h := g.action(sc)
	if g.chance("hook_id", 2) {
		h["id"] = g.freshID("hook_id")
	}
	if g.chance("hook_if", 3) {
		h["if"] = g.cond(sc)
	}
	if g.chance("hook_continue", 4) {
		h["continue_on_error"] = rapid.Bool().Draw(g.t, "hook_continue_on_error")
	}
	if g.chance("hook_compensate", 4) {
		h["compensate"] = g.action(sc)
	}
	return h
}

func toAny[E any](l []E) []any {
	out := make([]any, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

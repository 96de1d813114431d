package workflow

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"stepwise.dev/stepwise/internal/expr"
)

// scope is what an expression may see: the steps that have run before it,
// through a chain of enclosing step lists.
type scope struct {
	parent  *scope
	ids     map[string]*Step
	foreach bool // inside a foreach body: item and index exist
	self    *Step
	output  bool // choices_from's value: `output` exists
}

func (s *scope) child(foreach bool) *scope {
	return &scope{parent: s, ids: map[string]*Step{}, foreach: foreach || s.foreach}
}

func (s *scope) lookup(id string) *Step {
	for cur := s; cur != nil; cur = cur.parent {
		if st, ok := cur.ids[id]; ok {
			return st
		}
	}
	return nil
}

// withSelf returns a scope in which the step may reference itself (repeat
// until, compensate).
func (s *scope) withSelf(st *Step) *scope {
	return &scope{parent: s, ids: map[string]*Step{st.ID: st}, foreach: s.foreach, self: st}
}

// withOutput returns a scope in which expressions may read `output` (the
// output of choices_from's action).
func (s *scope) withOutput() *scope {
	return &scope{parent: s, ids: map[string]*Step{}, foreach: s.foreach, self: s.self, output: true}
}

// The names an expression may start with.
var (
	roots      = []string{"inputs", "steps", "run", "env", "item", "index"}
	runFields  = []string{"id", "workflow", "version", "started_at", "status", "error"}
	stepFields = []string{"output", "answer", "status", "error", "attempts"}
)

// Fields of a step that hold names, regular expressions or schemas rather
// than templates.
var literalFields = map[string]bool{
	"id": true, "uses": true, "workflow": true, "title": true, "description": true,
	"continue_on_error": true, "max_visits": true, "concurrency": true,
	"parallel": true, "steps": true, // nested steps are checked with their own scope
}

func (c *checker) stepTemplates(s *Step, sc *scope) {
	m, ok := lookup(c.src.Value, s.Path).(map[string]any)
	if !ok {
		return
	}
	for _, key := range c.src.Keys(s.Path) {
		if literalFields[key] {
			continue
		}
		p := s.Path + "/" + escapePointer(key)
		v := m[key]
		switch key {
		case "if":
			c.condition(p, v, sc)
		case "switch":
			for i, cs := range asList(v) {
				if cm, ok := cs.(map[string]any); ok {
					c.condition(fmt.Sprintf("%s/%d/if", p, i), cm["if"], sc)
				}
			}
		case "repeat":
			if rm, ok := v.(map[string]any); ok {
				self := sc.withSelf(s)
				c.condition(p+"/until", rm["until"], self)
				c.templates(p+"/every", rm["every"], sc)
				c.templates(p+"/timeout", rm["timeout"], sc)
			}
		case "compensate":
			c.templates(p, v, sc.withSelf(s))
		case "ask":
			c.askTemplates(p, v, sc)
		case "agent":
			if am, ok := v.(map[string]any); ok {
				for k, e := range am {
					if k != "output_schema" {
						c.templates(p+"/"+escapePointer(k), e, sc)
					}
				}
			}
		default:
			c.templates(p, v, sc)
		}
	}
}

func (c *checker) askTemplates(p string, v any, sc *scope) {
	am, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, e := range am {
		kp := p + "/" + escapePointer(k)
		switch k {
		case "auto":
			c.condition(kp, e, sc)
		case "prompt", "help", "default", "choices":
			c.templates(kp, e, sc)
		case "choices_from":
			if cm, ok := e.(map[string]any); ok {
				c.templates(kp+"/with", cm["with"], sc)
				c.templates(kp+"/timeout", cm["timeout"], sc)
				c.condition(kp+"/value", cm["value"], sc.withOutput())
			}
		case "fields":
			for i, f := range asList(e) {
				c.askTemplates(kp+"/"+strconv.Itoa(i), f, sc)
			}
		}
	}
}

func (c *checker) outputs() {
	sc := c.topScope()
	for _, k := range c.src.Keys("/outputs") {
		p := "/outputs/" + escapePointer(k)
		c.templates(p, lookup(c.src.Value, p), sc)
	}
}

// topScope sees every top-level step and the parallel branches they hold.
func (c *checker) topScope() *scope {
	sc := &scope{ids: map[string]*Step{}}
	for _, s := range c.wf.Steps {
		if s == nil {
			continue
		}
		sc.ids[s.ID] = s
		for _, id := range exports(s) {
			if info := c.ids[id]; info != nil {
				sc.ids[id] = info.step
			}
		}
	}
	return sc
}

func (c *checker) hooks(hooks []*Hook) {
	sc := c.topScope()
	for _, h := range hooks {
		if h == nil {
			continue
		}
		if h.Uses != "" {
			c.action(h.Path, h.Uses, h.With)
		}
		if h.Compensate != nil && h.Compensate.Uses != "" {
			c.action(h.Path+"/compensate", h.Compensate.Uses, h.Compensate.With)
		}
		d := &Step{Timeout: h.Timeout, Retry: h.Retry, Compensate: h.Compensate, Path: h.Path}
		c.durations(d)
		m, _ := lookup(c.src.Value, h.Path).(map[string]any)
		for k, v := range m {
			p := h.Path + "/" + escapePointer(k)
			switch k {
			case "id", "uses", "continue_on_error":
			case "if":
				c.condition(p, v, sc)
			default:
				c.templates(p, v, sc)
			}
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// templates checks every string inside v as a template.
func (c *checker) templates(p string, v any, sc *scope) {
	switch x := v.(type) {
	case string:
		if !strings.Contains(x, "${{") {
			return
		}
		segs, err := expr.Scan(x)
		if err != nil {
			off := 0
			if se, ok := err.(*expr.ScanError); ok {
				off = se.Offset
				err = fmt.Errorf("%s", se.Message)
			}
			v := Violation{Path: p, Pos: c.src.OffsetPos(p, off), Rule: RuleExpression, Message: err.Error()}
			if strings.Contains(v.Message, "unterminated") && c.src.Format == "yaml" {
				v.Hint = "in YAML, ' #' starts a comment and ': ' a mapping: quote a value that holds them"
			}
			c.add(v)
			return
		}
		for _, sg := range segs {
			if sg.Expr {
				c.expression(p, sg.Offset, sg.Text, sc)
			}
		}
	case map[string]any:
		keys := c.src.Keys(p)
		if len(keys) != len(x) {
			keys = keys[:0:0]
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
		}
		for _, k := range keys {
			c.templates(p+"/"+escapePointer(k), x[k], sc)
		}
	case []any:
		for i, e := range x {
			c.templates(p+"/"+strconv.Itoa(i), e, sc)
		}
	}
}

// condition checks a condition field: a bare expression or one ${{ }}.
func (c *checker) condition(p string, v any, sc *scope) {
	s, ok := v.(string)
	if !ok {
		return // booleans (and type errors, reported by the schema)
	}
	src, off, err := expr.Condition(s)
	if err != nil {
		msg := err.Error()
		if se, ok := err.(*expr.ScanError); ok {
			msg, off = se.Message, se.Offset
		}
		c.add(Violation{Path: p, Pos: c.src.OffsetPos(p, off), Rule: RuleExpression, Message: msg})
		return
	}
	if strings.TrimSpace(src) == "" {
		c.at(p, RuleExpression, "empty condition", "")
		return
	}
	c.expression(p, off, src, sc)
}

// expression checks one expression found at byte offset base of the
// string at p.
func (c *checker) expression(p string, base int, src string, sc *scope) {
	a, err := expr.Analyze(src)
	if err != nil {
		off := 0
		msg := err.Error()
		if se, ok := err.(*expr.SyntaxError); ok {
			off = se.Offset
		}
		c.add(Violation{Path: p, Pos: c.src.OffsetPos(p, base+off), Rule: RuleExpression,
			Message: fmt.Sprintf("expression %q is invalid: %s", strings.TrimSpace(src), msg)})
		return
	}
	for _, call := range a.Calls {
		c.add(Violation{Path: p, Pos: c.src.OffsetPos(p, base+call.Offset), Rule: RuleReference,
			Message: fmt.Sprintf("unknown function %q", call.Name), Hint: didYouMean(call.Name, builtinNames())})
	}
	for _, r := range a.Refs {
		if msg, hint := c.ref(r, sc); msg != "" {
			c.add(Violation{Path: p, Pos: c.src.OffsetPos(p, base+r.Offset), Rule: RuleReference, Message: msg, Hint: hint})
		}
	}
}

func builtinNames() []string {
	var names []string
	for _, n := range []string{"len", "upper", "lower", "trim", "split", "join", "filter", "map", "all", "any",
		"none", "one", "count", "first", "last", "keys", "values", "toJSON", "fromJSON", "toBase64", "fromBase64",
		"now", "duration", "date", "int", "float", "string", "abs", "max", "min", "sum", "sort", "sortBy",
		"groupBy", "reduce", "hasPrefix", "hasSuffix", "indexOf", "replace", "repeat", "trimPrefix", "trimSuffix",
		"round", "ceil", "floor", "find", "findIndex", "uniq", "concat", "flatten", "reverse", "get"} {
		if expr.IsBuiltin(n) {
			names = append(names, n)
		}
	}
	return names
}

// ref checks one reference, returning a message (and hint) when it is
// wrong.
func (c *checker) ref(r expr.Ref, sc *scope) (string, string) {
	switch r.Root {
	case "inputs":
		if len(r.Path) == 0 {
			return "", ""
		}
		if _, ok := c.wf.Inputs[r.Path[0]]; !ok {
			hint := didYouMean(r.Path[0], c.inputNames())
			if hint == "" {
				hint = fmt.Sprintf("declare it under inputs: (%s: {type: string})", r.Path[0])
			}
			return fmt.Sprintf("input %q is not declared", r.Path[0]), hint
		}
	case "steps":
		if len(r.Path) == 0 {
			return "", ""
		}
		return c.stepRef(r, sc)
	case "run":
		if len(r.Path) > 0 && !contains(runFields, r.Path[0]) {
			return fmt.Sprintf("run has no field %q (it has %s)", r.Path[0], strings.Join(runFields, ", ")), didYouMean(r.Path[0], runFields)
		}
	case "env":
		if len(r.Path) > 0 && !c.env[r.Path[0]] {
			var names []string
			for n := range c.env {
				names = append(names, n)
			}
			sort.Strings(names)
			hint := didYouMean(r.Path[0], names)
			if hint == "" {
				hint = fmt.Sprintf("declare it: env: [%s]", r.Path[0])
			}
			return fmt.Sprintf("environment variable %q is not declared", r.Path[0]), hint
		}
	case "item", "index":
		if !sc.foreach {
			return fmt.Sprintf("%q exists only inside the steps of a foreach", r.Root), ""
		}
	case "output":
		if !sc.output {
			return "\"output\" exists only in choices_from's value (the action's output)", ""
		}
	default:
		avail := []string{"inputs", "steps", "run", "env"}
		if sc.foreach {
			avail = roots
		}
		hint := didYouMean(r.Root, avail)
		if hint == "" {
			hint = "expressions start with " + strings.Join(avail, ", ")
		}
		return fmt.Sprintf("unknown name %q", r.Root), hint
	}
	return "", ""
}

func (c *checker) stepRef(r expr.Ref, sc *scope) (string, string) {
	id := r.Path[0]
	st := sc.lookup(id)
	if st == nil {
		info, exists := c.ids[id]
		if !exists {
			if c.hookIDs[id] {
				return fmt.Sprintf("%q is an on_success/on_failure hook; hooks run after the steps and cannot be referenced", id), ""
			}
			all := make([]string, 0, len(c.ids))
			for k := range c.ids {
				all = append(all, k)
			}
			sort.Strings(all)
			return fmt.Sprintf("no step has id %q", id), didYouMean(id, all)
		}
		switch {
		case sc.self == nil && info.step == c.checking:
			return fmt.Sprintf("step %q cannot use its own result here (only in repeat.until and compensate)", id), ""
		case info.body == KindForeach:
			return fmt.Sprintf("step %q is inside the foreach %q and can be referenced only from that body", id, info.owner.ID),
				fmt.Sprintf("use steps.%s.output, the list of each item's results", info.owner.ID)
		default:
			return fmt.Sprintf("step %q does not run before this point", id), "a step can reference only steps that complete before it: earlier steps, and branches of earlier parallel groups"
		}
	}
	if len(r.Path) < 2 {
		return "", ""
	}
	field := r.Path[1]
	if !contains(stepFields, field) {
		return fmt.Sprintf("steps.%s has no field %q (it has %s)", id, field, strings.Join(stepFields, ", ")), didYouMean(field, stepFields)
	}
	isAsk := st.Ask != nil
	if field == "answer" && !isAsk {
		return fmt.Sprintf("step %q is not a question; use steps.%s.output", id, id), ""
	}
	if field == "output" && isAsk {
		return fmt.Sprintf("step %q is a question; use steps.%s.answer", id, id), ""
	}
	if field == "answer" && len(r.Path) > 2 && st.Ask.Fields != nil {
		var names []string
		for _, f := range st.Ask.Fields {
			if f != nil {
				names = append(names, f.Name)
			}
		}
		if !contains(names, r.Path[2]) {
			return fmt.Sprintf("the form %q has no field %q (it has %s)", id, r.Path[2], strings.Join(names, ", ")), didYouMean(r.Path[2], names)
		}
	}
	return "", ""
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

package workflow

import (
	"errors"
	"fmt"
	"maps"
	"regexp/syntax"
	"slices"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/expr"
	"stepwise.dev/stepwise/internal/ident"
	"stepwise.dev/stepwise/internal/schema"
)

// stepInfo is what the checker knows about a step id.
type stepInfo struct {
	step *Step
	// list is the step list the step belongs to; index its position.
	list  []*Step
	index int
	// body names the enclosing construct: "" (top level), "parallel" or
	// "foreach".
	body string
	// owner is the step whose body holds this one (nil at top level).
	owner *Step
}

type checker struct {
	src  *Source
	wf   *Workflow
	opts Options
	out  []Violation

	ids      map[string]*stepInfo
	hookIDs  map[string]bool
	checking *Step // the step whose fields are being checked
	env      map[string]bool
}

func newChecker(src *Source, wf *Workflow, opts Options) *checker {
	return &checker{src: src, wf: wf, opts: opts, ids: map[string]*stepInfo{}, hookIDs: map[string]bool{}, env: map[string]bool{}}
}

func (c *checker) add(v Violation) { c.out = append(c.out, v) }

func (c *checker) at(ptr, rule, msg, hint string) {
	c.add(Violation{Path: ptr, Pos: c.src.ValuePos(ptr), Rule: rule, Message: msg, Hint: hint})
}

func (c *checker) run() {
	for _, e := range c.wf.Env {
		c.env[e] = true
	}
	for _, name := range c.inputNames() {
		if in := c.wf.Inputs[name]; in.Env != "" {
			c.env[in.Env] = true
		}
	}
	c.collect(c.wf.Steps, "", nil)
	c.collectHooks(c.wf.OnSuccess)
	c.collectHooks(c.wf.OnFailure)
	c.names("inputs")
	c.names("outputs")
	if t := c.wf.Timeout; t != "" {
		if expr.HasExpr(t) {
			c.at("/timeout", RuleDuration, "the run's timeout is a literal duration, not a template", "")
		} else if _, err := ParseDuration(t); err != nil {
			c.at("/timeout", RuleDuration, err.Error(), "")
		}
	}
	for _, name := range c.inputNames() {
		c.input(name, c.wf.Inputs[name])
	}
	c.concurrency()
	top := &scope{ids: map[string]*Step{}}
	c.list(c.wf.Steps, top)
	c.outputs()
	c.hooks(c.wf.OnSuccess)
	c.hooks(c.wf.OnFailure)
	c.triggers()
}

func (c *checker) inputNames() []string { return c.wf.InputNames() }

// collect records every step id, reporting duplicates anywhere in the
// workflow (ids are global so that references are unambiguous).
func (c *checker) collect(steps []*Step, body string, owner *Step) {
	for i, s := range steps {
		if s == nil {
			continue
		}
		for _, k := range s.kinds() {
			if k == KindAsk && s.Ask != nil {
				c.askEnv(s.Ask)
			}
		}
		if s.ID != "" {
			if first, dup := c.ids[s.ID]; dup {
				fp := c.src.ValuePos(first.step.Path + "/id")
				c.at(s.Path+"/id", RuleDuplicateID,
					fmt.Sprintf("duplicate step id %q (first used at line %d, column %d)", s.ID, fp.Line, fp.Column),
					"give every step, including nested ones, a unique id")
			} else {
				c.ids[s.ID] = &stepInfo{step: s, list: steps, index: i, body: body, owner: owner}
			}
		}
		c.collect(s.Parallel, KindParallel, s)
		c.collect(s.Steps, KindForeach, s)
	}
}

func (c *checker) askEnv(a *Ask) {
	if a.Env != "" {
		c.env[a.Env] = true
	}
	for _, f := range a.Fields {
		if f != nil && f.Env != "" {
			c.env[f.Env] = true
		}
	}
}

func (c *checker) collectHooks(hooks []*Hook) {
	for _, h := range hooks {
		if h == nil || h.ID == "" {
			continue
		}
		if _, dup := c.ids[h.ID]; dup || c.hookIDs[h.ID] {
			c.at(h.Path+"/id", RuleDuplicateID, fmt.Sprintf("duplicate id %q", h.ID), "hook ids share one namespace with step ids")
			continue
		}
		c.hookIDs[h.ID] = true
	}
}

// list checks one list of steps that run in order.
func (c *checker) list(steps []*Step, sc *scope) {
	for i, s := range steps {
		if s == nil {
			continue
		}
		c.step(s, sc)
		c.gotos(steps, i, s)
		sc.ids[s.ID] = s
		for _, id := range exports(s) {
			if info := c.ids[id]; info != nil {
				sc.ids[id] = info.step
			}
		}
	}
}

// exports lists the ids of steps nested in s that later steps may
// reference: the branches of a parallel group (recursively). Steps inside a
// foreach body are not exported: the foreach's output collects them.
func exports(s *Step) []string {
	var ids []string
	for _, b := range s.Parallel {
		if b == nil {
			continue
		}
		ids = append(ids, b.ID)
		ids = append(ids, exports(b)...)
	}
	return ids
}

func (c *checker) step(s *Step, sc *scope) {
	c.kind(s, sc.parent != nil)
	p := s.Path
	if s.Ask != nil {
		c.ask(p+"/ask", s.Ask, false)
	}
	if s.Agent != nil && s.Agent.OutputSchema != nil {
		c.outputSchema(p+"/agent/output_schema", s.Agent.OutputSchema)
	}
	if s.Uses != "" {
		c.action(p, s.Uses, s.With)
	}
	if s.Compensate != nil && s.Compensate.Uses != "" {
		c.action(p+"/compensate", s.Compensate.Uses, s.Compensate.With)
	}
	if s.Workflow != "" && c.opts.Resolver != nil {
		if ok, similar := c.opts.Resolver.HasWorkflow(s.Workflow); !ok {
			c.at(p+"/workflow", RuleUnknownWorkflow, fmt.Sprintf("no workflow named %q in the library", s.Workflow), didYouMean(s.Workflow, similar))
		}
	}
	c.durations(s)
	c.checking = s
	c.stepTemplates(s, sc)
	c.checking = nil
	if s.Parallel != nil {
		inner := sc.child(false)
		for _, b := range s.Parallel {
			if b == nil {
				continue
			}
			// Branches run concurrently: each sees what preceded the
			// group, never its siblings.
			c.list([]*Step{b}, inner.child(false))
		}
	}
	if s.Steps != nil {
		c.list(s.Steps, sc.child(true))
	}
}

// kind checks that a step has exactly one kind and only the fields that
// kind takes (nested: inside a parallel group or a foreach body, where the
// engine honours fewer of them).
func (c *checker) kind(s *Step, nested bool) {
	ks := s.kinds()
	name := "this step"
	if s.ID != "" {
		name = fmt.Sprintf("step %q", s.ID)
	}
	switch {
	case len(ks) == 0:
		raw, isMap := lookup(c.src.Value, s.Path).(map[string]any)
		if !isMap {
			return // not a step at all: the schema reports it
		}
		for _, k := range Kinds {
			if _, present := raw[k]; present {
				return // a kind with a value of the wrong type: the schema reports it
			}
		}
		c.at(s.Path, RuleStepKind, fmt.Sprintf("%s does nothing: give it exactly one of %s", name, strings.Join(Kinds, ", ")), "")
		return
	case len(ks) > 1:
		c.at(s.Path, RuleStepKind, fmt.Sprintf("%s has %d kinds (%s); a step has exactly one: split it into several steps", name, len(ks), strings.Join(ks, ", ")), "")
		return
	}
	k := ks[0]
	only := func(field string, present bool, kinds ...string) {
		if !present {
			return
		}
		for _, ok := range kinds {
			if k == ok {
				return
			}
		}
		c.add(Violation{Path: s.Path + "/" + field, Pos: c.src.KeyPos(s.Path + "/" + field), Rule: RuleStepKind,
			Message: fmt.Sprintf("%q does not apply to %s steps; it is for %s steps", field, k, joinAnd(kinds))})
	}
	only("with", s.With != nil, KindUses, KindWorkflow)
	only("steps", s.Steps != nil, KindForeach)
	only("concurrency", s.Concurrency != 0, KindForeach, KindParallel)
	only("compensate", s.Compensate != nil, KindUses, KindWorkflow)
	only("continue_on_error", s.ContinueOnError, KindUses, KindWorkflow, KindAsk, KindAgent, KindParallel, KindForeach)
	if !nested {
		only("retry", s.Retry != nil, KindUses, KindWorkflow)
		only("repeat", s.Repeat != nil, KindUses)
		only("timeout", s.Timeout != "", KindUses, KindWorkflow, KindAsk, KindAgent, KindParallel, KindForeach)
	} else {
		// Inside a group the engine honours an action's timeout and retry
		// only; the group's own timeout bounds everything in it.
		inside := func(field string, present bool, kinds ...string) {
			if !present {
				return
			}
			for _, ok := range kinds {
				if k == ok {
					return
				}
			}
			hint := "put it on the parallel or foreach step that holds this one"
			if field != "timeout" {
				hint = "move the step out of the group"
			}
			msg := fmt.Sprintf("%q does not apply to %s steps inside a parallel group or foreach body; there it is for %s steps only", field, k, joinAnd(kinds))
			if len(kinds) == 0 {
				msg = fmt.Sprintf("%q does not apply to steps inside a parallel group or foreach body", field)
			}
			c.add(Violation{Path: s.Path + "/" + field, Pos: c.src.KeyPos(s.Path + "/" + field), Rule: RuleStepKind, Message: msg, Hint: hint})
		}
		inside("retry", s.Retry != nil, KindUses)
		inside("repeat", s.Repeat != nil)
		inside("timeout", s.Timeout != "", KindUses)
	}
	if k == KindForeach {
		if str, ok := s.Foreach.(string); ok {
			segs, err := expr.Scan(str)
			if _, single := expr.Single(segs); err == nil && !single {
				c.at(s.Path+"/foreach", RuleType, "foreach takes a list, or one ${{ }} expression that yields a list",
					fmt.Sprintf("write foreach: ${{ … }} or a YAML list, not %q", str))
			}
		}
	}
	if k == KindForeach && s.Steps == nil {
		c.at(s.Path, RuleRequired, fmt.Sprintf("foreach step %q needs a body: add steps: [...]", s.ID), "")
	}
}

// action checks a `uses` at ptr (the step, hook or compensate object):
// the action exists and, when the resolver knows its input schema, the
// literal `with` keys are ones it declares and the required ones are there.
func (c *checker) action(ptr, name string, with map[string]any) {
	if c.opts.Resolver == nil {
		return
	}
	if ok, similar := c.opts.Resolver.HasAction(name); !ok {
		c.at(ptr+"/uses", RuleUnknownAction, fmt.Sprintf("no action named %q", name), didYouMean(name, similar))
		return
	}
	ai, ok := c.opts.Resolver.(ActionInputs)
	if !ok {
		return
	}
	keys, required, closed, known := ai.InputKeys(name)
	if !known {
		return
	}
	if closed {
		for _, k := range sortedKeys(with) {
			if !slices.Contains(keys, k) {
				c.at(ptr+"/with/"+escapePointer(k), RuleUnknownField, fmt.Sprintf("action %s takes no input %q (it takes %s)", name, k, strings.Join(keys, ", ")), didYouMean(k, keys))
			}
		}
	}
	for _, k := range required {
		if _, ok := with[k]; !ok {
			where := ptr + "/with"
			if with == nil {
				where = ptr + "/uses"
			}
			c.at(where, RuleRequired, fmt.Sprintf("action %s needs with.%s", name, k), "")
		}
	}
}

// gotos checks the switch of steps[i]: targets must be siblings, and a
// jump backwards (a loop) needs max_visits on the switch step or target.
func (c *checker) gotos(steps []*Step, i int, s *Step) {
	for ci, cs := range s.Switch {
		if cs == nil || cs.Goto == "" {
			continue
		}
		ptr := fmt.Sprintf("%s/switch/%d/goto", s.Path, ci)
		if cs.If == "" && ci != len(s.Switch)-1 {
			c.at(fmt.Sprintf("%s/switch/%d", s.Path, ci), RuleConstraint, "a case without if always matches, so the cases after it never run", "make it the last case")
		}
		target := -1
		for j, t := range steps {
			if t != nil && t.ID == cs.Goto {
				target = j
			}
		}
		if target < 0 {
			if _, exists := c.ids[cs.Goto]; exists {
				c.at(ptr, RuleGotoTarget, fmt.Sprintf("goto %q jumps into or out of a parallel or foreach body; goto targets must be in the same step list as the switch", cs.Goto), "")
				continue
			}
			var siblings []string
			for _, t := range steps {
				if t != nil {
					siblings = append(siblings, t.ID)
				}
			}
			c.at(ptr, RuleGotoTarget, fmt.Sprintf("goto target %q is not a step", cs.Goto), didYouMean(cs.Goto, siblings))
			continue
		}
		if target <= i && s.MaxVisits == 0 && steps[target].MaxVisits == 0 {
			c.at(ptr, RuleUnboundedLoop, fmt.Sprintf("goto %q jumps back and forms a loop with no bound", cs.Goto),
				fmt.Sprintf("add max_visits: N to step %q or %q", s.ID, cs.Goto))
		}
	}
}

func (c *checker) input(name string, in *Input) {
	p := Pointer("inputs", name)
	if in.Pattern != "" {
		if _, err := compilePattern(in.Pattern); err != nil {
			c.at(p+"/pattern", RuleRegex, fmt.Sprintf("pattern of input %q does not compile: %v", name, regexErr(err)), "patterns use RE2 syntax (no lookaround or backreferences)")
		} else if in.Type != "" && in.Type != "string" {
			c.at(p+"/pattern", RuleConstraint, fmt.Sprintf("pattern applies to string inputs, and %q is %s", name, in.Type), "")
		}
	}
	if (in.Minimum != nil || in.Maximum != nil) && in.Type != "integer" && in.Type != "number" && in.Type != "" {
		c.at(p, RuleConstraint, fmt.Sprintf("minimum/maximum apply to integer and number inputs, and %q is %s", name, in.Type), "")
	}
	if in.Minimum != nil && in.Maximum != nil && *in.Minimum > *in.Maximum {
		c.at(p+"/minimum", RuleConstraint, fmt.Sprintf("minimum %v is greater than maximum %v", *in.Minimum, *in.Maximum), "")
	}
	if (in.MinLength != nil || in.MaxLength != nil) && in.Type != "string" && in.Type != "array" && in.Type != "" {
		c.at(p, RuleConstraint, fmt.Sprintf("min_length/max_length apply to string and array inputs, and %q is %s", name, in.Type), "")
	}
	if in.MinLength != nil && in.MaxLength != nil && *in.MinLength > *in.MaxLength {
		c.at(p+"/min_length", RuleConstraint, fmt.Sprintf("min_length %d is greater than max_length %d", *in.MinLength, *in.MaxLength), "")
	}
	if in.Type == "" {
		return
	}
	bare := *in
	bare.Enum = nil
	for i, e := range in.Enum {
		if !hasType(e, in.Type) {
			c.at(fmt.Sprintf("%s/enum/%d", p, i), RuleDefault, fmt.Sprintf("enum value %v of input %q is not %s", e, name, article([]string{in.Type})), "")
			continue
		}
		for _, prob := range CheckInput(&bare, e) {
			c.at(fmt.Sprintf("%s/enum/%d", p, i), RuleConstraint, fmt.Sprintf("enum value %v of input %q can never be accepted: it %s", e, name, prob), "")
		}
	}
	if in.HasDefault && in.Default != nil {
		dp := p + "/default"
		if s, ok := in.Default.(string); ok && expr.HasExpr(s) {
			c.at(dp, RuleDefault, fmt.Sprintf("the default of input %q is a template; input defaults are literal values", name), "compute the value in a step, or use env: to read it from the environment")
			return
		}
		for _, prob := range CheckInput(in, in.Default) {
			c.add(Violation{Path: dp, Pos: c.src.ValuePos(dp), Rule: RuleDefault, Message: fmt.Sprintf("the default of input %q %s", name, prob), Actual: fmt.Sprint(in.Default)})
		}
	}
}

// ask checks a question (or form). Inside a form, field is true.
func (c *checker) ask(p string, a *Ask, field bool) {
	if a.Fields != nil {
		for _, bad := range []struct {
			name    string
			present bool
		}{{"type", a.Type != ""}, {"choices", !a.Choices.IsZero()}, {"choices_from", a.ChoicesFrom != nil}, {"pattern", a.Pattern != ""}, {"min", a.Min != nil}, {"max", a.Max != nil},
			{"default", a.Default != nil}, {"secret", a.Secret}, {"env", a.Env != ""}, {"auto", a.Auto != ""}} {
			if bad.present {
				c.add(Violation{Path: p + "/" + bad.name, Pos: c.src.KeyPos(p + "/" + bad.name), Rule: RuleConstraint,
					Message: fmt.Sprintf("%q belongs on each field of a form, not on the form", bad.name)})
			}
		}
		names := map[string]bool{}
		for i, f := range a.Fields {
			if f == nil {
				continue
			}
			fp := fmt.Sprintf("%s/fields/%d", p, i)
			if names[f.Name] {
				c.at(fp+"/name", RuleDuplicateID, fmt.Sprintf("duplicate field name %q", f.Name), "")
			}
			names[f.Name] = true
			c.ask(fp, &f.Ask, true)
		}
		return
	}
	if a.Prompt == "" && !field {
		c.at(p, RuleRequired, "a question needs a prompt (or fields, for a form)", "")
	}
	typ := a.QuestionType()
	choice := typ == "choice" || typ == "multi-choice"
	if choice && a.Choices.IsZero() && a.ChoicesFrom == nil {
		c.at(p, RuleRequired, fmt.Sprintf("a %s question needs choices (or choices_from)", typ), "")
	}
	if a.ChoicesFrom != nil {
		cp := p + "/choices_from"
		switch {
		case !a.Choices.IsZero():
			c.at(cp, RuleConstraint, "give choices or choices_from, not both", "")
		case !choice:
			c.at(cp, RuleConstraint, fmt.Sprintf("choices_from applies to choice and multi-choice questions, and this one is %s", typ), "set type: choice")
		}
		if a.ChoicesFrom.Uses != "" {
			c.action(cp, a.ChoicesFrom.Uses, a.ChoicesFrom.With)
		}
	}
	if !choice && !a.Choices.IsZero() {
		c.add(Violation{Path: p + "/choices", Pos: c.src.KeyPos(p + "/choices"), Rule: RuleConstraint,
			Message: fmt.Sprintf("choices apply to choice and multi-choice questions, and this one is %s", typ), Hint: "set type: choice"})
	}
	if a.Pattern != "" {
		if _, err := compilePattern(a.Pattern); err != nil {
			c.at(p+"/pattern", RuleRegex, fmt.Sprintf("pattern does not compile: %v", regexErr(err)), "patterns use RE2 syntax (no lookaround or backreferences)")
		} else if typ != "string" {
			c.at(p+"/pattern", RuleConstraint, fmt.Sprintf("pattern applies to string questions, and this one is %s", typ), "")
		}
	}
	if (a.Min != nil || a.Max != nil) && (typ == "boolean" || typ == "choice") {
		c.at(p, RuleConstraint, fmt.Sprintf("min/max apply to string (length), integer, number and multi-choice (picks) questions, and this one is %s", typ), "")
	}
	if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
		c.at(p+"/min", RuleConstraint, fmt.Sprintf("min %v is greater than max %v", *a.Min, *a.Max), "")
	}
	if a.Default != nil {
		if s, ok := a.Default.(string); ok && expr.HasExpr(s) {
			return // computed at run time
		}
		if a.Choices.Expr != "" || a.ChoicesFrom != nil {
			return
		}
		for _, prob := range CheckAnswer(a, a.Choices.List, a.Default) {
			c.at(p+"/default", RuleDefault, "the default "+prob, "")
		}
	}
}

func regexErr(err error) string {
	if e, ok := err.(*syntax.Error); ok {
		return fmt.Sprintf("%s in %q", e.Code, e.Expr)
	}
	return err.Error()
}

func (c *checker) outputSchema(p string, s map[string]any) {
	// schema.Compile follows $refs within the schema only: an
	// output_schema from the workflow's author never reads local files or
	// reaches the network.
	if _, err := schema.Compile(s); err != nil {
		var se *schema.SchemaError
		if errors.As(err, &se) {
			c.at(p+se.Location, RuleSchema, "output_schema is not a valid JSON Schema: "+se.Message, "")
			return
		}
		c.at(p, RuleSchema, "output_schema is not a valid JSON Schema: "+firstLine(err.Error()), "")
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		rest := strings.TrimSpace(s[i+1:])
		if rest != "" {
			return strings.TrimSpace(s[:i]) + " " + strings.Join(strings.Fields(rest), " ")
		}
		return s[:i]
	}
	return s
}

// durations checks every duration field that is not a template.
func (c *checker) durations(s *Step) {
	d := func(ptr, v string) {
		if v == "" || expr.HasExpr(v) {
			return
		}
		if _, err := ParseDuration(v); err != nil {
			c.at(ptr, RuleDuration, err.Error(), "")
		}
	}
	p := s.Path
	d(p+"/timeout", s.Timeout)
	c.retryDurations(p+"/retry", s.Retry)
	if s.Repeat != nil {
		d(p+"/repeat/every", s.Repeat.Every)
		d(p+"/repeat/timeout", s.Repeat.Timeout)
	}
	if s.Compensate != nil {
		d(p+"/compensate/timeout", s.Compensate.Timeout)
		c.retryDurations(p+"/compensate/retry", s.Compensate.Retry)
	}
	if s.Sleep != nil {
		if _, isString := lookup(c.src.Value, p+"/sleep").(string); isString {
			d(p+"/sleep", s.Sleep.Duration)
		} else {
			d(p+"/sleep/duration", s.Sleep.Duration)
		}
		if u := s.Sleep.Until; u != "" && !expr.HasExpr(u) {
			if _, err := time.Parse(time.RFC3339, u); err != nil {
				c.at(p+"/sleep/until", RuleDuration, fmt.Sprintf("until %q is not an RFC 3339 time", u), "write it like 2026-01-02T15:04:05Z")
			}
		}
	}
}

func (c *checker) retryDurations(p string, r *Retry) {
	if r == nil {
		return
	}
	var back, max time.Duration
	var err error
	if r.Backoff != "" && !expr.HasExpr(r.Backoff) {
		if back, err = ParseDuration(r.Backoff); err != nil {
			c.at(p+"/backoff", RuleDuration, err.Error(), "")
		}
	}
	if r.MaxBackoff != "" && !expr.HasExpr(r.MaxBackoff) {
		if max, err = ParseDuration(r.MaxBackoff); err != nil {
			c.at(p+"/max_backoff", RuleDuration, err.Error(), "")
		}
	}
	if back > 0 && max > 0 && back > max {
		c.at(p+"/max_backoff", RuleConstraint, fmt.Sprintf("max_backoff %s is shorter than backoff %s", r.MaxBackoff, r.Backoff), "")
	}
}

// joinAnd joins words as "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// names checks the keys of inputs or outputs: they are referenced in
// expressions (inputs.NAME), so they must be identifiers.
func (c *checker) names(field string) {
	if _, ok := lookup(c.src.Value, "/"+field).(map[string]any); !ok {
		return
	}
	for _, k := range c.src.Keys("/" + field) {
		if ident.Field.Valid(k) {
			continue
		}
		p := Pointer(field, k)
		hint := ""
		if fixed := strings.Map(func(r rune) rune {
			if r == '-' || r == ' ' || r == '.' {
				return '_'
			}
			return r
		}, k); ident.Field.Valid(fixed) {
			hint = fmt.Sprintf("did you mean %q?", fixed)
		}
		c.add(Violation{Path: p, Pos: c.src.KeyPos(p), Rule: RuleFormat, Hint: hint,
			Message: fmt.Sprintf("%s name %q is not valid: use letters, digits and _, not starting with a digit, at most 64 characters (names are referenced as %s.NAME)", strings.TrimSuffix(field, "s"), k, field)})
	}
}

// sortedKeys lists a map's keys in order, for stable violations.
func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

// concurrency checks the concurrency key: a template that reads the
// workflow's inputs only (it is evaluated before any step runs), none of
// them secret (the key is stored and shown in clear). The limit's bounds
// are the schema's.
func (c *checker) concurrency() {
	cc := c.wf.Concurrency
	if cc == nil || cc.Key == "" {
		return
	}
	const p = "/concurrency/key"
	before := len(c.out)
	c.templates(p, cc.Key, &scope{ids: map[string]*Step{}})
	if len(c.out) > before || !expr.HasExpr(cc.Key) {
		return
	}
	segs, err := expr.Scan(cc.Key)
	if err != nil {
		return
	}
	for _, sg := range segs {
		if !sg.Expr {
			continue
		}
		a, err := expr.Analyze(sg.Text)
		if err != nil {
			continue
		}
		for _, r := range a.Refs {
			switch {
			case r.Root != "inputs":
				c.at(p, RuleReference, fmt.Sprintf("the concurrency key reads inputs only, not %q", r.Root),
					"it is evaluated when the run starts, before any step")
			case len(r.Path) > 0 && c.wf.Inputs[r.Path[0]] != nil && c.wf.Inputs[r.Path[0]].Secret:
				c.at(p, RuleReference, fmt.Sprintf("the concurrency key may not read the secret input %q", r.Path[0]),
					"the key is stored and shown in clear")
			}
		}
	}
}

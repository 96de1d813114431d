package schema

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a failed validation: a tree whose leaves each name a keyword
// that failed at one place of the value.
type Error struct {
	// Keyword is the keyword that failed ("type", "required", …;
	// "false" for a false schema); "" for a schema that failed through
	// several keywords, each a cause.
	Keyword string
	// SchemaLocation is the JSON pointer of the schema holding the
	// keyword, within the compiled document.
	SchemaLocation string
	// InstanceLocation is the path to the failing value.
	InstanceLocation []string
	// Message says what is wrong, without saying where.
	Message string
	// Causes are the failures underneath: the keywords of a schema that
	// failed through several, the branches of anyOf or oneOf.
	Causes []*Error

	// Details for callers that word their own messages:
	Want    []string // type: the types allowed
	Got     string   // type: the value's type
	Value   any      // enum, const, pattern, bounds: the failing value
	Allowed []any    // enum: the values allowed; const: the one
	Limit   string   // bounds: the bound as written; pattern: the pattern
	Names   []string // required: the missing names; additionalProperties and unevaluatedProperties: the extra ones
	Matches int      // oneOf: how many branches matched
}

func (e *Error) Error() string {
	leaves := e.Leaves()
	parts := make([]string, 0, len(leaves))
	for _, l := range leaves {
		where := "/" + strings.Join(l.InstanceLocation, "/")
		if len(l.InstanceLocation) == 0 {
			where = "the value"
		}
		parts = append(parts, where+": "+l.Message)
	}
	return strings.Join(parts, "; ")
}

// Leaves are the failures without causes, in order.
func (e *Error) Leaves() []*Error {
	if len(e.Causes) == 0 {
		return []*Error{e}
	}
	var out []*Error
	for _, c := range e.Causes {
		out = append(out, c.Leaves()...)
	}
	return out
}

// Validate checks v against the schema; the error, when there is one, is
// an *Error.
func (s *Schema) Validate(v any) error {
	st := validator{annotations: s.annotations}
	e, _ := st.validate(s.root, v, nil)
	if st.applications > maxApplications {
		return &Error{Keyword: "budget", Message: fmt.Sprintf("not checked: the schema needs more than %d steps to check this value (nested anyOf, oneOf or allOf applying the same schemas again and again)", maxApplications)}
	}
	if e != nil {
		return e
	}
	return nil
}

// maxApplications bounds the schemas one Validate applies. Schemas can
// be written so that checking a value takes exponential time (anyOf of
// two branches that both fail deep down, nested thirty times): an author's
// output_schema must not hold a server for hours. Checking a 500-step
// workflow against the language schema takes about 14,000.
const maxApplications = 1_000_000

type validator struct {
	annotations bool
	// applications counts the schemas applied so far (maxApplications).
	applications int
	// applied are the schemas being applied, innermost last, with the
	// depth of the value each applies to. A schema applied again to the
	// same value without descending into it (a $ref that loops back, such
	// as {"$ref": "#"}) would recurse until the stack overflows, which
	// kills the process: validate fails it instead.
	applied []frame
}

type frame struct {
	n     *node
	depth int
}

// evaluated is what the keywords of a schema evaluated of an object or an
// array, for unevaluatedProperties and unevaluatedItems.
type evaluated struct {
	props    map[string]bool
	items    int // the items before this index
	allItems bool
	itemSet  map[int]bool
}

func (ev *evaluated) merge(o *evaluated) {
	if ev == nil || o == nil {
		return
	}
	for k := range o.props {
		if ev.props == nil {
			ev.props = map[string]bool{}
		}
		ev.props[k] = true
	}
	ev.items = max(ev.items, o.items)
	ev.allItems = ev.allItems || o.allItems
	for i := range o.itemSet {
		if ev.itemSet == nil {
			ev.itemSet = map[int]bool{}
		}
		ev.itemSet[i] = true
	}
}

func (ev *evaluated) prop(k string) {
	if ev == nil {
		return
	}
	if ev.props == nil {
		ev.props = map[string]bool{}
	}
	ev.props[k] = true
}

// at is a copy of loc with one more step.
func at(loc []string, step string) []string {
	out := make([]string, len(loc)+1)
	copy(out, loc)
	out[len(loc)] = step
	return out
}

// validate checks v, at loc, against n: the failure, and what n's
// keywords evaluated (when the schema needs to know).
func (st *validator) validate(n *node, v any, loc []string) (*Error, *evaluated) {
	if st.applications++; st.applications > maxApplications {
		return &Error{Keyword: "budget", SchemaLocation: n.loc, InstanceLocation: loc, Message: "not checked"}, nil
	}
	if n.always != nil {
		if *n.always {
			return nil, nil
		}
		return &Error{Keyword: "false", SchemaLocation: n.loc, InstanceLocation: loc, Message: "no value is allowed here"}, nil
	}
	// Depth only grows along the chain of calls, and the only keyword that
	// applies a schema to another value at the same depth, propertyNames,
	// starts a validator of its own: the frames at this depth on top of
	// the chain apply to this very value.
	for i := len(st.applied) - 1; i >= 0 && st.applied[i].depth == len(loc); i-- {
		if st.applied[i].n == n {
			return &Error{Keyword: "$ref", SchemaLocation: n.loc, InstanceLocation: loc,
				Message: fmt.Sprintf("the schema at %s applies itself to this value again (a $ref loop)", pointerText(n.loc))}, nil
		}
	}
	st.applied = append(st.applied, frame{n, len(loc)})
	defer func() { st.applied = st.applied[:len(st.applied)-1] }()
	var ev *evaluated
	if st.annotations {
		ev = &evaluated{}
	}
	f := &failures{n: n, loc: loc}
	leaf := f.leaf
	for _, r := range []*node{n.ref, n.dynRef} {
		if r != nil {
			e, sub := st.validate(r, v, loc)
			f.add(e)
			ev.merge(sub)
		}
	}
	if len(n.types) > 0 && !slices.ContainsFunc(n.types, func(t string) bool { return hasType(v, t) }) {
		e := leaf("type", "must be %s, not %s", withArticles(n.types), typeName(v))
		e.Want, e.Got = n.types, typeName(v)
	}
	if n.hasEnum && !slices.ContainsFunc(n.enum, func(x any) bool { return equal(v, x) }) {
		var want []string
		for _, x := range n.enum {
			want = append(want, render(x))
		}
		e := leaf("enum", "must be one of %s, not %s", strings.Join(want, ", "), render(v))
		e.Value, e.Allowed = v, n.enum
	}
	if n.hasConst && !equal(v, n.constVal) {
		e := leaf("const", "must be %s", render(n.constVal))
		e.Value, e.Allowed = v, []any{n.constVal}
	}
	switch x := v.(type) {
	case string:
		st.str(n, x, f)
	case map[string]any:
		st.object(n, x, loc, ev, f)
	case []any:
		st.array(n, x, loc, ev, f)
	default:
		if t := jsonType(v); t == "number" || t == "integer" {
			number(n, v, f)
		}
	}
	st.inPlace(n, v, loc, ev, f)
	switch len(f.errs) {
	case 0:
		return nil, ev
	case 1:
		return f.errs[0], ev
	}
	return &Error{SchemaLocation: n.loc, InstanceLocation: loc, Message: "several keywords failed", Causes: f.errs}, ev
}

// failures collects what failed in one schema at one place.
type failures struct {
	n    *node
	loc  []string
	errs []*Error
}

// leaf records a failed keyword of the schema.
func (f *failures) leaf(keyword, format string, args ...any) *Error {
	e := &Error{Keyword: keyword, SchemaLocation: f.n.loc, InstanceLocation: f.loc, Message: fmt.Sprintf(format, args...)}
	f.errs = append(f.errs, e)
	return e
}

// add records the failure of a subschema, if any.
func (f *failures) add(e *Error) {
	if e != nil {
		f.errs = append(f.errs, e)
	}
}

func (st *validator) str(n *node, s string, f *failures) {
	leaf := f.leaf
	if n.minLen >= 0 || n.maxLen >= 0 {
		length := utf8.RuneCountInString(s)
		if n.minLen >= 0 && length < n.minLen {
			e := leaf("minLength", "must be at least %d %s long, not %d", n.minLen, plural(n.minLen, "character", "characters"), length)
			if length == 0 {
				e.Message = "must not be empty"
			}
			e.Value, e.Limit = s, strconv.Itoa(n.minLen)
		}
		if n.maxLen >= 0 && length > n.maxLen {
			e := leaf("maxLength", "must be at most %d %s long, not %d", n.maxLen, plural(n.maxLen, "character", "characters"), length)
			e.Value, e.Limit = s, strconv.Itoa(n.maxLen)
		}
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		e := leaf("pattern", "%s does not match the pattern %s", render(s), n.pattern.String())
		e.Value, e.Limit = s, n.pattern.String()
	}
}

func number(n *node, v any, f *failures) {
	leaf := f.leaf
	bound := func(l *limit, keyword, word string, fails func(c int) bool) {
		if l != nil && fails(compare(v, *l)) {
			e := leaf(keyword, "must be %s %s, not %s", word, l.text, numberText(v))
			e.Value, e.Limit = v, l.text
		}
	}
	bound(n.min, "minimum", "at least", func(c int) bool { return c < 0 })
	bound(n.max, "maximum", "at most", func(c int) bool { return c > 0 })
	bound(n.exMin, "exclusiveMinimum", "greater than", func(c int) bool { return c <= 0 })
	bound(n.exMax, "exclusiveMaximum", "less than", func(c int) bool { return c >= 0 })
	if n.multiple != nil {
		if r := rat(v); r != nil && !new(big.Rat).Quo(r, n.multiple.r).IsInt() {
			e := leaf("multipleOf", "must be a multiple of %s, not %s", n.multiple.text, numberText(v))
			e.Value, e.Limit = v, n.multiple.text
		}
	}
}

func (st *validator) object(n *node, m map[string]any, loc []string, ev *evaluated, f *failures) {
	leaf := f.leaf
	if n.minProps >= 0 && len(m) < n.minProps {
		leaf("minProperties", "must have at least %d %s, not %d", n.minProps, plural(n.minProps, "property", "properties"), len(m))
	}
	if n.maxProps >= 0 && len(m) > n.maxProps {
		leaf("maxProperties", "must have at most %d %s, not %d", n.maxProps, plural(n.maxProps, "property", "properties"), len(m))
	}
	var missing []string
	for _, r := range n.required {
		if _, ok := m[r]; !ok {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		e := leaf("required", "missing required %s %s", plural(len(missing), "property", "properties"), quoted(missing))
		e.Names = missing
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if deps, ok := n.depReq[k]; ok {
			var lacking []string
			for _, d := range deps {
				if _, ok := m[d]; !ok {
					lacking = append(lacking, d)
				}
			}
			if len(lacking) > 0 {
				e := leaf("dependentRequired", "%q requires %s", k, quoted(lacking))
				e.Names = lacking
			}
		}
	}
	if n.propNames != nil {
		for _, k := range keys {
			names := validator{annotations: st.annotations} // k is another value at the same depth
			if e, _ := names.validate(n.propNames, k, loc); e != nil {
				var msgs []string
				for _, l := range e.Leaves() {
					msgs = append(msgs, l.Message)
				}
				pe := leaf("propertyNames", "property name %q is not allowed: %s", k, strings.Join(msgs, "; "))
				pe.Value = k
			}
		}
	}
	var extra []string
	if n.props != nil || n.patProps != nil || n.addProps != nil {
		for _, k := range keys {
			matched := false
			if p, ok := n.props[k]; ok {
				matched = true
				e, _ := st.validate(p, m[k], at(loc, k))
				f.add(e)
			}
			for _, pp := range n.patProps {
				if pp.re.MatchString(k) {
					matched = true
					e, _ := st.validate(pp.node, m[k], at(loc, k))
					f.add(e)
				}
			}
			if matched {
				ev.prop(k)
				continue
			}
			if n.addProps == nil {
				continue
			}
			ev.prop(k)
			if isFalse(n.addProps) {
				extra = append(extra, k)
				continue
			}
			e, _ := st.validate(n.addProps, m[k], at(loc, k))
			f.add(e)
		}
	}
	if len(extra) > 0 {
		e := leaf("additionalProperties", "unknown %s %s", plural(len(extra), "property", "properties"), quoted(extra))
		e.Names = extra
	}
	for _, k := range keys {
		if d, ok := n.depSchema[k]; ok {
			e, sub := st.validate(d, m, loc)
			f.add(e)
			ev.merge(sub)
		}
	}
}

func (st *validator) array(n *node, a []any, loc []string, ev *evaluated, f *failures) {
	leaf := f.leaf
	if n.minItems >= 0 && len(a) < n.minItems {
		e := leaf("minItems", "must have at least %d %s, not %d", n.minItems, plural(n.minItems, "item", "items"), len(a))
		e.Limit = strconv.Itoa(n.minItems)
	}
	if n.maxItems >= 0 && len(a) > n.maxItems {
		e := leaf("maxItems", "must have at most %d %s, not %d", n.maxItems, plural(n.maxItems, "item", "items"), len(a))
		e.Limit = strconv.Itoa(n.maxItems)
	}
	if n.unique {
	dup:
		for i := range a {
			for j := i + 1; j < len(a); j++ {
				if equal(a[i], a[j]) {
					leaf("uniqueItems", "items %d and %d are equal: items must be unique", i, j)
					break dup
				}
			}
		}
	}
	for i, item := range a {
		var s *node
		switch {
		case i < len(n.prefix):
			s = n.prefix[i]
		case n.items != nil:
			s = n.items
		default:
			continue
		}
		e, _ := st.validate(s, item, at(loc, strconv.Itoa(i)))
		f.add(e)
	}
	if ev != nil {
		ev.items = max(ev.items, min(len(a), len(n.prefix)))
		if n.items != nil {
			ev.allItems = true
		}
	}
	if n.contains != nil {
		matched := 0
		for i, item := range a {
			if e, _ := st.validate(n.contains, item, at(loc, strconv.Itoa(i))); e == nil {
				matched++
				if ev != nil {
					if ev.itemSet == nil {
						ev.itemSet = map[int]bool{}
					}
					ev.itemSet[i] = true
				}
			}
		}
		least := 1
		if n.minCont >= 0 {
			least = n.minCont
		}
		if matched < least {
			if least == 1 {
				leaf("contains", "no item matches the schema at %s", pointerText(n.loc+"/contains"))
			} else {
				leaf("minContains", "at least %d items must match the schema at %s, not %d", least, pointerText(n.loc+"/contains"), matched)
			}
		}
		if n.maxCont >= 0 && matched > n.maxCont {
			leaf("maxContains", "at most %d items may match the schema at %s, not %d", n.maxCont, pointerText(n.loc+"/contains"), matched)
		}
	}
}

// inPlace applies the keywords that apply subschemas to the value itself:
// allOf, anyOf, oneOf, not, if/then/else, then the unevaluated keywords,
// which see what all the others evaluated.
func (st *validator) inPlace(n *node, v any, loc []string, ev *evaluated, f *failures) {
	leaf := f.leaf
	for _, s := range n.allOf {
		e, sub := st.validate(s, v, loc)
		f.add(e)
		ev.merge(sub)
	}
	if len(n.anyOf) > 0 {
		var causes []*Error
		passed := false
		for _, s := range n.anyOf {
			e, sub := st.validate(s, v, loc)
			if e == nil {
				passed = true
				ev.merge(sub)
				if ev == nil {
					break
				}
				continue
			}
			causes = append(causes, e)
		}
		if !passed {
			f.add(&Error{Keyword: "anyOf", SchemaLocation: n.loc, InstanceLocation: loc,
				Message: "must match at least one of the allowed forms", Causes: causes})
		}
	}
	if len(n.oneOf) > 0 {
		var causes []*Error
		var matches []int
		var subs []*evaluated
		for i, s := range n.oneOf {
			e, sub := st.validate(s, v, loc)
			if e == nil {
				matches = append(matches, i)
				subs = append(subs, sub)
				continue
			}
			causes = append(causes, e)
		}
		switch len(matches) {
		case 0:
			f.add(&Error{Keyword: "oneOf", SchemaLocation: n.loc, InstanceLocation: loc,
				Message: "must match exactly one of the allowed forms", Causes: causes})
		case 1:
			ev.merge(subs[0])
		default:
			var which []string
			for _, i := range matches {
				which = append(which, strconv.Itoa(i))
			}
			e := leaf("oneOf", "must match exactly one of the allowed forms, but matches %d of them (%s)", len(matches), strings.Join(which, ", "))
			e.Matches = len(matches)
		}
	}
	if n.not != nil {
		if e, _ := st.validate(n.not, v, loc); e == nil {
			leaf("not", "must not match the schema at %s", pointerText(n.loc+"/not"))
		}
	}
	if n.ifS != nil {
		e, sub := st.validate(n.ifS, v, loc)
		branch := n.elseS
		if e == nil {
			ev.merge(sub)
			branch = n.thenS
		}
		if branch != nil {
			e, sub := st.validate(branch, v, loc)
			f.add(e)
			ev.merge(sub)
		}
	}
	if n.unevProps != nil {
		if m, ok := v.(map[string]any); ok {
			st.unevaluatedProps(n, m, loc, ev, f)
		}
	}
	if n.unevItems != nil {
		if a, ok := v.([]any); ok {
			for i, item := range a {
				if ev.allItems || i < ev.items || ev.itemSet[i] {
					continue
				}
				e, _ := st.validate(n.unevItems, item, at(loc, strconv.Itoa(i)))
				f.add(e)
			}
			ev.allItems = true
		}
	}
}

func (st *validator) unevaluatedProps(n *node, m map[string]any, loc []string, ev *evaluated, f *failures) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if !ev.props[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var extra []string
	for _, k := range keys {
		if isFalse(n.unevProps) {
			extra = append(extra, k)
		} else {
			e, _ := st.validate(n.unevProps, m[k], at(loc, k))
			f.add(e)
		}
		ev.prop(k)
	}
	if len(extra) > 0 {
		e := f.leaf("unevaluatedProperties", "unknown %s %s", plural(len(extra), "property", "properties"), quoted(extra))
		e.Names = extra
	}
}

func isFalse(n *node) bool { return n.always != nil && !*n.always }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func quoted(names []string) string {
	q := make([]string, len(names))
	for i, s := range names {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// withArticles names types for a message: "a string or an array".
func withArticles(types []string) string {
	out := make([]string, len(types))
	for i, t := range types {
		switch t {
		case "null":
			out[i] = "null"
		case "array", "object", "integer":
			out[i] = "an " + t
		default:
			out[i] = "a " + t
		}
	}
	return strings.Join(out, " or ")
}

func pointerText(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

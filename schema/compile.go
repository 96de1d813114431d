// Package schema compiles and validates JSON Schema documents: draft
// 2020-12 by default, drafts 4 to 2019-09 when a schema's $schema names
// them. It replaces a general-purpose library whose package initializer
// compiled every draft's metaschema on each start of the binary (12 ms and
// 3 MB resident on every `stepwise` command): here a schema's validity is
// checked keyword by keyword when it is compiled, and nothing runs before
// a schema is first used.
//
// References resolve within the document only ($ref by JSON pointer,
// $anchor or an embedded $id): a schema written by a workflow's author
// never reads files or the network. "format" is an annotation, as draft
// 2020-12 says by default.
package schema

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Draft versions.
const (
	draft4    = 4
	draft6    = 6
	draft7    = 7
	draft2019 = 2019
	draft2020 = 2020
)

// drafts maps a $schema URI, without its scheme and trailing "#" or "/",
// to its version.
var drafts = map[string]int{
	"json-schema.org/draft-04/schema":      draft4,
	"json-schema.org/draft-06/schema":      draft6,
	"json-schema.org/draft-07/schema":      draft7,
	"json-schema.org/draft/2019-09/schema": draft2019,
	"json-schema.org/draft/2020-12/schema": draft2020,
	"json-schema.org/schema":               draft2020,
	"json-schema.org/draft/next/schema":    draft2020,
}

// SchemaError says why a document is not a valid JSON Schema: at Location
// (a JSON pointer into the schema), Message.
type SchemaError struct {
	Location string
	Message  string
}

func (e *SchemaError) Error() string {
	if e.Location == "" {
		return "invalid schema: " + e.Message
	}
	return fmt.Sprintf("invalid schema at %s: %s", e.Location, e.Message)
}

// Schema is a compiled JSON Schema. It is safe for concurrent use.
type Schema struct {
	root *node
	// annotations is set when some keyword needs to know which properties
	// or items others evaluated (unevaluatedProperties, unevaluatedItems).
	annotations bool
}

// node is one compiled (sub)schema.
type node struct {
	loc string // JSON pointer of the schema in its document

	always *bool // a boolean schema

	types     []string
	enum      []any
	hasEnum   bool
	constVal  any
	hasConst  bool
	multiple  *limit
	max, min  *limit
	exMax     *limit
	exMin     *limit
	maxLen    int
	minLen    int
	maxItems  int
	minItems  int
	maxProps  int
	minProps  int
	maxCont   int
	minCont   int
	unique    bool
	pattern   *regexp.Regexp
	required  []string
	depReq    map[string][]string
	props     map[string]*node
	patProps  []patternNode
	addProps  *node
	propNames *node
	prefix    []*node
	items     *node // after prefix
	contains  *node
	allOf     []*node
	anyOf     []*node
	oneOf     []*node
	not       *node
	ifS       *node
	thenS     *node
	elseS     *node
	depSchema map[string]*node
	unevProps *node
	unevItems *node
	ref       *node
	dynRef    *node
}

type patternNode struct {
	re   *regexp.Regexp
	node *node
}

// Compile compiles a schema document: decoded JSON (or YAML decoded into
// the same model). It returns a *SchemaError when doc is not a valid
// schema, naming the first offending place.
func Compile(doc any) (*Schema, error) {
	c := &compiler{doc: doc, bases: map[string]string{}, resources: map[string]string{}, anchors: map[string]string{}, nodes: map[string]*node{}, regexps: map[string]*regexp.Regexp{}}
	c.draft = draft2020
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok {
			key := strings.TrimRight(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "#/")
			d, known := drafts[key]
			if !known {
				return nil, &SchemaError{Location: "/$schema", Message: fmt.Sprintf("unknown $schema %q (drafts 4, 6, 7, 2019-09 and 2020-12 are known)", s)}
			}
			c.draft = d
		}
	}
	// The base URI must be written as url.URL.String renders a resolved
	// reference ("stepwise:///…", with the empty authority): resolve looks
	// resources up by the String of base.Parse(ref), and "stepwise:/…"
	// would never match it, so that no $ref, not even "#", resolved.
	root, err := url.Parse("stepwise:///schema.json")
	if err != nil {
		return nil, err
	}
	if err := c.scan(doc, "", root); err != nil {
		return nil, err
	}
	n, err := c.compile("")
	if err != nil {
		return nil, err
	}
	return &Schema{root: n, annotations: c.unevaluated}, nil
}

// MustCompile is Compile for schemas the program itself holds: it panics
// on an invalid one.
func MustCompile(doc any) *Schema {
	s, err := Compile(doc)
	if err != nil {
		panic(err)
	}
	return s
}

// compiler holds what compiling one document needs.
type compiler struct {
	doc   any
	draft int
	// bases maps the pointer of every schema position to its base URI.
	bases map[string]string
	// resources maps a resource's absolute URI (no fragment) to its
	// pointer; anchors maps URI#anchor to a pointer.
	resources map[string]string
	anchors   map[string]string
	nodes     map[string]*node
	// regexps holds the patterns the scan compiled to check them, for
	// the nodes that use them.
	regexps map[string]*regexp.Regexp

	unevaluated bool
}

// regexp compiles a pattern once per document.
func (c *compiler) regexp(src string) (*regexp.Regexp, error) {
	if re, ok := c.regexps[src]; ok {
		return re, nil
	}
	re, err := regexp.Compile(src)
	if err == nil {
		c.regexps[src] = re
	}
	return re, err
}

// subschema keywords by how their value holds schemas.
var (
	oneSchema = map[string]bool{"additionalProperties": true, "propertyNames": true, "contains": true, "not": true,
		"if": true, "then": true, "else": true, "unevaluatedProperties": true, "unevaluatedItems": true, "additionalItems": true}
	schemaMap   = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}
	schemaArray = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
	typeNames   = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "integer": true, "string": true}
	// anchorName is compiled when a schema first has an $anchor, not when
	// the program starts.
	anchorName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][-A-Za-z0-9._]*$`) })
)

// fail is a SchemaError at ptr.
func fail(ptr, format string, args ...any) error {
	return &SchemaError{Location: ptr, Message: fmt.Sprintf(format, args...)}
}

// scan checks the schema at ptr keyword by keyword, records its base URI,
// $id and $anchor, and scans its subschemas.
func (c *compiler) scan(v any, ptr string, base *url.URL) error {
	if _, ok := v.(bool); ok {
		c.bases[ptr] = base.String()
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fail(ptr, "a schema must be an object or a boolean, not %s", typeName(v))
	}
	idKey := "$id"
	if c.draft == draft4 {
		idKey = "id"
	}
	if id, ok := m[idKey]; ok {
		s, isString := id.(string)
		if !isString {
			return fail(ptr+"/"+escape(idKey), "%s must be a string", idKey)
		}
		if i := strings.IndexByte(s, '#'); c.draft >= draft2019 && i >= 0 && i < len(s)-1 {
			return fail(ptr+"/$id", "$id %q must not have a fragment (name a schema with $anchor)", s)
		}
		_, hasRef := m["$ref"]
		if !(hasRef && c.draft <= draft7) {
			u, err := base.Parse(s)
			if err != nil {
				return fail(ptr+"/"+escape(idKey), "%s %q is not a URI reference", idKey, s)
			}
			frag := u.Fragment
			if !strings.HasPrefix(s, "#") {
				u.Fragment, u.RawFragment = "", ""
				base = u
				c.resources[u.String()] = ptr
			}
			if frag != "" && c.draft <= draft7 {
				// Before 2019-09, {"$id": "#name"} names the schema as
				// {"$anchor": "name"} does since.
				c.anchors[base.String()+"#"+frag] = ptr
			}
		}
	}
	if a, ok := m["$anchor"]; ok {
		s, isString := a.(string)
		if !isString || !anchorName().MatchString(s) {
			return fail(ptr+"/$anchor", "$anchor must be a name: a letter or _ then letters, digits, -, _ or .")
		}
		c.anchors[base.String()+"#"+s] = ptr
	}
	if a, ok := m["$dynamicAnchor"].(string); ok {
		c.anchors[base.String()+"#"+a] = ptr
	}
	c.bases[ptr] = base.String()
	if ptr == "" {
		c.resources[base.String()] = ""
	}
	if err := c.checkKeywords(m, ptr); err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		sub := m[k]
		at := ptr + "/" + escape(k)
		switch {
		case oneSchema[k] || (k == "items" && !isArray(sub)):
			if err := c.scan(sub, at, base); err != nil {
				return err
			}
		case k == "items" || schemaArray[k]:
			for i, s := range sub.([]any) {
				if err := c.scan(s, at+"/"+strconv.Itoa(i), base); err != nil {
					return err
				}
			}
		case schemaMap[k] || (k == "dependencies" && c.draft <= draft2019):
			sm := sub.(map[string]any)
			for _, name := range sortedKeys(sm) {
				if k == "dependencies" && isArray(sm[name]) {
					continue
				}
				if err := c.scan(sm[name], at+"/"+escape(name), base); err != nil {
					return err
				}
			}
		}
		if k == "unevaluatedProperties" || k == "unevaluatedItems" {
			c.unevaluated = true
		}
	}
	return nil
}

func isArray(v any) bool { _, ok := v.([]any); return ok }

// checkKeywords checks the value of every keyword the validator knows.
func (c *compiler) checkKeywords(m map[string]any, ptr string) error {
	for _, k := range sortedKeys(m) {
		v := m[k]
		at := ptr + "/" + escape(k)
		switch k {
		case "type":
			names, ok := stringList(v)
			if s, isString := v.(string); isString {
				names, ok = []string{s}, true
			}
			if !ok || len(names) == 0 { // every draft's metaschema wants at least one
				return fail(at, "type must be a type name or a list of them")
			}
			for _, n := range names {
				if !typeNames[n] {
					return fail(at, "type %q is not one of array, boolean, integer, null, number, object, string", n)
				}
			}
			if hasDuplicate(names) {
				return fail(at, "type lists a type twice")
			}
		case "enum":
			if !isArray(v) {
				return fail(at, "enum must be a list of values")
			}
		case "multipleOf":
			l, ok := newLimit(v)
			if !ok || l.r.Sign() <= 0 {
				return fail(at, "multipleOf must be a number greater than 0")
			}
		case "maximum", "minimum":
			if _, ok := newLimit(v); !ok {
				return fail(at, "%s must be a number", k)
			}
		case "exclusiveMaximum", "exclusiveMinimum":
			_, isBool := v.(bool)
			_, isNumber := newLimit(v)
			if c.draft == draft4 && !isBool {
				return fail(at, "%s must be true or false in draft 4", k)
			}
			if c.draft > draft4 && !isNumber {
				return fail(at, "%s must be a number", k)
			}
		case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains", "minContains":
			if _, ok := count(v); !ok {
				return fail(at, "%s must be a whole number, 0 or more", k)
			}
		case "pattern":
			s, ok := v.(string)
			if !ok {
				return fail(at, "pattern must be a string")
			}
			if _, err := c.regexp(s); err != nil {
				return fail(at, "pattern %q is not a valid regular expression: %v", s, err)
			}
		case "patternProperties":
			sm, ok := v.(map[string]any)
			if !ok {
				return fail(at, "patternProperties must be an object of schemas")
			}
			for p := range sm {
				if _, err := c.regexp(p); err != nil {
					return fail(at+"/"+escape(p), "%q is not a valid regular expression: %v", p, err)
				}
			}
		case "required":
			names, ok := stringList(v)
			if !ok || (c.draft == draft4 && len(names) == 0) {
				return fail(at, "required must be a list of property names")
			}
			if hasDuplicate(names) {
				return fail(at, "required lists a property twice")
			}
		case "dependentRequired":
			sm, ok := v.(map[string]any)
			if !ok {
				return fail(at, "dependentRequired must be an object of lists of property names")
			}
			for name, list := range sm {
				if names, ok := stringList(list); !ok || hasDuplicate(names) {
					return fail(at+"/"+escape(name), "must be a list of distinct property names")
				}
			}
		case "dependencies":
			sm, ok := v.(map[string]any)
			if !ok {
				return fail(at, "dependencies must be an object")
			}
			for name, d := range sm {
				if isArray(d) {
					if _, ok := stringList(d); !ok {
						return fail(at+"/"+escape(name), "must be a list of property names or a schema")
					}
				}
			}
		case "properties", "$defs", "definitions", "dependentSchemas":
			if _, ok := v.(map[string]any); !ok {
				return fail(at, "%s must be an object of schemas", k)
			}
		case "items":
			if isArray(v) && c.draft >= draft2020 {
				return fail(at, "items must be a schema (a list of schemas is prefixItems since draft 2020-12)")
			}
		case "allOf", "anyOf", "oneOf", "prefixItems":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return fail(at, "%s must be a non-empty list of schemas", k)
			}
		case "uniqueItems":
			if _, ok := v.(bool); !ok {
				return fail(at, "uniqueItems must be true or false")
			}
		case "$ref", "$dynamicRef", "$comment", "title", "description", "format", "$schema":
			if _, ok := v.(string); !ok {
				return fail(at, "%s must be a string", k)
			}
		case "readOnly", "writeOnly", "deprecated":
			if _, ok := v.(bool); !ok {
				return fail(at, "%s must be true or false", k)
			}
		case "examples":
			if !isArray(v) {
				return fail(at, "examples must be a list")
			}
		}
	}
	return nil
}

// count reads a non-negative whole number.
func count(v any) (int, bool) {
	l, ok := newLimit(v)
	if !ok || !l.r.IsInt() || l.r.Sign() < 0 {
		return 0, false
	}
	if !l.r.Num().IsInt64() || l.r.Num().Int64() > 1<<31 {
		return 1 << 31, true
	}
	return int(l.r.Num().Int64()), true
}

// stringList reads a list of strings.
func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	return nil, false
}

func hasDuplicate(names []string) bool {
	s := slices.Clone(names)
	slices.Sort(s)
	return len(slices.Compact(s)) != len(names)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escape escapes a JSON pointer token.
func escape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// unescape undoes escape.
func unescape(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// at returns the value at a JSON pointer of the document.
func (c *compiler) at(ptr string) (any, bool) {
	if ptr == "" {
		return c.doc, true
	}
	tokens := strings.Split(ptr[1:], "/")
	for i, tok := range tokens {
		tokens[i] = unescape(tok)
	}
	return valueAt(c.doc, tokens)
}

// valueAt returns the value at a path (unescaped pointer tokens) of v.
func valueAt(v any, path []string) (any, bool) {
	for _, tok := range path {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[tok]
			if !ok {
				return nil, false
			}
			v = e
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// baseOf is the base URI at a pointer: its own, or its nearest scanned
// ancestor's (a $ref may point into a place the scan did not know as a
// schema, such as an unknown keyword).
func (c *compiler) baseOf(ptr string) string {
	for {
		if b, ok := c.bases[ptr]; ok {
			return b
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return c.bases[""]
		}
		ptr = ptr[:i]
	}
}

// resolve finds the pointer a reference names, from the schema at ptr.
func (c *compiler) resolve(ref, ptr string) (string, error) {
	base, err := url.Parse(c.baseOf(ptr))
	if err != nil {
		return "", err
	}
	u, err := base.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("$ref %q is not a URI reference", ref)
	}
	frag := u.Fragment
	u.Fragment, u.RawFragment = "", ""
	res, ok := c.resources[u.String()]
	if !ok {
		return "", fmt.Errorf("$ref %q points outside this schema (only references within it are followed)", ref)
	}
	switch {
	case frag == "":
		return res, nil
	case strings.HasPrefix(frag, "/"):
		return res + frag, nil
	}
	target, ok := c.anchors[u.String()+"#"+frag]
	if !ok {
		return "", fmt.Errorf("$ref %q: no $anchor %q", ref, frag)
	}
	return target, nil
}

// compile compiles the schema at ptr once; references to it share the node.
func (c *compiler) compile(ptr string) (*node, error) {
	if n, ok := c.nodes[ptr]; ok {
		return n, nil
	}
	v, ok := c.at(ptr)
	if !ok {
		return nil, fail(ptr, "nothing at this location")
	}
	n := &node{loc: ptr, maxLen: -1, minLen: -1, maxItems: -1, minItems: -1, maxProps: -1, minProps: -1, maxCont: -1, minCont: -1}
	c.nodes[ptr] = n
	if b, ok := v.(bool); ok {
		n.always = &b
		return n, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fail(ptr, "a schema must be an object or a boolean, not %s", typeName(v))
	}
	if _, scanned := c.bases[ptr]; !scanned {
		// Reached only through a $ref into a place that is not a schema
		// keyword: check it as the scan checks schemas.
		base, err := url.Parse(c.baseOf(ptr))
		if err != nil {
			return nil, err
		}
		if err := c.scan(m, ptr, base); err != nil {
			return nil, err
		}
	}
	sub := func(k string) (*node, error) { return c.compile(ptr + "/" + escape(k)) }
	var err error
	for _, k := range sortedKeys(m) {
		v := m[k]
		if c.draft <= draft7 && k != "$ref" && m["$ref"] != nil && k != "definitions" && k != "$defs" {
			continue // before 2019-09, $ref's siblings are ignored
		}
		switch k {
		case "type":
			if s, ok := v.(string); ok {
				n.types = []string{s}
			} else {
				n.types, _ = stringList(v)
			}
		case "enum":
			n.enum, n.hasEnum = v.([]any), true
		case "const":
			n.constVal, n.hasConst = v, true
		case "multipleOf":
			l, _ := newLimit(v)
			n.multiple = &l
		case "maximum", "minimum":
			l, _ := newLimit(v)
			if k == "maximum" {
				n.max = &l
			} else {
				n.min = &l
			}
		case "exclusiveMaximum", "exclusiveMinimum":
			if b, ok := v.(bool); ok { // draft 4: the bound beside it is exclusive
				if b && k == "exclusiveMaximum" && m["maximum"] != nil {
					l, _ := newLimit(m["maximum"])
					n.exMax = &l
				}
				if b && k == "exclusiveMinimum" && m["minimum"] != nil {
					l, _ := newLimit(m["minimum"])
					n.exMin = &l
				}
				continue
			}
			l, _ := newLimit(v)
			if k == "exclusiveMaximum" {
				n.exMax = &l
			} else {
				n.exMin = &l
			}
		case "maxLength":
			n.maxLen, _ = count(v)
		case "minLength":
			n.minLen, _ = count(v)
		case "maxItems":
			n.maxItems, _ = count(v)
		case "minItems":
			n.minItems, _ = count(v)
		case "maxProperties":
			n.maxProps, _ = count(v)
		case "minProperties":
			n.minProps, _ = count(v)
		case "maxContains":
			if c.draft >= draft2019 {
				n.maxCont, _ = count(v)
			}
		case "minContains":
			if c.draft >= draft2019 {
				n.minCont, _ = count(v)
			}
		case "uniqueItems":
			n.unique = v.(bool)
		case "pattern":
			n.pattern = c.regexps[v.(string)] // compiled by the scan
		case "required":
			n.required, _ = stringList(v)
		case "dependentRequired":
			if c.draft < draft2019 {
				continue
			}
			n.depReq = map[string][]string{}
			for name, list := range v.(map[string]any) {
				n.depReq[name], _ = stringList(list)
			}
		case "dependencies":
			if c.draft > draft2019 {
				continue
			}
			for name, d := range v.(map[string]any) {
				if names, ok := stringList(d); ok {
					if n.depReq == nil {
						n.depReq = map[string][]string{}
					}
					n.depReq[name] = names
					continue
				}
				if n.depSchema == nil {
					n.depSchema = map[string]*node{}
				}
				if n.depSchema[name], err = c.compile(ptr + "/dependencies/" + escape(name)); err != nil {
					return nil, err
				}
			}
		case "properties", "patternProperties", "dependentSchemas":
			if k == "dependentSchemas" && c.draft < draft2019 {
				continue
			}
			sm := v.(map[string]any)
			for _, name := range sortedKeys(sm) {
				sn, err := c.compile(ptr + "/" + k + "/" + escape(name))
				if err != nil {
					return nil, err
				}
				switch k {
				case "properties":
					if n.props == nil {
						n.props = map[string]*node{}
					}
					n.props[name] = sn
				case "patternProperties":
					n.patProps = append(n.patProps, patternNode{re: c.regexps[name], node: sn})
				default:
					if n.depSchema == nil {
						n.depSchema = map[string]*node{}
					}
					n.depSchema[name] = sn
				}
			}
		case "items":
			if list, ok := v.([]any); ok { // before 2020-12: a list is the leading items
				n.prefix, err = c.list(ptr+"/items", len(list))
				if err == nil && m["additionalItems"] != nil {
					n.items, err = c.compile(ptr + "/additionalItems")
				}
				continue
			}
			n.items, err = sub(k)
		case "prefixItems":
			if c.draft >= draft2020 {
				n.prefix, err = c.list(ptr+"/prefixItems", len(v.([]any)))
			}
		case "allOf":
			n.allOf, err = c.list(ptr+"/allOf", len(v.([]any)))
		case "anyOf":
			n.anyOf, err = c.list(ptr+"/anyOf", len(v.([]any)))
		case "oneOf":
			n.oneOf, err = c.list(ptr+"/oneOf", len(v.([]any)))
		case "$ref", "$dynamicRef", "$recursiveRef":
			target, rerr := c.resolve(v.(string), ptr)
			if rerr != nil {
				return nil, fail(ptr+"/"+escape(k), "%v", rerr)
			}
			if _, ok := c.at(target); !ok {
				// Blame the reference, not the place it names.
				return nil, fail(ptr+"/"+escape(k), "$ref %q points to nothing in this schema", v)
			}
			var t *node
			if t, err = c.compile(target); err == nil {
				if k == "$ref" {
					n.ref = t
				} else {
					n.dynRef = t
				}
			}
		default:
			if f, ok := singleSchema[k]; ok && c.draft >= f.since {
				*f.field(n), err = sub(k)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if n.ifS == nil {
		n.thenS, n.elseS = nil, nil // then and else mean nothing without if
	}
	return n, nil
}

// singleSchema are the keywords whose value is one subschema (besides
// items, which may be a list): the field of the node each sets and the
// first draft that knows it.
var singleSchema = map[string]struct {
	since int
	field func(*node) **node
}{
	"additionalProperties":  {draft4, func(n *node) **node { return &n.addProps }},
	"propertyNames":         {draft6, func(n *node) **node { return &n.propNames }},
	"contains":              {draft6, func(n *node) **node { return &n.contains }},
	"not":                   {draft4, func(n *node) **node { return &n.not }},
	"if":                    {draft7, func(n *node) **node { return &n.ifS }},
	"then":                  {draft7, func(n *node) **node { return &n.thenS }},
	"else":                  {draft7, func(n *node) **node { return &n.elseS }},
	"unevaluatedProperties": {draft2019, func(n *node) **node { return &n.unevProps }},
	"unevaluatedItems":      {draft2019, func(n *node) **node { return &n.unevItems }},
}

// list compiles the n schemas of a list keyword.
func (c *compiler) list(ptr string, n int) ([]*node, error) {
	out := make([]*node, n)
	for i := range n {
		var err error
		if out[i], err = c.compile(ptr + "/" + strconv.Itoa(i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

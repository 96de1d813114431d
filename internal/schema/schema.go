// Package schema compiles and validates JSON Schema documents with
// github.com/santhosh-tekuri/jsonschema/v6 (draft 2020-12 by default,
// drafts 4 to 2019-09 when a schema's $schema names them) and words its
// failures for stepwise: an *Error tree whose leaves name a keyword, the
// place in the value, and the details callers word their own messages
// from.
//
// What it adds to the library: references resolve within the document
// only (a schema written by a workflow's author never reads files or the
// network; the drafts' metaschemas, which the library embeds, are the one
// exception); "format" is an annotation in every draft, as draft 2020-12
// says by default; and the work of one Validate is bounded, since schemas
// can be written so that checking a value takes exponential time.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaError says why a document is not a valid JSON Schema: at Location
// (a JSON pointer into the schema), Message.
type SchemaError struct {
	Location string
	Message  string
	// Err is the cause when there is one to test with errors.Is:
	// ErrRemoteRef.
	Err error
}

// ErrRemoteRef is the cause of a *SchemaError for a reference to another
// document (a file, a URL): references are followed within the schema only.
var ErrRemoteRef = errors.New("only references within the schema are followed")

func (e *SchemaError) Unwrap() error { return e.Err }

func (e *SchemaError) Error() string {
	if e.Location == "" {
		return "invalid schema: " + e.Message
	}
	return fmt.Sprintf("invalid schema at %s: %s", e.Location, e.Message)
}

// Schema is a compiled JSON Schema. It is safe for concurrent use; the
// validations of one Schema run one at a time (they share its step count).
type Schema struct {
	compiled *jsonschema.Schema
	doc      any // for the order of "type" lists in messages

	mu    sync.Mutex
	steps int // schemas applied by the running Validate
}

// base is the URI of every compiled document: relative $ids and $refs
// resolve against it.
const base = "stepwise:///schema.json"

// maxApplications bounds the schemas one Validate applies. Schemas can
// be written so that checking a value takes exponential time (anyOf of
// two branches that both fail deep down, nested thirty times): an author's
// output_schema must not hold a server for hours. Checking a 500-step
// workflow against the language schema takes about 17,000 (20 ms on the
// 2-core machine); reaching the bound with failures, which allocate their
// errors, about 1.5 s.
const maxApplications = 1_000_000

// budgetExceeded is what the step counter panics with past
// maxApplications; Validate recovers it.
type budgetExceeded struct{}

// counter is a schema extension in every compiled (sub)schema: the library
// calls it each time it has applied that schema, so it counts the steps of
// a validation and stops one that goes past the budget. A step is one
// application of a schema, as is each of its subschemas': those that fail
// on their type, const or enum return before their own extension runs, so
// each application counts its subschemas' too (at most: a subschema of
// items applies once per item, one of properties once per member).
type counter struct {
	s *Schema
	// inPlace counts the subschemas applied to the value itself (allOf,
	// anyOf, oneOf, not, if, then, else, references, dependentSchemas);
	// perMember those applied to each member or item (patternProperties,
	// additionalProperties, propertyNames, unevaluatedProperties, items,
	// contains, unevaluatedItems), named those applied to one each
	// (properties, prefixItems).
	inPlace, perMember, named int
}

func (c counter) Validate(_ *jsonschema.ValidatorContext, v any) {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		n = len(x)
	case []any:
		n = len(x)
	}
	if c.s.steps += 1 + c.inPlace + c.perMember*n + min(c.named, n); c.s.steps > maxApplications {
		panic(budgetExceeded{})
	}
}

// newCounter is the counter of a schema object.
func newCounter(s *Schema, obj map[string]any) counter {
	c := counter{s: s}
	size := func(v any) int {
		switch x := v.(type) {
		case []any:
			return len(x)
		case map[string]any:
			return len(x)
		}
		return 1
	}
	for k, v := range obj {
		switch k {
		case "allOf", "anyOf", "oneOf", "dependentSchemas", "dependencies":
			c.inPlace += size(v)
		case "not", "if", "then", "else", "$ref", "$dynamicRef", "$recursiveRef":
			c.inPlace++
		case "patternProperties":
			c.perMember += size(v)
		case "additionalProperties", "propertyNames", "unevaluatedProperties", "contains", "unevaluatedItems", "additionalItems":
			c.perMember++
		case "items":
			if _, list := v.([]any); list {
				c.named += size(v)
			} else {
				c.perMember++
			}
		case "properties", "prefixItems":
			c.named += size(v)
		}
	}
	return c
}

// refuse is the loader of references to other documents: there are none.
type refuse struct{}

func (refuse) Load(string) (any, error) { return nil, ErrRemoteRef }

// annotationOnly are the formats the library asserts for drafts before
// 2019-09; registered as checking nothing, "format" stays an annotation.
var annotationOnly = []string{"date-time", "date", "time", "duration", "period", "email", "idn-email", "hostname",
	"idn-hostname", "ipv4", "ipv6", "uri", "uri-reference", "iri", "iri-reference", "uri-template", "json-pointer",
	"relative-json-pointer", "uuid", "regex", "semver"}

// annotationVocabs is the metaschema of the vocabularies a schema of
// draft 2019-09 or 2020-12 is checked against besides the library's
// default ones: with a vocabulary of its own registered (the step
// counter), the library checks only the core, applicator, unevaluated
// and validation vocabularies, and "title": 1 would pass.
func annotationVocabs(doc any) *jsonschema.Schema {
	m, _ := doc.(map[string]any)
	uri, _ := m["$schema"].(string)
	switch {
	case strings.Contains(uri, "/draft/2019-09/"):
		return metaVocabs2019()
	case uri == "" || strings.Contains(uri, "/draft/2020-12/") || strings.Contains(uri, "/draft/next/") || strings.HasSuffix(strings.TrimRight(uri, "#"), "json-schema.org/schema"):
		return metaVocabs2020()
	}
	return nil // drafts before 2019-09 are checked against their whole metaschema
}

// metaVocabs compiles, once and only when a schema first needs it, the
// annotation vocabularies' metaschemas of a draft (which the library
// embeds).
func metaVocabs(draft string, vocabs ...string) func() *jsonschema.Schema {
	return sync.OnceValue(func() *jsonschema.Schema {
		refs := make([]any, len(vocabs))
		for i, v := range vocabs {
			refs[i] = map[string]any{"$ref": "https://json-schema.org/draft/" + draft + "/meta/" + v}
		}
		c := jsonschema.NewCompiler()
		c.UseLoader(refuse{})
		const u = "stepwise:///annotation-vocabularies.json"
		if err := c.AddResource(u, map[string]any{"$schema": "https://json-schema.org/draft/" + draft + "/schema", "allOf": refs}); err != nil {
			panic(err)
		}
		return c.MustCompile(u)
	})
}

var (
	metaVocabs2020 = metaVocabs("2020-12", "meta-data", "format-annotation", "content")
	metaVocabs2019 = metaVocabs("2019-09", "meta-data", "format", "content")
)

// Compile compiles a schema document: decoded JSON (or YAML decoded into
// the same model; []string lists and Go numbers are accepted). It returns
// a *SchemaError when doc is not a valid schema, naming the first
// offending place.
func Compile(doc any) (s *Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(sizeError)
			if !ok {
				panic(r)
			}
			s, err = nil, &SchemaError{Location: se.ptr, Message: se.msg}
		}
	}()
	doc = jsonModel(doc)
	s = &Schema{}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuse{})
	for _, f := range annotationOnly {
		c.RegisterFormat(&jsonschema.Format{Name: f, Validate: func(any) error { return nil }})
	}
	c.RegisterVocabulary(&jsonschema.Vocabulary{
		URL:    "stepwise:budget",
		Schema: annotationVocabs(doc),
		Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			return newCounter(s, obj), nil
		},
	})
	c.AssertVocabs()
	if err := c.AddResource(base, doc); err != nil {
		return nil, &SchemaError{Message: err.Error()}
	}
	compiled, err := compileGuarded(c)
	if err != nil {
		return nil, schemaError(doc, err)
	}
	s.compiled, s.doc = compiled, doc
	return s, nil
}

// compileGuarded compiles the document, refusing it when the library fails on it
// (as Validate does for values).
func compileGuarded(c *jsonschema.Compiler) (s *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, &SchemaError{Message: fmt.Sprintf("the schema compiler failed on this schema (%v)", r)}
		}
	}()
	return c.Compile(base)
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

// Validate checks v against the schema; the error, when there is one, is
// an *Error.
func (s *Schema) Validate(v any) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = 0
	defer func() {
		switch r := recover(); r.(type) {
		case nil:
		case budgetExceeded:
			err = &Error{Keyword: "budget", Message: fmt.Sprintf("not checked: the schema needs more than %d steps to check this value (nested anyOf, oneOf or allOf applying the same schemas again and again)", maxApplications)}
		default:
			// The library fails on some values instead of refusing them
			// (a json.Number such as 1e1000000000, which big.Rat does not
			// read, is dereferenced as a nil *big.Rat).
			err = &Error{Keyword: "unchecked", Message: fmt.Sprintf("not checked: the validator failed on this value (%v)", r)}
		}
	}()
	verr := s.compiled.Validate(v)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return verr
	}
	return translate(ve, v, s.doc)
}

// schemaError words a compile error of the library as a *SchemaError.
func schemaError(doc any, err error) error {
	var (
		sve      *jsonschema.SchemaValidationError
		ve       *jsonschema.ValidationError
		load     *jsonschema.LoadURLError
		pointer  *jsonschema.JSONPointerNotFoundError
		anchor   *jsonschema.AnchorNotFoundError
		badRegex *jsonschema.InvalidRegexError
	)
	var se *SchemaError
	switch {
	case errors.As(err, &se):
		return se
	case errors.As(err, &sve) && errors.As(sve.Err, &ve):
		// The deepest failure: of the branches of an anyOf in the
		// metaschema, the one that got furthest into the schema.
		var l *Error
		for _, c := range translate(ve, doc, nil).Leaves() {
			if l == nil || len(c.InstanceLocation) > len(l.InstanceLocation) {
				l = c
			}
		}
		at, msg := pointerOf(l.InstanceLocation), l.Message
		if name, ok := l.Value.(string); ok && (l.Keyword == "propertyNames" || l.Keyword == "dependentRequired") {
			at += "/" + escape(name) // the name that is not a pattern, the keyword that needs another
			msg = strings.TrimPrefix(msg, fmt.Sprintf("property name %q is not allowed: ", name))
		}
		return &SchemaError{Location: at, Message: msg}
	case errors.As(err, &load):
		if m, ok := doc.(map[string]any); ok && m["$schema"] == load.URL {
			return &SchemaError{Location: "/$schema", Message: fmt.Sprintf("unknown $schema %q (drafts 4, 6, 7, 2019-09 and 2020-12 are known)", load.URL), Err: ErrRemoteRef}
		}
		ref, at := findRef(doc, load.URL)
		return &SchemaError{Location: at, Message: fmt.Sprintf("$ref %q points outside this schema (only references within it are followed)", ref), Err: ErrRemoteRef}
	case errors.As(err, &pointer):
		ref, at := findRef(doc, pointer.URL)
		return &SchemaError{Location: at, Message: fmt.Sprintf("$ref %q points to nothing in this schema", ref)}
	case errors.As(err, &anchor):
		ref, at := findRef(doc, anchor.Reference)
		return &SchemaError{Location: at, Message: fmt.Sprintf("$ref %q: no such $anchor in this schema", ref)}
	case errors.As(err, &badRegex):
		return &SchemaError{Location: strings.TrimPrefix(fragment(badRegex.URL), "#"), Message: fmt.Sprintf("%q is not a valid regular expression: %v", badRegex.Regex, badRegex.Err)}
	}
	return &SchemaError{Message: err.Error()}
}

// findRef finds the $ref (or $dynamicRef) of doc that names target, the
// absolute URI the library resolved it to (without its fragment when the
// document could not be loaded): its value and its JSON pointer. A
// reference relative to an embedded $id is found by its fragment or last
// path segment.
func findRef(doc any, target string) (ref, at string) {
	root, _ := url.Parse(base)
	resolved := func(r string) string {
		u, err := root.Parse(r)
		if err != nil {
			return r
		}
		return u.String()
	}
	tail := target[strings.LastIndexAny(target, "/#")+1:]
	if f := fragment(target); f != "" {
		tail = f
	}
	tests := []func(r string) bool{
		func(r string) bool { return r == target || resolved(r) == target },
		func(r string) bool { res := resolved(r); return res[:len(res)-len(fragment(res))] == target },
		func(r string) bool { return strings.HasSuffix(r, tail) },
	}
	for _, matches := range tests {
		var walk func(v any, ptr string) bool
		walk = func(v any, ptr string) bool {
			switch x := v.(type) {
			case map[string]any:
				for _, k := range []string{"$ref", "$dynamicRef"} {
					if r, ok := x[k].(string); ok && matches(r) {
						ref, at = r, ptr+"/"+k
						return true
					}
				}
				for _, k := range slices.Sorted(maps.Keys(x)) {
					if walk(x[k], ptr+"/"+escape(k)) {
						return true
					}
				}
			case []any:
				for i, e := range x {
					if walk(e, fmt.Sprintf("%s/%d", ptr, i)) {
						return true
					}
				}
			}
			return false
		}
		if walk(doc, "") {
			return ref, at
		}
	}
	return target, ""
}

// Bounds of a schema document. The library's compile time grows with the
// square of the number of subschemas (its work queue is searched by
// value) and with the cube of their nesting: 4,000 objects compile in
// about 150 ms, 16,000 in 4 s; 128 nested "not" in 25 ms, 1,000 in 2 s.
const (
	maxObjects = 5000
	maxDepth   = 64
)

// sizeError says a schema document is past the bounds.
type sizeError struct{ ptr, msg string }

// jsonModel is v in the JSON data model the library reads: []string and
// other Go lists and maps become []any and map[string]any, values that
// are not JSON go through encoding/json. Numbers stay as they are. It
// panics with a sizeError past maxObjects or maxDepth.
func jsonModel(v any) any {
	objects := 0
	var walk func(v any, ptr string, depth int) any
	walk = func(v any, ptr string, depth int) any {
		if depth > maxDepth {
			panic(sizeError{ptr, fmt.Sprintf("the schema nests more than %d levels deep", maxDepth)})
		}
		switch x := v.(type) {
		case map[string]any:
			if objects++; objects > maxObjects {
				panic(sizeError{ptr, fmt.Sprintf("the schema has more than %d objects", maxObjects)})
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e, ptr+"/"+escape(k), depth+1)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e, ptr+"/"+strconv.Itoa(i), depth+1)
			}
			return out
		case []string:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = e
			}
			return out
		case nil, bool, string, json.Number, float32, float64, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			return v
		}
		data, err := json.Marshal(v)
		if err != nil {
			return v // the metaschema check says it is not JSON
		}
		var out any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if d.Decode(&out) != nil {
			return v
		}
		return walk(out, ptr, depth)
	}
	return walk(v, "", 0)
}

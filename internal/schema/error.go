package schema

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Error is a failed validation: a tree whose leaves each name a keyword
// that failed at one place of the value.
type Error struct {
	// Keyword is the keyword that failed ("type", "required", …;
	// "false" for a false schema); "" for a schema that failed through
	// several keywords, each a cause.
	Keyword string
	// SchemaLocation is the JSON pointer of the schema holding the
	// keyword, within the compiled document (a URI for a schema under an
	// embedded $id).
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
	Value   any      // enum, const, pattern, bounds: the failing value; propertyNames: the name; dependentRequired: the property that requires others
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

// translate words the library's error tree: its wrappers (the root, $ref,
// allOf, a group of keywords) are flattened, anyOf and oneOf keep their
// branches as causes, every other kind is a leaf. value is the validated
// value, doc the schema (or, for a schema checked against its
// metaschema, both are the schema).
func translate(ve *jsonschema.ValidationError, value, doc any) *Error {
	causes := flatten(ve.Causes, value, doc)
	switch ve.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		if len(causes) == 1 {
			return causes[0]
		}
		return &Error{SchemaLocation: location(ve.SchemaURL), InstanceLocation: ve.InstanceLocation, Message: "several keywords failed", Causes: causes}
	}
	return leaf(ve, value, doc)
}

// flatten translates the causes of a wrapper, lifting the causes of
// wrappers underneath, and gathers the properties an
// unevaluatedProperties: false refused into one failure.
func flatten(errs []*jsonschema.ValidationError, value, doc any) []*Error {
	var out []*Error
	for _, c := range errs {
		switch c.ErrorKind.(type) {
		case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
			out = append(out, flatten(c.Causes, value, doc)...)
			continue
		}
		e := leaf(c, value, doc)
		if e.Keyword == "false" && strings.HasSuffix(e.SchemaLocation, "/unevaluatedProperties") && len(e.InstanceLocation) > 0 {
			name := e.InstanceLocation[len(e.InstanceLocation)-1]
			parent := e.InstanceLocation[:len(e.InstanceLocation)-1]
			i := slices.IndexFunc(out, func(o *Error) bool {
				return o.Keyword == "unevaluatedProperties" && o.SchemaLocation+"/unevaluatedProperties" == e.SchemaLocation && slices.Equal(o.InstanceLocation, parent)
			})
			if i < 0 {
				out = append(out, &Error{Keyword: "unevaluatedProperties", SchemaLocation: strings.TrimSuffix(e.SchemaLocation, "/unevaluatedProperties"), InstanceLocation: parent})
				i = len(out) - 1
			}
			u := out[i]
			u.Names = append(u.Names, name)
			slices.Sort(u.Names)
			u.Message = fmt.Sprintf("unknown %s %s", plural(len(u.Names), "property", "properties"), quoted(u.Names))
			continue
		}
		out = append(out, e)
	}
	return out
}

// leaf words one failed keyword.
func leaf(ve *jsonschema.ValidationError, value, doc any) *Error {
	loc := location(ve.SchemaURL)
	e := &Error{SchemaLocation: loc, InstanceLocation: ve.InstanceLocation}
	v, _ := valueAt(value, ve.InstanceLocation)
	set := func(keyword, format string, args ...any) {
		e.Keyword, e.Message = keyword, fmt.Sprintf(format, args...)
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.AnyOf:
		set("anyOf", "must match at least one of the allowed forms")
		e.Causes = branches(ve.Causes, value, doc)
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			which := make([]string, len(k.Subschemas))
			for i, n := range k.Subschemas {
				which[i] = strconv.Itoa(n)
			}
			set("oneOf", "must match exactly one of the allowed forms, but matches %d of them (%s)", len(k.Subschemas), strings.Join(which, ", "))
			e.Matches = len(k.Subschemas)
			break
		}
		set("oneOf", "must match exactly one of the allowed forms")
		e.Causes = branches(ve.Causes, value, doc)
	case *kind.Not:
		set("not", "must not match the schema at %s", pointerText(loc+"/not"))
	case *kind.FalseSchema:
		set("false", "no value is allowed here")
	case *kind.RefCycle:
		set("$ref", "the schema at %s applies itself to this value again (a $ref loop)", pointerText(loc))
	case *kind.InvalidJsonValue:
		set("type", "is not JSON data (%T)", k.Value)
		e.Got = fmt.Sprintf("%T", k.Value)
	case *kind.Type:
		e.Want, e.Got = writtenTypes(doc, loc, k.Want), k.Got
		set("type", "must be %s, not %s", withArticles(e.Want), k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, x := range k.Want {
			want[i] = render(x)
		}
		set("enum", "must be one of %s, not %s", strings.Join(want, ", "), render(v))
		e.Value, e.Allowed = v, k.Want
	case *kind.Const:
		set("const", "must be %s", render(k.Want))
		e.Value, e.Allowed = v, []any{k.Want}
	case *kind.Minimum:
		bound(e, "minimum", "at least", v, k.Want)
	case *kind.Maximum:
		bound(e, "maximum", "at most", v, k.Want)
	case *kind.ExclusiveMinimum:
		bound(e, "exclusiveMinimum", "greater than", v, k.Want)
	case *kind.ExclusiveMaximum:
		bound(e, "exclusiveMaximum", "less than", v, k.Want)
	case *kind.MultipleOf:
		bound(e, "multipleOf", "a multiple of", v, k.Want)
	case *kind.MinLength:
		set("minLength", "must be at least %d %s long, not %d", k.Want, plural(k.Want, "character", "characters"), k.Got)
		if k.Got == 0 {
			e.Message = "must not be empty"
		}
		e.Value, e.Limit = v, strconv.Itoa(k.Want)
	case *kind.MaxLength:
		set("maxLength", "must be at most %d %s long, not %d", k.Want, plural(k.Want, "character", "characters"), k.Got)
		e.Value, e.Limit = v, strconv.Itoa(k.Want)
	case *kind.Pattern:
		set("pattern", "%s does not match the pattern %s", render(k.Got), k.Want)
		e.Value, e.Limit = k.Got, k.Want
	case *kind.Format:
		set("format", "%s is not a valid %s: %v", render(k.Got), k.Want, k.Err)
		e.Value, e.Limit = k.Got, k.Want
	case *kind.MinItems:
		set("minItems", "must have at least %d %s, not %d", k.Want, plural(k.Want, "item", "items"), k.Got)
		e.Limit = strconv.Itoa(k.Want)
	case *kind.MaxItems:
		set("maxItems", "must have at most %d %s, not %d", k.Want, plural(k.Want, "item", "items"), k.Got)
		e.Limit = strconv.Itoa(k.Want)
	case *kind.AdditionalItems:
		set("additionalItems", "has %d %s more than the schema allows", k.Count, plural(k.Count, "item", "items"))
	case *kind.UniqueItems:
		set("uniqueItems", "items %d and %d are equal: items must be unique", k.Duplicates[0], k.Duplicates[1])
	case *kind.Contains:
		set("contains", "no item matches the schema at %s", pointerText(loc+"/contains"))
	case *kind.MinContains:
		set("minContains", "at least %d items must match the schema at %s, not %d", k.Want, pointerText(loc+"/contains"), len(k.Got))
	case *kind.MaxContains:
		set("maxContains", "at most %d items may match the schema at %s, not %d", k.Want, pointerText(loc+"/contains"), len(k.Got))
	case *kind.MinProperties:
		set("minProperties", "must have at least %d %s, not %d", k.Want, plural(k.Want, "property", "properties"), k.Got)
		e.Limit = strconv.Itoa(k.Want)
	case *kind.MaxProperties:
		set("maxProperties", "must have at most %d %s, not %d", k.Want, plural(k.Want, "property", "properties"), k.Got)
		e.Limit = strconv.Itoa(k.Want)
	case *kind.Required:
		set("required", "missing required %s %s", plural(len(k.Missing), "property", "properties"), quoted(k.Missing))
		e.Names = k.Missing
	case *kind.DependentRequired:
		set("dependentRequired", "%q requires %s", k.Prop, quoted(k.Missing))
		e.Names, e.Value = k.Missing, k.Prop
	case *kind.Dependency:
		set("dependentRequired", "%q requires %s", k.Prop, quoted(k.Missing))
		e.Names, e.Value = k.Missing, k.Prop
	case *kind.AdditionalProperties:
		e.Names = slices.Sorted(slices.Values(k.Properties))
		set("additionalProperties", "unknown %s %s", plural(len(e.Names), "property", "properties"), quoted(e.Names))
	case *kind.PropertyNames:
		var msgs []string
		for _, c := range flatten(ve.Causes, k.Property, doc) {
			for _, l := range c.Leaves() {
				msgs = append(msgs, l.Message)
			}
		}
		set("propertyNames", "property name %q is not allowed: %s", k.Property, strings.Join(msgs, "; "))
		e.SchemaLocation, e.Value = strings.TrimSuffix(loc, "/propertyNames"), k.Property
	default:
		kw := ve.ErrorKind.KeywordPath()
		e.Keyword = strings.Join(kw, "/")
		e.Message = ve.ErrorKind.LocalizedString(message.NewPrinter(language.English))
		e.Causes = flatten(ve.Causes, value, doc)
	}
	return e
}

// branches translates the branches of anyOf or oneOf, one failure each.
func branches(errs []*jsonschema.ValidationError, value, doc any) []*Error {
	out := make([]*Error, len(errs))
	for i, c := range errs {
		out[i] = translate(c, value, doc)
	}
	return out
}

// bound words a failed numeric bound: the value as the caller gave it, the
// bound as a decimal.
func bound(e *Error, keyword, word string, v any, limit *big.Rat) {
	e.Keyword, e.Value, e.Limit = keyword, v, ratText(limit)
	e.Message = fmt.Sprintf("must be %s %s, not %s", word, e.Limit, numberText(v))
}

// location is the JSON pointer of a schema the library names by URL, when
// it is in the compiled document; the URL otherwise.
func location(schemaURL string) string {
	rest, ok := strings.CutPrefix(schemaURL, base+"#")
	if !ok {
		return schemaURL
	}
	if p, err := url.PathUnescape(rest); err == nil {
		return p
	}
	return rest
}

// fragment is the fragment of a URL, with its "#".
func fragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[i:]
	}
	return ""
}

// writtenTypes are the types of a failed "type" in the order the schema
// writes them (the library sorts them).
func writtenTypes(doc any, loc string, sorted []string) []string {
	if !strings.HasPrefix(loc, "/") && loc != "" {
		return sorted
	}
	s, _ := valueAt(doc, tokens(loc))
	m, _ := s.(map[string]any)
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			if n, ok := x.(string); ok {
				out = append(out, n)
			}
		}
		if len(out) == len(sorted) {
			return out
		}
	}
	return sorted
}

// tokens splits a JSON pointer into its unescaped tokens.
func tokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	out := strings.Split(ptr[1:], "/")
	for i, t := range out {
		out[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return out
}

// pointerOf joins a path into a JSON pointer.
func pointerOf(path []string) string {
	var b strings.Builder
	for _, p := range path {
		b.WriteString("/" + escape(p))
	}
	return b.String()
}

// escape escapes a JSON pointer token.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
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

// ratText is a bound as a decimal: "0.01", not "1/100".
func ratText(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// numberText renders a number as JSON does.
func numberText(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case json.Number:
		return string(x)
	}
	return fmt.Sprint(v)
}

// render is a value in a message: JSON, shortened.
func render(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := string(data)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

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

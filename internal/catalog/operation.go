package catalog

import (
	"fmt"
	"maps"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"stepwise.dev/stepwise/internal/action"
)

// methodOrder is the order operations of one path are listed in.
var methodOrder = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodTrace, "QUERY"}

// safetyOf is the action's safety tier from the HTTP method: GET and HEAD
// read, DELETE destroys, anything else changes something.
func safetyOf(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return action.ReadOnly
	case http.MethodDelete:
		return action.Destructive
	}
	return action.Mutating
}

// notNamePart is what cannot appear in the part of an action name after
// the dot.
var notNamePart = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// derivedName is the name of an operation without operationId: the method
// and the path's segments, e.g. GET /pets/{petId} → get_pets_petId.
func derivedName(method, path string) string {
	parts := []string{strings.ToLower(method)}
	for _, seg := range strings.Split(path, "/") {
		seg = notNamePart.ReplaceAllString(seg, "_")
		if seg = strings.Trim(seg, "_"); seg != "" {
			parts = append(parts, seg)
		}
	}
	if len(parts) == 1 {
		parts = append(parts, "root")
	}
	return strings.Join(parts, "_")
}

// builder collects a document's operations and what it had to skip.
type builder struct {
	grouped
	doc   *document
	taken map[string]bool
	// cut is set when a schema of the operation being built was too large
	// to inline whole (see maxSchemaNodes).
	cut bool
	// memo holds the schemas converted in each direction (see memoized).
	memo [2]map[*openapi3.Schema]*memoized
}

// notes collects the warnings of one pass over a document (decoding,
// converting, checking, building).
type notes struct{ found []string }

func (n *notes) warn(format string, args ...any) {
	n.found = append(n.found, fmt.Sprintf(format, args...))
}

// maxExamples is how many warnings of one kind are worded; the others
// are counted. A document of 1,221 operationIds written a/b would
// otherwise say 1,221 times that each was renamed.
const maxExamples = 3

// grouped collects the warnings of building operations by kind: the first
// maxExamples of a kind worded, the others counted.
type grouped struct {
	kinds []*group // in the order of their first warning
	index map[string]*group
}

// group is the warnings of one kind.
type group struct {
	// about says what the warnings of the kind are about, for the line
	// that counts them.
	about    string
	examples []string
	count    int
}

// note records a warning of a kind; about describes the kind.
func (g *grouped) note(kind, about, format string, args ...any) {
	if g.index == nil {
		g.index = map[string]*group{}
	}
	k := g.index[kind]
	if k == nil {
		k = &group{about: about}
		g.index[kind] = k
		g.kinds = append(g.kinds, k)
	}
	k.count++
	if len(k.examples) < maxExamples {
		k.examples = append(k.examples, fmt.Sprintf(format, args...))
	}
}

// warnings words the warnings: per kind its examples, then, when there
// were more, how many in all.
func (g *grouped) warnings() []string {
	var out []string
	for _, k := range g.kinds {
		out = append(out, k.examples...)
		if k.count > len(k.examples) {
			out = append(out, fmt.Sprintf("… and %d more like these: %s (%d in all)", k.count-len(k.examples), k.about, k.count))
		}
	}
	return out
}

// convert converts one schema of the operation being built.
func (b *builder) convert(dir direction, schema *openapi3.SchemaRef) map[string]any {
	if b.memo[dir] == nil {
		b.memo[dir] = map[*openapi3.Schema]*memoized{}
	}
	c := newConverter(dir, b.memo[dir])
	s := c.ref(schema)
	b.cut = b.cut || c.cut
	// Memoized conversions are shared: the caller may change its own.
	return maps.Clone(s)
}

// operations normalizes every operation of the document, in path order.
func (b *builder) operations() []Operation {
	b.taken = map[string]bool{}
	paths := b.doc.spec.paths
	var out []Operation
	for _, path := range sortedKeys(paths) {
		item := paths[path]
		for _, method := range methodOrder {
			if op := item.ops[method]; op != nil {
				b.cut = false
				o, ok := b.operation(path, method, item, op)
				if b.cut {
					b.note("cut", "schemas too large to inline whole", "%s %s: a schema is too large to inline whole (over %d subschemas once its references are expanded); the parts past that are left open", method, path, maxSchemaNodes)
				}
				if ok {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// operation normalizes one operation; false when it cannot be called.
func (b *builder) operation(path, method string, item *pathItem, op *operation) (Operation, bool) {
	where := method + " " + path
	o := Operation{OperationID: op.id, Method: method, Path: path, Summary: op.summary,
		Description: op.description, Tags: op.tags, Deprecated: op.deprecated, Safety: safetyOf(method)}
	o.Name = b.name(where, method, path, op.id)

	props := map[string]any{}
	var required []any
	if rb := op.body; rb != nil {
		mt, media, ok := bodyMedia(rb.content)
		if !ok {
			b.note("body", "operations skipped for their request body's media type", "%s skipped: its request body is %s; a catalog sends JSON or form-urlencoded bodies", where, strings.Join(sortedKeys(rb.content), ", "))
			return Operation{}, false
		}
		// A Swagger 2.0 form is its formData parameters, converted to a
		// body that is not required itself: it is when one of them is.
		bodyRequired := rb.required || b.doc.version == "2.0" && media.schema != nil && media.schema.Value != nil &&
			strings.HasPrefix(mt, "application/x-www-form-urlencoded") && len(media.schema.Value.Required) > 0
		o.Body = &Body{Required: bodyRequired, MediaType: mt}
		s := b.convert(toServer, media.schema)
		if _, ok := s["description"]; !ok && rb.description != "" {
			s["description"] = rb.description
		}
		props[bodyKey] = s
		if bodyRequired {
			required = append(required, bodyKey)
		}
	}
	for _, p := range b.params(where, item.params, op.params) {
		key := p.name
		if _, clash := props[key]; clash {
			key = p.in + "_" + p.name
			b.note("clash", "parameters renamed as inputs", "%s: the %s parameter %q is the input %q (another input has its name)", where, p.in, p.name, key)
		}
		param := Param{Key: key, Name: p.name, In: p.in, Required: p.required || p.in == "path"}
		if p.in == "query" {
			// OpenAPI 3's default is form, exploded; Swagger 2.0's
			// collectionFormat is csv unless it says multi.
			swaggerCSV := b.doc.version == "2.0" && p.schema != nil && p.schema.Value != nil && p.schema.Value.Type.Is("array")
			param.Explode = p.explode == nil && !swaggerCSV || p.explode != nil && *p.explode
			if p.style != "" && p.style != "form" {
				b.note("style", "query parameters sent in the form style", "%s: query parameter %q has style %s; it is sent in the form style", where, p.name, p.style)
			}
		}
		o.Params = append(o.Params, param)
		props[key] = b.paramSchema(p)
		if param.Required {
			required = append(required, key)
		}
	}
	o.InputSchema = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o.InputSchema["required"] = required
	}
	o.OutputSchema = b.outputSchema(op.responses)
	o.Security = b.security(op)
	return o, true
}

// name is the operation's unique name: its operationId made safe for
// action names, or one derived from method and path.
func (b *builder) name(where, method, path, id string) string {
	name := strings.Trim(notNamePart.ReplaceAllString(id, "_"), "_")
	if name != id && id != "" {
		b.note("renamed", "operationIds renamed into action names", "%s: operationId %q is called %q (action names take letters, digits, _ and -)", where, id, name)
	}
	if name == "" {
		name = derivedName(method, path)
	}
	unique := name
	for n := 2; b.taken[unique]; n++ {
		unique = fmt.Sprintf("%s_%d", name, n)
	}
	if unique != name {
		b.note("taken", "operations renamed because another had their name", "%s: the name %q is taken by another operation: it is called %q", where, name, unique)
	}
	b.taken[unique] = true
	return unique
}

// params merges the path item's parameters with the operation's (which
// override them), path first, then query, then header; cookies are
// skipped.
func (b *builder) params(where string, lists ...[]*parameter) []*parameter {
	byID := map[string]*parameter{}
	var ids []string
	for _, list := range lists {
		for _, p := range list {
			id := p.in + "\x00" + p.name
			if _, seen := byID[id]; !seen {
				ids = append(ids, id)
			}
			byID[id] = p
		}
	}
	rank := map[string]int{"path": 0, "query": 1, "header": 2}
	var out []*parameter
	for _, id := range ids {
		p := byID[id]
		if _, ok := rank[p.in]; !ok {
			b.note("cookie", "parameters not sent", "%s: %s parameter %q is not sent (a catalog sends path, query and header parameters)", where, p.in, p.name)
			continue
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].in] < rank[out[j].in] })
	return out
}

// paramSchema is a parameter's input schema: its schema (or its content's)
// with the parameter's description.
func (b *builder) paramSchema(p *parameter) map[string]any {
	schema := p.schema
	if schema == nil {
		if _, media, ok := bodyMedia(p.content); ok {
			schema = media.schema
		}
	}
	s := b.convert(toServer, schema)
	if _, ok := s["description"]; !ok && p.description != "" {
		s["description"] = p.description
	}
	if p.deprecated {
		s["deprecated"] = true
	}
	return s
}

// bodyMedia picks the media type a catalog sends: JSON first (including
// */* and +json types), then form-urlencoded.
func bodyMedia(content map[string]*mediaType) (string, *mediaType, bool) {
	var form string
	for _, mt := range sortedKeys(content) {
		base, _, err := mime.ParseMediaType(mt)
		if err != nil {
			continue
		}
		switch {
		case isJSON(base):
			return mt, content[mt], true
		case base == "application/x-www-form-urlencoded" && form == "":
			form = mt
		}
	}
	if form != "" {
		return form, content[form], true
	}
	return "", nil, false
}

// isJSON reports whether a media type (without parameters) is JSON or
// leaves the choice to the client.
func isJSON(base string) bool {
	return base == "application/json" || strings.HasSuffix(base, "+json") || base == "*/*" || base == "application/*"
}

// outputSchema is the schema of the first 2xx response with a JSON body
// (responses are tried in code order, 2XX last); nil when none has one.
func (b *builder) outputSchema(rs map[string]*response) map[string]any {
	codes := slices.Sorted(func(yield func(string) bool) {
		for code := range rs {
			if strings.HasPrefix(code, "2") && !yield(code) {
				return
			}
		}
	})
	for _, code := range codes {
		r := rs[code]
		for _, mt := range sortedKeys(r.content) {
			base, _, err := mime.ParseMediaType(mt)
			if err == nil && isJSON(base) && r.content[mt].schema != nil {
				return b.convert(fromServer, r.content[mt].schema)
			}
		}
	}
	return nil
}

// security lists the operation's security alternatives (the document's
// when the operation has none of its own).
func (b *builder) security(op *operation) [][]string {
	reqs := b.doc.spec.security
	if op.security != nil {
		reqs = *op.security
	}
	var out [][]string
	for _, req := range reqs {
		out = append(out, sortedKeys(req))
	}
	return out
}

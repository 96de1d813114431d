package catalog

import (
	"fmt"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"stepwise.dev/stepwise/action"
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
	doc      *document
	warnings []string
	taken    map[string]bool
}

func (b *builder) warn(format string, args ...any) {
	b.warnings = append(b.warnings, fmt.Sprintf(format, args...))
}

// operations normalizes every operation of the document, in path order.
func (b *builder) operations() []Operation {
	b.taken = map[string]bool{}
	if b.doc.t.Paths == nil {
		return nil
	}
	paths := b.doc.t.Paths.Map()
	var out []Operation
	for _, path := range sortedKeys(paths) {
		item := paths[path]
		if item == nil {
			continue
		}
		ops := item.Operations()
		for _, method := range methodOrder {
			if op := ops[method]; op != nil {
				if o, ok := b.operation(path, method, item, op); ok {
					out = append(out, o)
				}
			}
		}
	}
	return out
}

// operation normalizes one operation; false when it cannot be called.
func (b *builder) operation(path, method string, item *openapi3.PathItem, op *openapi3.Operation) (Operation, bool) {
	where := method + " " + path
	o := Operation{OperationID: op.OperationID, Method: method, Path: path, Summary: op.Summary,
		Description: op.Description, Tags: op.Tags, Deprecated: op.Deprecated, Safety: safetyOf(method)}
	o.Name = b.name(where, method, path, op.OperationID)

	props := map[string]any{}
	var required []any
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		mt, media, ok := bodyMedia(rb.Value.Content)
		if !ok {
			b.warn("%s skipped: its request body is %s; a catalog sends JSON or form-urlencoded bodies", where, strings.Join(sortedKeys(rb.Value.Content), ", "))
			return Operation{}, false
		}
		o.Body = &Body{Required: rb.Value.Required, MediaType: mt}
		s := newConverter(toServer).ref(media.Schema)
		if _, ok := s["description"]; !ok && rb.Value.Description != "" {
			s["description"] = rb.Value.Description
		}
		props[bodyKey] = s
		if rb.Value.Required {
			required = append(required, bodyKey)
		}
	}
	for _, p := range b.params(where, item.Parameters, op.Parameters) {
		key := p.Name
		if _, clash := props[key]; clash {
			key = p.In + "_" + p.Name
			b.warn("%s: the %s parameter %q is the input %q (another input has its name)", where, p.In, p.Name, key)
		}
		param := Param{Key: key, Name: p.Name, In: p.In, Required: p.Required || p.In == openapi3.ParameterInPath}
		if p.In == openapi3.ParameterInQuery {
			param.Explode = p.Explode == nil || *p.Explode
			if p.Style != "" && p.Style != "form" {
				b.warn("%s: query parameter %q has style %s; it is sent in the form style", where, p.Name, p.Style)
			}
		}
		o.Params = append(o.Params, param)
		props[key] = paramSchema(p)
		if param.Required {
			required = append(required, key)
		}
	}
	o.InputSchema = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		o.InputSchema["required"] = required
	}
	o.OutputSchema = outputSchema(op.Responses)
	o.Security = b.security(op)
	return o, true
}

// name is the operation's unique name: its operationId made safe for
// action names, or one derived from method and path.
func (b *builder) name(where, method, path, id string) string {
	name := strings.Trim(notNamePart.ReplaceAllString(id, "_"), "_")
	if name != id && id != "" {
		b.warn("%s: operationId %q is called %q (action names take letters, digits, _ and -)", where, id, name)
	}
	if name == "" {
		name = derivedName(method, path)
	}
	unique := name
	for n := 2; b.taken[unique]; n++ {
		unique = fmt.Sprintf("%s_%d", name, n)
	}
	if unique != name {
		b.warn("%s: the name %q is taken by another operation: it is called %q", where, name, unique)
	}
	b.taken[unique] = true
	return unique
}

// params merges the path item's parameters with the operation's (which
// override them), path first, then query, then header; cookies are
// skipped.
func (b *builder) params(where string, lists ...openapi3.Parameters) []*openapi3.Parameter {
	byID := map[string]*openapi3.Parameter{}
	var ids []string
	for _, list := range lists {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			p := ref.Value
			id := p.In + "\x00" + p.Name
			if _, seen := byID[id]; !seen {
				ids = append(ids, id)
			}
			byID[id] = p
		}
	}
	rank := map[string]int{openapi3.ParameterInPath: 0, openapi3.ParameterInQuery: 1, openapi3.ParameterInHeader: 2}
	var out []*openapi3.Parameter
	for _, id := range ids {
		p := byID[id]
		if _, ok := rank[p.In]; !ok {
			b.warn("%s: %s parameter %q is not sent (a catalog sends path, query and header parameters)", where, p.In, p.Name)
			continue
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].In] < rank[out[j].In] })
	return out
}

// paramSchema is a parameter's input schema: its schema (or its content's)
// with the parameter's description.
func paramSchema(p *openapi3.Parameter) map[string]any {
	ref := p.Schema
	if ref == nil {
		if _, media, ok := bodyMedia(p.Content); ok {
			ref = media.Schema
		}
	}
	s := newConverter(toServer).ref(ref)
	if _, ok := s["description"]; !ok && p.Description != "" {
		s["description"] = p.Description
	}
	if p.Deprecated {
		s["deprecated"] = true
	}
	return s
}

// bodyMedia picks the media type a catalog sends: JSON first (including
// */* and +json types), then form-urlencoded.
func bodyMedia(content openapi3.Content) (string, *openapi3.MediaType, bool) {
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
func outputSchema(rs *openapi3.Responses) map[string]any {
	if rs == nil {
		return nil
	}
	codes := slices.Sorted(func(yield func(string) bool) {
		for code := range rs.Map() {
			if strings.HasPrefix(code, "2") && !yield(code) {
				return
			}
		}
	})
	for _, code := range codes {
		r := rs.Value(code)
		if r == nil || r.Value == nil {
			continue
		}
		for _, mt := range sortedKeys(r.Value.Content) {
			base, _, err := mime.ParseMediaType(mt)
			if err == nil && isJSON(base) && r.Value.Content[mt].Schema != nil {
				return newConverter(fromServer).ref(r.Value.Content[mt].Schema)
			}
		}
	}
	return nil
}

// security lists the operation's security alternatives (the document's
// when the operation has none of its own).
func (b *builder) security(op *openapi3.Operation) [][]string {
	reqs := b.doc.t.Security
	if op.Security != nil {
		reqs = *op.Security
	}
	var out [][]string
	for _, req := range reqs {
		out = append(out, sortedKeys(req))
	}
	return out
}

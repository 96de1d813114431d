package catalog

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// maxRefHops bounds a chain of references to references.
const maxRefHops = 64

// resolver finds what a local $ref ("#/components/schemas/Pet", a JSON
// pointer into the document) points to. A catalog is one document: a
// reference to another file or URL is never followed.
type resolver struct {
	root any
}

// refOf is the $ref of an object, if it has one.
func refOf(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	ref, ok := m["$ref"].(string)
	return ref, ok
}

// lookup returns the value a local reference points to.
func (r *resolver) lookup(ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("$ref %q points to another file or URL; a catalog is one document and follows only references within it (#/…)", ref)
	}
	if unescaped, err := url.PathUnescape(frag); err == nil {
		frag = unescaped
	}
	if frag == "" {
		return r.root, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, fmt.Errorf("$ref %q: a reference within the document is a JSON pointer such as #/components/schemas/Name", ref)
	}
	cur := r.root
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("$ref %q: the document has nothing at %q", ref, tok)
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("$ref %q: %q is not an index of a list of %d", ref, tok, len(c))
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("$ref %q: the document has nothing at %q", ref, tok)
		}
	}
	return cur, nil
}

// follow resolves v while it is a reference, through chains of them. It
// returns the value reached and the first reference followed ("" when v
// is not one).
func (r *resolver) follow(v any) (any, string, error) {
	first := ""
	for hops := 0; ; hops++ {
		ref, ok := refOf(v)
		if !ok {
			return v, first, nil
		}
		if hops == maxRefHops {
			return nil, first, fmt.Errorf("$ref %q: a chain of more than %d references (a cycle?)", first, maxRefHops)
		}
		if first == "" {
			first = ref
		}
		next, err := r.lookup(ref)
		if err != nil {
			return nil, first, err
		}
		v = next
	}
}

// dataKeys hold values, not parts of the document: a $ref inside them is
// data.
var dataKeys = map[string]bool{"example": true, "default": true, "enum": true, "const": true, "value": true}

// namedKeys hold maps from names to parts of the document: their keys
// are names, so a property called "default" is not data.
var namedKeys = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
	"schemas": true, "responses": true, "parameters": true, "requestBodies": true, "headers": true,
	"securitySchemes": true, "securityDefinitions": true, "links": true, "callbacks": true, "pathItems": true,
	"paths": true, "webhooks": true, "content": true, "encoding": true, "variables": true, "examples": true,
}

// checkRefs walks the document and refuses it when a reference points
// outside of it, to nothing, or into a cycle of references: the
// problems that make the document unusable rather than imperfect.
func (r *resolver) checkRefs() error {
	return r.walk(r.root, "#", false)
}

func (r *resolver) walk(v any, where string, named bool) error {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["$ref"].(string); ok && !named {
			if _, _, err := r.follow(x); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
		for _, k := range sortedKeys(x) {
			if !named && (dataKeys[k] || strings.HasPrefix(k, "x-")) {
				continue
			}
			if !named && (k == "$ref" || k == "examples" && isList(x[k])) {
				continue // a reference, checked above; a schema's examples are data
			}
			if err := r.walk(x[k], where+"/"+escapeToken(k), !named && namedKeys[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := r.walk(e, where+"/"+strconv.Itoa(i), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// escapeToken escapes a JSON pointer token.
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func isList(v any) bool {
	_, ok := v.([]any)
	return ok
}

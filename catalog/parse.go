package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// maxSpecWarnings bounds how many departures from the specification are
// reported: past a few, more of them do not help anyone.
const maxSpecWarnings = 20

// specPrefix opens every departure from the specification.
const specPrefix = "the document does not follow the OpenAPI specification: "

// document is a parsed OpenAPI document in its OpenAPI 3 form.
type document struct {
	// version is the document's own: 2.0, 3.0.x or 3.1.x.
	version string
	spec    *spec
	// res resolves references within the OpenAPI 3 form.
	res *resolver
	// views holds the schemas made of a $ref and its siblings, one per
	// place, so that recursion through them is recognized.
	views map[uintptr]map[string]any
	// warnings: the document loads but does not follow the specification.
	warnings []string
}

// parse loads a Swagger 2.0 or OpenAPI 3.x document (JSON or YAML). A
// $ref to another file or URL is refused: a catalog is one document, and
// following references would let a document read the server's files or
// reach its network.
func parse(_ context.Context, data []byte) (*document, error) {
	tree, err := decodeTree(data)
	var tooLarge *tooLargeError
	switch {
	case errors.As(err, &tooLarge):
		return nil, invalid("%v", err)
	case err != nil:
		return nil, invalid("the document is neither JSON nor YAML: %v", err)
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, invalid("not an OpenAPI document: it is %s, not an object with an openapi or swagger field", kindOf(tree))
	}
	var found []string
	swagger := versionField(root, "swagger", &found)
	openapi := versionField(root, "openapi", &found)
	d := &document{}
	form := root
	switch {
	case swagger != "":
		if swagger != "2.0" {
			return nil, invalid("swagger %q: only Swagger 2.0 is supported", swagger)
		}
		if err := (&resolver{root: root}).checkRefs(); err != nil {
			return nil, invalid("the Swagger 2.0 document does not load: %v", err)
		}
		conv, warnings, err := fromSwagger(root)
		if err != nil {
			return nil, invalid("the Swagger 2.0 document cannot be converted to OpenAPI 3: %v", err)
		}
		d.version, form = "2.0", conv
		found = append(found, warnings...)
	case strings.HasPrefix(openapi, "3."):
		if err := (&resolver{root: root}).checkRefs(); err != nil {
			return nil, invalid("the OpenAPI %s document does not load: %v", openapi, err)
		}
		d.version = openapi
	case openapi != "":
		return nil, invalid("openapi %q: supported versions are Swagger 2.0 and OpenAPI 3.0 and 3.1", openapi)
	default:
		return nil, invalid("not an OpenAPI document: it has neither an openapi nor a swagger field")
	}
	d.res = &resolver{root: form}
	s, warnings := decodeSpec(form, d.res)
	d.spec = s
	found = append(append(found, warnings...), lint(d)...)
	d.warnings = specWarnings(found)
	return d, nil
}

// versionField reads the swagger or openapi field. A number (swagger:
// 2.0 written without quotes) is taken as its text, with a warning.
func versionField(root map[string]any, key string, warnings *[]string) string {
	switch v := root[key].(type) {
	case string:
		return v
	case float64:
		text := formatNumber(v)
		if !strings.Contains(text, ".") {
			text += ".0"
		}
		*warnings = append(*warnings, fmt.Sprintf("%s should be the string %q, not a number (quote it)", key, text))
		return text
	}
	return ""
}

// specWarnings words the departures from the specification, at most
// maxSpecWarnings of them.
func specWarnings(found []string) []string {
	var out []string
	for i, w := range found {
		if i == maxSpecWarnings {
			out = append(out, fmt.Sprintf("… and %d more departures from the OpenAPI specification", len(found)-i))
			break
		}
		out = append(out, specPrefix+w)
	}
	return out
}

// openAPI31 reports whether the document is OpenAPI 3.1 (or later):
// keywords next to a schema's $ref apply too (before 3.1 a $ref replaces
// its object), responses are optional, paths may be absent.
func (d *document) openAPI31() bool {
	return d.version != "2.0" && !strings.HasPrefix(d.version, "3.0")
}

// title is the document's info.title.
func (d *document) title() string {
	if d.spec.info == nil {
		return ""
	}
	return d.spec.info.title
}

// serverURL is the document's first server URL with its variables set to
// their defaults, made absolute against the document's own URL when it is
// relative (a Swagger 2.0 document without host). "" when there is none.
func (d *document) serverURL(location string) string {
	if len(d.spec.servers) == 0 {
		return ""
	}
	srv := d.spec.servers[0]
	u := srv.url
	for name, v := range srv.vars {
		u = strings.ReplaceAll(u, "{"+name+"}", v.def)
	}
	if abs, err := url.Parse(u); err == nil && !abs.IsAbs() && isURL(location) {
		if base, err := url.Parse(location); err == nil {
			u = base.ResolveReference(abs).String()
		}
	}
	return u
}

// schemes maps the document's security schemes.
func (d *document) schemes() map[string]Scheme {
	if len(d.spec.schemes) == 0 {
		return nil
	}
	out := map[string]Scheme{}
	for name, s := range d.spec.schemes {
		out[name] = schemeOf(s)
	}
	return out
}

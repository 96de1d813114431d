package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
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
	// warnings: the document loads but does not follow the specification.
	warnings []string
}

// refuseURI refuses every file or URL the library would read.
func refuseURI(_ *openapi3.Loader, u *url.URL) ([]byte, error) {
	return nil, &openapi3.DisallowedExternalRefError{Ref: u.String()}
}

// newLoader is the library's loader as a catalog uses it: it never reads
// a file or a URL (a catalog is one document; following references would
// let a document read the server's files or reach its network).
func newLoader(ctx context.Context) *openapi3.Loader {
	l := openapi3.NewLoader()
	l.Context = ctx
	l.IsExternalRefsAllowed = false
	l.ReadFromURIFunc = refuseURI
	return l
}

// versions is the head of a document: which specification it follows.
type versions struct {
	Swagger any `json:"swagger" yaml:"swagger"`
	OpenAPI any `json:"openapi" yaml:"openapi"`
}

// parse loads a Swagger 2.0 or OpenAPI 3.x document (JSON or YAML)
// through kin-openapi, after checking the bounds the library does not
// (nesting, YAML aliases). A $ref to another file or URL is refused.
func parse(ctx context.Context, data []byte) (*document, error) {
	node, err := checkBounds(data)
	if err != nil {
		var tooLarge *tooLargeError
		if errors.As(err, &tooLarge) {
			return nil, invalid("%v", err)
		}
		return nil, invalid("the document is neither JSON nor YAML: %v", err)
	}
	var head versions
	if node != nil {
		err = node.Decode(&head)
	} else {
		err = json.Unmarshal(data, &head)
	}
	if err != nil {
		return nil, invalid("not an OpenAPI document: it is not an object with an openapi or swagger field")
	}
	var found []string
	swagger := versionField(head.Swagger, "swagger", &found)
	openapi := versionField(head.OpenAPI, "openapi", &found)
	if node != nil && quoteVersions(node) {
		// The library takes these fields as strings only: give it the
		// document with them quoted (the warnings above say so).
		if data, err = yaml.Marshal(node); err != nil {
			return nil, invalid("the document does not load: %v", err)
		}
	}
	var doc *openapi3.T
	d := &document{}
	switch {
	case swagger != "":
		if swagger != "2.0" {
			return nil, invalid("swagger %q: only Swagger 2.0 is supported", swagger)
		}
		d.version = "2.0"
		doc, err = fromSwagger(ctx, data)
		if err != nil {
			return nil, invalid("the Swagger 2.0 document does not load: %v", loadError(err))
		}
	case strings.HasPrefix(openapi, "3."):
		d.version = openapi
		doc, err = loadOpenAPI3(ctx, data)
		if err != nil {
			return nil, invalid("the OpenAPI %s document does not load: %v", openapi, loadError(err))
		}
	case openapi != "":
		return nil, invalid("openapi %q: supported versions are Swagger 2.0 and OpenAPI 3.0 and 3.1", openapi)
	default:
		return nil, invalid("not an OpenAPI document: it has neither an openapi nor a swagger field")
	}
	d.spec = specOf(doc)
	found = append(found, lint(d)...)
	d.warnings = specWarnings(found)
	return d, nil
}

// loadOpenAPI3 reads an OpenAPI 3 document and resolves its references.
// (The library reads JSON as YAML; decoding it as JSON instead was slower:
// each level's UnmarshalJSON checks its whole subtree again.)
func loadOpenAPI3(ctx context.Context, data []byte) (doc *openapi3.T, err error) {
	defer recoverLoad(&err)
	return newLoader(ctx).LoadFromData(data)
}

// fromSwagger reads a Swagger 2.0 document and converts it to OpenAPI 3.
func fromSwagger(ctx context.Context, data []byte) (doc *openapi3.T, err error) {
	defer recoverLoad(&err)
	var doc2 openapi2.T
	if err := openapi2.UnmarshalFromData(data, &doc2); err != nil {
		return nil, err
	}
	prepareSwagger(&doc2)
	return openapi2conv.ToV3WithLoader(&doc2, newLoader(ctx), nil)
}

// prepareSwagger settles, before openapi2conv converts a document, what
// it would convert wrongly: a body parameter given by $ref is converted
// once, with the document's consumes, so an operation that consumes media
// types of its own gets a copy; and formData parameters are sent as a form
// even where the consumes in force list neither form type.
func prepareSwagger(doc *openapi2.T) {
	for _, item := range doc.Paths {
		if item == nil {
			continue
		}
		shared := hasFormData(doc, item.Parameters)
		for _, op := range item.Operations() {
			if op == nil {
				continue
			}
			consumes := op.Consumes
			if len(consumes) == 0 {
				consumes = doc.Consumes
			}
			if (shared || hasFormData(doc, op.Parameters)) && !slices.ContainsFunc(consumes, isFormType) {
				op.Consumes = []string{"application/x-www-form-urlencoded"}
			}
			if len(op.Consumes) == 0 {
				continue
			}
			for i, p := range op.Parameters {
				if target := swaggerParam(doc, p); target != nil && target != p && target.In == "body" {
					inline := *target
					op.Parameters[i] = &inline
				}
			}
		}
	}
}

// swaggerParam is a parameter, or the one its $ref names (nil if none).
func swaggerParam(doc *openapi2.T, p *openapi2.Parameter) *openapi2.Parameter {
	if p == nil || p.Ref == "" {
		return p
	}
	if name, ok := strings.CutPrefix(p.Ref, "#/parameters/"); ok {
		if target := doc.Parameters[name]; target != nil && target.Ref == "" {
			return target
		}
	}
	return nil
}

func hasFormData(doc *openapi2.T, params openapi2.Parameters) bool {
	return slices.ContainsFunc(params, func(p *openapi2.Parameter) bool {
		t := swaggerParam(doc, p)
		return t != nil && t.In == "formData"
	})
}

func isFormType(mt string) bool {
	return strings.HasPrefix(mt, "application/x-www-form-urlencoded") || strings.HasPrefix(mt, "multipart/form-data")
}

// errLibraryPanic: the library failed on a document instead of returning
// an error; the document is refused like one that does not load.
var errLibraryPanic = errors.New("the OpenAPI library could not read it")

// recoverLoad turns a panic of the library into an error: a document is
// input, and no input may take the server down.
func recoverLoad(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w (%v)", errLibraryPanic, r)
	}
}

// loadError words what the library says about a document that does not
// load: a reference to another file or URL in the catalog's own words.
func loadError(err error) error {
	var ext *openapi3.DisallowedExternalRefError
	if errors.As(err, &ext) {
		return fmt.Errorf("$ref %q points to another file or URL; a catalog is one document and follows only references within it (#/…)", ext.Ref)
	}
	return err
}

// quoteVersions retags as strings the version fields YAML reads as numbers
// when they are written without quotes (swagger: 2.0, openapi: 3.1,
// info.version: 1.0), which the specification types as strings. It
// reports whether it changed any.
func quoteVersions(doc *yaml.Node) bool {
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	changed := false
	quote := func(n *yaml.Node) {
		if n != nil && n.Kind == yaml.ScalarNode && (n.Tag == "!!float" || n.Tag == "!!int") {
			n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
			changed = true
		}
	}
	quote(mapValue(root, "swagger"))
	quote(mapValue(root, "openapi"))
	quote(mapValue(mapValue(root, "info"), "version"))
	return changed
}

// mapValue is the value of key in a mapping node (nil when n is not a
// mapping or has no such key).
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// versionField reads the swagger or openapi field. A number (swagger:
// 2.0 written without quotes) is taken as its text, with a warning.
func versionField(v any, key string, warnings *[]string) string {
	switch v := v.(type) {
	case string:
		return v
	case float64, int, int64, uint64:
		text := fmt.Sprint(v)
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
// responses are optional, paths may be absent.
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

package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/yaml"
)

// maxSpecWarnings bounds how many complaints of the OpenAPI validator are
// reported: past a few, more of them do not help anyone.
const maxSpecWarnings = 20

// specPrefix opens every departure from the specification.
const specPrefix = "the document does not follow the OpenAPI specification: "

// document is a parsed OpenAPI document in its OpenAPI 3 form.
type document struct {
	// version is the document's own: 2.0, 3.0.x or 3.1.x.
	version string
	t       *openapi3.T
	// warnings: the document loads but does not follow the specification.
	warnings []string
}

// parse loads a Swagger 2.0 or OpenAPI 3.x document (JSON or YAML). A
// $ref to another file or URL is refused: a catalog is one document, and
// following references would let a document read the server's files or
// reach its network.
func parse(ctx context.Context, data []byte) (*document, error) {
	var probe struct {
		Swagger string `json:"swagger"`
		OpenAPI string `json:"openapi"`
	}
	if _, err := yaml.Unmarshal(data, &probe, yaml.DecodeOpts{DisableTimestamps: true}); err != nil {
		return nil, invalid("the document is neither JSON nor YAML: %v", err)
	}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	loader.Context = ctx
	d := &document{}
	switch {
	case probe.Swagger != "":
		if probe.Swagger != "2.0" {
			return nil, invalid("swagger %q: only Swagger 2.0 is supported", probe.Swagger)
		}
		var v2 openapi2.T
		if _, err := yaml.Unmarshal(data, &v2, yaml.DecodeOpts{DisableTimestamps: true}); err != nil {
			return nil, invalid("the Swagger 2.0 document does not decode: %v", err)
		}
		t, err := openapi2conv.ToV3WithLoader(&v2, loader, nil)
		if err != nil {
			return nil, invalid("the Swagger 2.0 document cannot be converted to OpenAPI 3: %v", err)
		}
		d.version, d.t = "2.0", t
	case strings.HasPrefix(probe.OpenAPI, "3."):
		t, err := loader.LoadFromData(data)
		if err != nil {
			return nil, invalid("the OpenAPI %s document does not load: %v", probe.OpenAPI, err)
		}
		d.version, d.t = probe.OpenAPI, t
	case probe.OpenAPI != "":
		return nil, invalid("openapi %q: supported versions are Swagger 2.0 and OpenAPI 3.0 and 3.1", probe.OpenAPI)
	default:
		return nil, invalid("not an OpenAPI document: it has neither an openapi nor a swagger field")
	}
	if err := d.t.Validate(ctx, openapi3.EnableMultiError()); err != nil {
		d.warnings = specWarnings(err)
	}
	return d, nil
}

// specWarnings lists what the OpenAPI validator found; a document that
// breaks a rule of the specification is often still usable.
func specWarnings(err error) []string {
	var errs []error
	var me openapi3.MultiError
	if errors.As(err, &me) {
		errs = me
	} else {
		errs = []error{err}
	}
	var out []string
	for i, e := range errs {
		if i == maxSpecWarnings {
			out = append(out, fmt.Sprintf("… and %d more departures from the OpenAPI specification", len(errs)-i))
			break
		}
		out = append(out, specPrefix+e.Error())
	}
	return out
}

// title is the document's info.title.
func (d *document) title() string {
	if d.t.Info == nil {
		return ""
	}
	return d.t.Info.Title
}

// serverURL is the document's first server URL with its variables set to
// their defaults, made absolute against the document's own URL when it is
// relative (a Swagger 2.0 document without host). "" when there is none.
func (d *document) serverURL(location string) string {
	if len(d.t.Servers) == 0 || d.t.Servers[0] == nil {
		return ""
	}
	srv := d.t.Servers[0]
	u := srv.URL
	for name, v := range srv.Variables {
		if v != nil {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
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
	if d.t.Components == nil || len(d.t.Components.SecuritySchemes) == 0 {
		return nil
	}
	out := map[string]Scheme{}
	for name, ref := range d.t.Components.SecuritySchemes {
		if ref != nil && ref.Value != nil {
			out[name] = schemeOf(ref.Value)
		}
	}
	return out
}

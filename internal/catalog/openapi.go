package catalog

import (
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// spec is an OpenAPI document in its OpenAPI 3 form, as far as a catalog
// reads it: what the library loaded, references resolved. Schemas stay
// the library's (the converter of schema.go reads them).
type spec struct {
	info    *info // nil without an info object
	servers []server
	// paths is nil when the document has no paths object.
	paths    map[string]*pathItem
	security []securityRequirement
	schemes  map[string]*securityScheme
	// hasComponents and hasWebhooks: what OpenAPI 3.1 accepts instead of
	// paths.
	hasComponents, hasWebhooks bool
}

type info struct {
	title, version string
}

type server struct {
	url  string
	vars map[string]serverVariable
}

type serverVariable struct {
	def        string
	hasDefault bool
}

// pathItem is one path's operations by method (upper case) and the
// parameters they share.
type pathItem struct {
	params []*parameter
	ops    map[string]*operation
}

type operation struct {
	id, summary, description string
	tags                     []string
	deprecated               bool
	params                   []*parameter
	body                     *requestBody
	// responses is nil when the operation has no responses object.
	responses map[string]*response
	// security is nil when the operation does not say (the document's
	// applies); empty when it says none.
	security *[]securityRequirement
}

// securityRequirement maps scheme names to scopes: one alternative.
type securityRequirement map[string][]string

type parameter struct {
	name, in, description, style string
	required, deprecated         bool
	explode                      *bool
	// schema is nil when absent; content is the alternative OpenAPI 3
	// offers.
	schema  *openapi3.SchemaRef
	content map[string]*mediaType
}

type requestBody struct {
	description string
	required    bool
	content     map[string]*mediaType
}

type mediaType struct {
	// schema is nil when the media type has none.
	schema *openapi3.SchemaRef
}

type response struct {
	description *string
	content     map[string]*mediaType
}

type securityScheme struct {
	typ, description, name, in, scheme, openIDConnectURL string
	hasFlows                                             bool
}

// specOf reads the parts of a loaded document a catalog uses.
func specOf(doc *openapi3.T) *spec {
	s := &spec{}
	if doc.Info != nil {
		s.info = &info{title: doc.Info.Title, version: doc.Info.Version}
	}
	for _, srv := range doc.Servers {
		if srv == nil {
			continue
		}
		out := server{url: srv.URL, vars: map[string]serverVariable{}}
		for name, v := range srv.Variables {
			if v != nil {
				out.vars[name] = serverVariable{def: v.Default, hasDefault: v.Default != ""}
			}
		}
		s.servers = append(s.servers, out)
	}
	if doc.Paths != nil {
		s.paths = map[string]*pathItem{}
		for path, item := range doc.Paths.Map() {
			if item != nil {
				s.paths[path] = pathItemOf(item)
			}
		}
	}
	s.security = requirementsOf(doc.Security)
	if c := doc.Components; c != nil {
		s.hasComponents = true
		for name, ref := range c.SecuritySchemes {
			if ref == nil || ref.Value == nil {
				continue
			}
			if s.schemes == nil {
				s.schemes = map[string]*securityScheme{}
			}
			v := ref.Value
			s.schemes[name] = &securityScheme{typ: v.Type, description: v.Description, name: v.Name, in: v.In,
				scheme: v.Scheme, openIDConnectURL: v.OpenIdConnectUrl, hasFlows: v.Flows != nil}
		}
	}
	s.hasWebhooks = len(doc.Webhooks) > 0
	return s
}

func pathItemOf(item *openapi3.PathItem) *pathItem {
	out := &pathItem{params: paramsOf(item.Parameters), ops: map[string]*operation{}}
	for method, op := range item.Operations() {
		if op == nil {
			continue
		}
		o := &operation{id: op.OperationID, summary: op.Summary, description: op.Description, tags: op.Tags,
			deprecated: op.Deprecated, params: paramsOf(op.Parameters)}
		if op.RequestBody != nil && op.RequestBody.Value != nil {
			rb := op.RequestBody.Value
			o.body = &requestBody{description: rb.Description, required: rb.Required, content: contentOf(rb.Content)}
		}
		if op.Responses != nil {
			o.responses = map[string]*response{}
			for code, r := range op.Responses.Map() {
				if r != nil && r.Value != nil {
					o.responses[code] = &response{description: r.Value.Description, content: contentOf(r.Value.Content)}
				}
			}
		}
		if op.Security != nil {
			sec := requirementsOf(*op.Security)
			if sec == nil {
				sec = []securityRequirement{}
			}
			o.security = &sec
		}
		out.ops[strings.ToUpper(method)] = o
	}
	return out
}

func paramsOf(list openapi3.Parameters) []*parameter {
	var out []*parameter
	for _, ref := range list {
		if ref == nil || ref.Value == nil {
			continue
		}
		p := ref.Value
		out = append(out, &parameter{name: p.Name, in: p.In, description: p.Description, style: p.Style,
			required: p.Required, deprecated: p.Deprecated, explode: p.Explode, schema: p.Schema, content: contentOf(p.Content)})
	}
	return out
}

// contentOf reads a content map (media types and their schemas).
func contentOf(c openapi3.Content) map[string]*mediaType {
	if c == nil {
		return nil
	}
	out := make(map[string]*mediaType, len(c))
	for mt, m := range c {
		if m != nil {
			out[mt] = &mediaType{schema: m.Schema}
		}
	}
	return out
}

// requirementsOf reads a list of security requirements; nil when absent.
func requirementsOf(reqs openapi3.SecurityRequirements) []securityRequirement {
	if reqs == nil {
		return nil
	}
	out := make([]securityRequirement, 0, len(reqs))
	for _, r := range reqs {
		req := securityRequirement{}
		for name, scopes := range r {
			req[name] = scopes
		}
		out = append(out, req)
	}
	return out
}

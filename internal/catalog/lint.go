package catalog

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// templateParam finds the {name} parts of a path or server URL; like
// responseCode, it is compiled when a document is first checked, not when
// the program starts.
var templateParam = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{([^{}]*)\}`) })

// responseCode is what a key of a responses object may be.
var responseCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([1-5][0-9][0-9]|[1-5]XX|default)$`) })

// parameterIn are the places an OpenAPI 3 parameter can be.
var parameterIn = map[string]bool{"query": true, "header": true, "path": true, "cookie": true}

// lint lists where a document that loaded breaks a rule of the
// specification: the structural rules a reader relies on (required
// fields, unique operationIds, path parameters matching the path
// template, security requirements naming schemes that exist). Each
// message says where and what the rule wants.
func lint(d *document) []string {
	l := &linter{doc: d, ids: map[string][]string{}}
	l.info()
	l.servers()
	l.paths()
	for _, id := range sortedKeys(l.ids) {
		if where := l.ids[id]; len(where) > 1 {
			l.warn("operationId %q is used by %s; an operationId must be unique", id, strings.Join(where, " and "))
		}
	}
	l.requirements("security", d.spec.security)
	l.schemes()
	return l.found
}

type linter struct {
	notes
	doc *document
	// ids lists the operations of each operationId.
	ids map[string][]string
}

func (l *linter) info() {
	i := l.doc.spec.info
	switch {
	case i == nil:
		l.warn("info is missing; a document has an info object with a title and a version")
		return
	case i.title == "":
		l.warn("info.title is missing; it is required")
	}
	if i.version == "" {
		l.warn("info.version (the version of the API) is missing; it is required")
	}
}

func (l *linter) servers() {
	for i, srv := range l.doc.spec.servers {
		if srv.url == "" {
			l.warn("servers[%d] has no url; it is required", i)
			continue
		}
		for _, m := range templateParam().FindAllStringSubmatch(srv.url, -1) {
			if _, ok := srv.vars[m[1]]; !ok {
				l.warn("servers[%d]: the URL %q names {%s}, which is not one of its variables", i, srv.url, m[1])
			}
		}
		for _, name := range sortedKeys(srv.vars) {
			if !srv.vars[name].hasDefault {
				l.warn("servers[%d].variables.%s has no default; it is required", i, name)
			}
		}
	}
}

func (l *linter) paths() {
	s := l.doc.spec
	if s.paths == nil {
		if !l.doc.openAPI31() {
			l.warn("paths is missing; it is required (it may be empty)")
		} else if !s.hasComponents && !s.hasWebhooks {
			l.warn("the document has none of paths, components and webhooks; an OpenAPI 3.1 document has at least one")
		}
		return
	}
	for _, path := range sortedKeys(s.paths) {
		if !strings.HasPrefix(path, "/") {
			l.warn("path %q does not start with /", path)
		}
		item := s.paths[path]
		l.params(path, item.params)
		for _, method := range methodOrder {
			if op := item.ops[method]; op != nil {
				l.operation(path, method, item, op)
			}
		}
	}
}

func (l *linter) operation(path, method string, item *pathItem, op *operation) {
	where := method + " " + path
	if method == "QUERY" && (l.doc.version == "2.0" || strings.HasPrefix(l.doc.version, "3.0") || strings.HasPrefix(l.doc.version, "3.1")) {
		l.warn("%s: the query operation is OpenAPI 3.2's, not %s's", where, l.doc.version)
	}
	if op.id != "" {
		l.ids[op.id] = append(l.ids[op.id], where)
	}
	l.params(where, op.params)
	l.template(where, path, item.params, op.params)
	switch {
	case op.responses == nil && !l.doc.openAPI31():
		l.warn("%s has no responses; an operation lists at least one", where)
	case op.responses != nil && len(op.responses) == 0:
		l.warn("%s: responses is empty; it lists at least one response", where)
	}
	for _, code := range sortedKeys(op.responses) {
		if !responseCode().MatchString(code) {
			l.warn("%s: response %q is not a status code (200, 4XX…) or default", where, code)
		}
		if op.responses[code].description == nil {
			l.warn("%s: response %s has no description; it is required", where, code)
		}
	}
	if op.security != nil {
		l.requirements(where+" security", *op.security)
	}
}

// params checks one list of parameters: each has a name, a known place
// and a schema or a content, and none is declared twice.
func (l *linter) params(where string, list []*parameter) {
	seen := map[string]bool{}
	for _, p := range list {
		if p.name == "" {
			l.warn("%s: a parameter has no name; it is required", where)
			continue
		}
		// A Swagger 2.0 document's places were checked before conversion.
		if l.doc.version != "2.0" && !parameterIn[p.in] {
			if p.in == "" {
				l.warn("%s: parameter %q has no in; it is query, header, path or cookie", where, p.name)
			} else {
				l.warn("%s: parameter %q is in %q; a parameter is in query, header, path or cookie", where, p.name, p.in)
			}
		}
		if (p.schema == nil) == (p.content == nil) {
			l.warn("%s: parameter %q has %s; it has either a schema or a content", where, p.name,
				map[bool]string{true: "neither a schema nor a content", false: "both a schema and a content"}[p.schema == nil])
		} else if len(p.content) > 1 {
			l.warn("%s: parameter %q has a content of %d media types; it has one", where, p.name, len(p.content))
		}
		id := p.in + "\x00" + p.name
		if seen[id] {
			l.warn("%s: the %s parameter %q is declared twice", where, p.in, p.name)
		}
		seen[id] = true
	}
}

// template checks that the path parameters of an operation (its own and
// its path's) are those its path template names, and required.
func (l *linter) template(where, path string, shared, own []*parameter) {
	declared := map[string]*parameter{}
	for _, list := range [][]*parameter{shared, own} {
		for _, p := range list {
			if p.in == "path" {
				declared[p.name] = p
			}
		}
	}
	var named []string
	for _, m := range templateParam().FindAllStringSubmatch(path, -1) {
		named = append(named, m[1])
		if _, ok := declared[m[1]]; !ok {
			l.warn("%s: the path names {%s} but no path parameter %q is declared", where, m[1], m[1])
		}
	}
	for _, name := range sortedKeys(declared) {
		switch {
		case !slices.Contains(named, name):
			l.warn("%s: path parameter %q is not in the path template", where, name)
		case !declared[name].required:
			l.warn("%s: path parameter %q must be required: true", where, name)
		}
	}
}

// requirements checks that security requirements name defined schemes.
func (l *linter) requirements(where string, reqs []securityRequirement) {
	defined := "components.securitySchemes"
	if l.doc.version == "2.0" {
		defined = "securityDefinitions"
	}
	for i, req := range reqs {
		for _, name := range sortedKeys(req) {
			if _, ok := l.doc.spec.schemes[name]; !ok {
				l.warn("%s[%d] names the security scheme %q, which %s does not define", where, i, name, defined)
			}
		}
	}
}

// schemes checks that each security scheme has what its type needs.
func (l *linter) schemes() {
	for _, name := range sortedKeys(l.doc.spec.schemes) {
		s := l.doc.spec.schemes[name]
		where := "security scheme " + name
		switch s.typ {
		case "apiKey":
			if s.name == "" {
				l.warn("%s: an apiKey scheme needs name (of the header, query parameter or cookie)", where)
			}
			if s.in != "header" && s.in != "query" && s.in != "cookie" {
				l.warn("%s: an apiKey scheme is in header, query or cookie, not %q", where, s.in)
			}
		case "http":
			if s.scheme == "" {
				l.warn("%s: an http scheme needs scheme (bearer, basic…)", where)
			}
		case "oauth2":
			if !s.hasFlows {
				l.warn("%s: an oauth2 scheme needs flows", where)
			}
		case "openIdConnect":
			if s.openIDConnectURL == "" {
				l.warn("%s: an openIdConnect scheme needs openIdConnectUrl", where)
			}
		case "mutualTLS":
			if !l.doc.openAPI31() {
				l.warn("%s: type mutualTLS is OpenAPI 3.1's", where)
			}
		case "":
			l.warn("%s has no type; it is required", where)
		default:
			l.warn("%s: type %q is none of apiKey, http, oauth2, openIdConnect and mutualTLS", where, s.typ)
		}
	}
}

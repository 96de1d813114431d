package action

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"stepwise.dev/stepwise/internal/workflow"
)

// Defaults and limits of the http action.
const (
	httpDefaultTimeout  = 30 * time.Second
	httpDefaultMaxBytes = 10 << 20
	httpMaxMaxBytes     = 1 << 30
	httpMaxRedirects    = 10
)

// httpMethods are the methods the http action sends.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// httpInput is a step's `with`, checked and with defaults filled in.
type httpInput struct {
	method      string
	url         *url.URL
	header      http.Header
	host        string // a Host header, which net/http takes from Request.Host
	body        []byte
	hasBody     bool
	timeout     time.Duration
	expect      statusSet
	parse       string
	maxBytes    int64
	follow      bool
	idempotency bool
	// secrets are values that messages must never show: sensitive header
	// values and query values, the URL's user info.
	secrets []string
}

// parseHTTPInput checks a rendered `with` (in the JSON data model). The
// registry has validated it against the input schema already when the
// engine calls; the checks here keep a direct caller from sending
// something malformed, and cover what a schema cannot say.
func parseHTTPInput(in map[string]any) (*httpInput, error) {
	p := &httpInput{method: "GET", header: http.Header{}, timeout: httpDefaultTimeout, parse: "auto",
		maxBytes: httpDefaultMaxBytes, follow: true, idempotency: true}
	if m, ok := in["method"]; ok {
		s, _ := m.(string)
		if !slices.Contains(httpMethods, s) {
			return nil, inputError("http", "method %v: want one of %s", m, strings.Join(httpMethods, ", "))
		}
		p.method = s
	}
	if err := p.parseURL(in["url"]); err != nil {
		return nil, err
	}
	if err := p.parseHeaders(in["headers"]); err != nil {
		return nil, err
	}
	if err := p.parseQuery(in["query"]); err != nil {
		return nil, err
	}
	if err := p.parseBody(in); err != nil {
		return nil, err
	}
	if err := p.parseOptions(in); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *httpInput) parseURL(v any) error {
	s, _ := v.(string)
	if s == "" {
		return inputError("http", "url: want an http:// or https:// URL")
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Parse quotes the whole URL, query and all: say less.
		return inputError("http", "url: not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return inputError("http", "url: scheme %q is not allowed; use http or https", u.Scheme)
	}
	if u.Host == "" {
		return inputError("http", "url: no host")
	}
	if u.User != nil {
		p.secrets = append(p.secrets, u.User.Username())
		if pw, ok := u.User.Password(); ok {
			p.secrets = append(p.secrets, pw)
		}
	}
	for _, part := range strings.Split(u.RawQuery, "&") {
		k, v, _ := strings.Cut(part, "=")
		if name, err := url.QueryUnescape(k); err == nil && sensitiveName(name) {
			p.secrets = append(p.secrets, v)
			if dv, err := url.QueryUnescape(v); err == nil {
				p.secrets = append(p.secrets, dv)
			}
		}
	}
	p.url = u
	return nil
}

func (p *httpInput) parseHeaders(v any) error {
	if v == nil {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return inputError("http", "headers: want an object of header names to values")
	}
	for name, raw := range m {
		if !validHeaderName(name) {
			return inputError("http", "headers: %q is not a valid header name", name)
		}
		val, ok := scalarText(raw)
		if !ok {
			// Never the value: it may be a credential.
			return inputError("http", "headers: the value of %s must be a string, number or boolean", name)
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			return inputError("http", "headers: the value of %s contains a line break or NUL", name)
		}
		if sensitiveName(name) {
			p.secrets = append(p.secrets, secretParts(val)...)
		}
		if http.CanonicalHeaderKey(name) == "Host" {
			p.host = val
			continue
		}
		p.header.Add(name, val)
	}
	return nil
}

func (p *httpInput) parseQuery(v any) error {
	if v == nil {
		return nil
	}
	vals, err := params("query", v)
	if err != nil {
		return err
	}
	for name, vs := range vals {
		if sensitiveName(name) {
			p.secrets = append(p.secrets, vs...)
		}
	}
	// Appended to the URL's own query, which stays as written.
	if enc := vals.Encode(); enc != "" {
		if p.url.RawQuery != "" {
			p.url.RawQuery += "&"
		}
		p.url.RawQuery += enc
	}
	return nil
}

// parseBody takes at most one of body (JSON), body_text and form; a null
// value counts as absent, so that a template may leave the body out.
func (p *httpInput) parseBody(in map[string]any) error {
	var given []string
	for _, k := range []string{"body", "body_text", "form"} {
		if in[k] != nil {
			given = append(given, k)
		}
	}
	if len(given) > 1 {
		return inputError("http", "%s: give at most one request body", strings.Join(given, " and "))
	}
	if len(given) == 0 {
		return nil
	}
	contentType := ""
	switch given[0] {
	case "body":
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false) // send <, > and & as written
		if err := enc.Encode(in["body"]); err != nil {
			return inputError("http", "body: not JSON: %v", err)
		}
		p.body, contentType = bytes.TrimSuffix(buf.Bytes(), []byte("\n")), "application/json"
	case "body_text":
		s, ok := in["body_text"].(string)
		if !ok {
			return inputError("http", "body_text: want a string")
		}
		p.body, contentType = []byte(s), "text/plain; charset=utf-8"
	case "form":
		vals, err := params("form", in["form"])
		if err != nil {
			return err
		}
		p.body, contentType = []byte(vals.Encode()), "application/x-www-form-urlencoded"
	}
	p.hasBody = true
	if p.header.Get("Content-Type") == "" {
		p.header.Set("Content-Type", contentType)
	}
	return nil
}

func (p *httpInput) parseOptions(in map[string]any) error {
	if v, ok := in["timeout"]; ok {
		s, _ := v.(string)
		d, err := workflow.ParseDuration(s)
		if err != nil || d <= 0 {
			return inputError("http", "timeout %v: want a positive duration such as 10s", v)
		}
		p.timeout = d
	}
	if v, ok := in["parse"]; ok {
		if v != "auto" && v != "json" && v != "text" {
			return inputError("http", "parse %v: want auto, json or text", v)
		}
		p.parse = v.(string)
	}
	if v, ok := in["max_response_bytes"]; ok {
		f, _ := v.(float64)
		if f < 1 || f > httpMaxMaxBytes || f != float64(int64(f)) {
			return inputError("http", "max_response_bytes %v: want a whole number from 1 to %d", v, httpMaxMaxBytes)
		}
		p.maxBytes = int64(f)
	}
	for k, dst := range map[string]*bool{"follow_redirects": &p.follow, "idempotency": &p.idempotency} {
		if v, ok := in[k]; ok {
			b, isBool := v.(bool)
			if !isBool {
				return inputError("http", "%s %v: want true or false", k, v)
			}
			*dst = b
		}
	}
	if v, ok := in["expect"]; ok {
		set, err := parseStatusSet(v)
		if err != nil {
			return err
		}
		p.expect = set
	} else {
		p.expect = statusSet{{200, 299, "2xx"}}
		if !p.follow {
			// Not following, the redirect is the answer.
			p.expect = append(p.expect, statusRange{300, 399, "3xx"})
		}
	}
	return nil
}

// request builds the request. key is the engine's idempotency key.
func (p *httpInput) request(ctx context.Context, key string) (*http.Request, error) {
	var body io.Reader // a nil interface when there is no body, never a nil *bytes.Reader
	if p.hasBody {
		body = bytes.NewReader(p.body)
	}
	req, err := http.NewRequestWithContext(ctx, p.method, p.url.String(), body)
	if err != nil {
		return nil, inputError("http", "%s %s: %v", p.method, redactURL(p.url), scrubbed(err.Error(), p.secrets))
	}
	req.Header = p.header.Clone()
	if p.host != "" {
		req.Host = p.host
	}
	// GET and HEAD change nothing, so repeating them is harmless; every
	// other method gets the key the engine keeps for all retries of this
	// execution, unless the workflow set its own or turned it off.
	if key != "" && p.idempotency && p.method != "GET" && p.method != "HEAD" && req.Header.Get("Idempotency-Key") == "" {
		req.Header.Set("Idempotency-Key", key)
	}
	return req, nil
}

// params turns a query or form object into values: scalars, lists of
// scalars (the name repeated), null (left out).
func params(field string, v any) (url.Values, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, inputError("http", "%s: want an object", field)
	}
	vals := url.Values{}
	for name, raw := range m {
		items, isList := raw.([]any)
		if !isList {
			items = []any{raw}
		}
		for _, it := range items {
			if it == nil {
				continue
			}
			s, ok := scalarText(it)
			if !ok {
				return nil, inputError("http", "%s.%s: want a string, number, boolean or a list of them", field, name)
			}
			vals.Add(name, s)
		}
	}
	return vals, nil
}

// validHeaderName reports whether name is an HTTP token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if r > 0x7e || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

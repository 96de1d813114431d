package catalog

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"stepwise.dev/stepwise/internal/secret"
)

// Scheme types a catalog knows how to send.
const (
	SchemeAPIKey = "apiKey" // a header, query parameter or cookie
	SchemeBearer = "bearer" // Authorization: Bearer …; also OAuth 2 and OpenID Connect tokens
	SchemeBasic  = "basic"  // Authorization: Basic …
)

// Scheme is a security scheme of the document.
type Scheme struct {
	Type string `json:"type"`
	// In and Name place an API key: header, query or cookie, and its name.
	In   string `json:"in,omitempty"`
	Name string `json:"name,omitempty"`
	// Description is the document's, for people choosing credentials.
	Description string `json:"description,omitempty"`
	// Unsupported says why the scheme cannot be sent (mutual TLS, digest…).
	Unsupported string `json:"unsupported,omitempty"`
}

// Credential is what to send for one security scheme. Secret parts are
// environment references ($NAME), read when an operation is called, so the
// catalog file never holds a secret.
type Credential struct {
	// Value is the API key or the bearer token: $NAME.
	Value string `json:"value,omitempty" jsonschema:"the API key or bearer token, as $NAME: an environment variable of the server"`
	// Username is the basic-auth user: a name, or $NAME.
	Username string `json:"username,omitempty" jsonschema:"basic auth only: the user name (a name or $NAME)"`
	// Password is the basic-auth password: $NAME.
	Password string `json:"password,omitempty" jsonschema:"basic auth only: the password, as $NAME"`
}

// schemeOf maps a document's security scheme to what a catalog sends.
func schemeOf(s *securityScheme) Scheme {
	out := Scheme{Description: s.description}
	switch strings.ToLower(s.typ) {
	case "apikey":
		out.Type, out.In, out.Name = SchemeAPIKey, s.in, s.name
		if s.in != "header" && s.in != "query" && s.in != "cookie" {
			out.Unsupported = fmt.Sprintf("API key in %q", s.in)
		}
	case "http":
		switch strings.ToLower(s.scheme) {
		case "bearer":
			out.Type = SchemeBearer
		case "basic":
			out.Type = SchemeBasic
		default:
			out.Type, out.Unsupported = "http", fmt.Sprintf("HTTP authentication scheme %q", s.scheme)
		}
	case "oauth2", "openidconnect":
		// The token is obtained elsewhere; the catalog sends it as a bearer.
		out.Type = SchemeBearer
	default:
		out.Type, out.Unsupported = s.typ, fmt.Sprintf("security scheme type %q", s.typ)
	}
	return out
}

// checkAuth refuses credentials for schemes the document does not have or
// that cannot be sent, and any secret given as a value instead of $NAME.
// Errors never repeat a value: it may be a secret.
func checkAuth(auth map[string]Credential, schemes map[string]Scheme) error {
	var problems []string
	for _, name := range sortedKeys(auth) {
		cred := auth[name]
		sc, ok := schemes[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("auth %q: the document has no such security scheme (it has: %s)", name, strings.Join(sortedKeys(schemes), ", ")))
			continue
		}
		if sc.Unsupported != "" {
			problems = append(problems, fmt.Sprintf("auth %q: %s cannot be sent by a catalog", name, sc.Unsupported))
			continue
		}
		secretField, secretValue := "value", cred.Value
		if sc.Type == SchemeBasic {
			secretField, secretValue = "password", cred.Password
			if cred.Username == "" || cred.Value != "" {
				problems = append(problems, fmt.Sprintf("auth %q: basic authentication takes username and password", name))
				continue
			}
		} else if cred.Username != "" || cred.Password != "" {
			problems = append(problems, fmt.Sprintf("auth %q: a %s scheme takes value only", name, sc.Type))
			continue
		}
		if !secret.IsEnvRef(secretValue) {
			return fmt.Errorf("%w: auth %q: %s must be an environment reference such as $API_TOKEN, not the secret itself (it would be stored in clear)", ErrSecretInClear, name, secretField)
		}
	}
	if len(problems) > 0 {
		return &InvalidError{Problems: problems}
	}
	return nil
}

// applyAuth adds the credentials of the first security alternative of op
// that the catalog has every credential for (an empty alternative, "no
// authentication", is the fallback, not a first choice). It returns the
// resolved secret values, to keep them out of error messages, and — when
// no alternative could be served and none allows going without — the
// schemes that lack credentials, for a hint when the server refuses.
func (c *Catalog) applyAuth(op *Operation, req *http.Request, query url.Values, lookup func(string) (string, bool)) (secrets, missing []string, err error) {
	anonymous := len(op.Security) == 0
	for _, alt := range op.Security {
		if len(alt) == 0 {
			anonymous = true
			continue
		}
		var lacking []string
		for _, name := range alt {
			if _, ok := c.Auth[name]; !ok {
				lacking = append(lacking, name)
			}
		}
		if len(lacking) > 0 {
			for _, name := range lacking {
				if !slices.Contains(missing, name) {
					missing = append(missing, name)
				}
			}
			continue
		}
		for _, name := range alt {
			vals, err := c.sendCredential(name, req, query, lookup)
			if err != nil {
				return nil, nil, err
			}
			secrets = append(secrets, vals...)
		}
		return secrets, nil, nil
	}
	if anonymous {
		missing = nil
	}
	return nil, missing, nil
}

// sendCredential resolves one scheme's credential and places it.
func (c *Catalog) sendCredential(name string, req *http.Request, query url.Values, lookup func(string) (string, bool)) ([]string, error) {
	sc, cred := c.Schemes[name], c.Auth[name]
	resolve := func(field, ref string) (string, error) {
		v, err := secret.ResolveEnvRef(ref, lookup)
		if err != nil {
			return "", fmt.Errorf("credential %s of security scheme %q: %w", field, name, err)
		}
		return v, nil
	}
	switch sc.Type {
	case SchemeAPIKey:
		v, err := resolve("value", cred.Value)
		if err != nil {
			return nil, err
		}
		switch sc.In {
		case "header":
			req.Header.Set(sc.Name, v)
		case "query":
			query.Set(sc.Name, v)
		case "cookie":
			req.AddCookie(&http.Cookie{Name: sc.Name, Value: v})
		}
		return []string{v}, nil
	case SchemeBearer:
		v, err := resolve("value", cred.Value)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+v)
		return []string{v}, nil
	case SchemeBasic:
		user := cred.Username
		if secret.IsEnvRef(user) {
			var err error
			if user, err = resolve("username", user); err != nil {
				return nil, err
			}
		}
		pw, err := resolve("password", cred.Password)
		if err != nil {
			return nil, err
		}
		req.SetBasicAuth(user, pw)
		return []string{pw}, nil
	}
	return nil, fmt.Errorf("security scheme %q cannot be sent: %s", name, sc.Unsupported)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
)

// Server is how to reach one MCP server: a program spoken to over stdio
// (Command, Args, Env) or a streamable HTTP endpoint (URL, Headers). Env
// and header values may hold $NAME references to stepwise's environment;
// they stay references here and are resolved only when a connection opens.
type Server struct {
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// envName is what an environment variable of a stdio server may be called.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// problems lists what is wrong with s, in a stable order; none when it is
// usable.
func (s Server) problems() []string {
	var out []string
	switch {
	case s.Command != "" && s.URL != "":
		out = append(out, "give command (a stdio server) or url (an HTTP server), not both")
	case s.Command == "" && s.URL == "":
		out = append(out, "give command (a stdio server) or url (an HTTP server)")
	}
	if s.Command == "" && (len(s.Args) > 0 || len(s.Env) > 0) {
		out = append(out, "args and env go with command")
	}
	if s.URL == "" && len(s.Headers) > 0 {
		out = append(out, "headers go with url")
	}
	if s.URL != "" {
		if u, err := url.Parse(s.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			out = append(out, "url must be an http:// or https:// URL")
		}
	}
	for _, k := range sortedKeys(s.Env) {
		if !envName.MatchString(k) {
			out = append(out, fmt.Sprintf("env %q: not a variable name", k))
		}
		if err := checkRefs(s.Env[k]); err != nil {
			out = append(out, fmt.Sprintf("env %s: %v", k, err))
		}
	}
	for _, k := range sortedKeys(s.Headers) {
		if err := checkRefs(s.Headers[k]); err != nil {
			out = append(out, fmt.Sprintf("header %s: %v", k, err))
		}
	}
	return out
}

// describe names a server in messages and logs without anything that could
// be secret: no arguments, environment, headers, URL user or query.
func (s Server) describe() string {
	if s.Command != "" {
		return fmt.Sprintf("command %q", filepath.Base(s.Command))
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return "an HTTP server"
	}
	return fmt.Sprintf("%s://%s%s", u.Scheme, u.Host, u.Path)
}

// identity is the pool key of an inline server: a hash of its definition
// (with references unresolved), so two steps naming the same server share
// one connection.
func (s Server) identity() string {
	b, _ := json.Marshal(s) // maps marshal with sorted keys: stable
	sum := sha256.Sum256(b)
	return "inline:" + hex.EncodeToString(sum[:16])
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

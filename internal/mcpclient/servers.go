package mcpclient

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/internal/ident"
)

// ServersFile is the name of the file, in the home directory, that names
// the MCP servers workflows may call:
//
//	servers:
//	  github:
//	    command: github-mcp-server
//	    args: [stdio]
//	    env: {GITHUB_PERSONAL_ACCESS_TOKEN: $GITHUB_TOKEN}
//	  search:
//	    url: https://search.example.com/mcp
//	    headers: {Authorization: Bearer $SEARCH_TOKEN}
const ServersFile = "servers.yaml"

// LoadServers reads a servers file. A missing file names no servers. Every
// problem of the file is reported at once, each with its line.
func LoadServers(path string) (map[string]Server, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Server{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	servers, problems := ParseServers(data)
	if len(problems) > 0 {
		return nil, &ServersError{File: path, Problems: problems}
	}
	return servers, nil
}

// ServersError lists the problems of a servers file.
type ServersError struct {
	File     string
	Problems []string // "line N: what is wrong"
}

func (e *ServersError) Error() string {
	return fmt.Sprintf("%s is invalid: %s", e.File, strings.Join(e.Problems, "; "))
}

// ParseServers reads the servers file's content. It returns the servers
// that are valid and the problems found, each prefixed with its line.
func ParseServers(data []byte) (map[string]Server, []string) {
	p := &serversParser{servers: map[string]Server{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return p.servers, nil // an empty file names no servers
		}
		return nil, []string{"not valid YAML: " + err.Error()}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	p.file(root)
	return p.servers, p.problems
}

type serversParser struct {
	servers  map[string]Server
	problems []string
}

func (p *serversParser) problem(n *yaml.Node, format string, args ...any) {
	p.problems = append(p.problems, fmt.Sprintf("line %d: ", n.Line)+fmt.Sprintf(format, args...))
}

// entries returns a mapping's key and value nodes, reporting a node that
// is not a mapping or has duplicate keys.
func (p *serversParser) entries(n *yaml.Node, what string) (keys, values []*yaml.Node) {
	if n.Kind != yaml.MappingNode {
		p.problem(n, "%s must be a mapping", what)
		return nil, nil
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.problem(k, "%s: keys must be plain names", what)
			continue
		}
		if seen[k.Value] {
			p.problem(k, "%s: %q appears twice", what, k.Value)
			continue
		}
		seen[k.Value] = true
		keys, values = append(keys, k), append(values, v)
	}
	return keys, values
}

func (p *serversParser) file(root *yaml.Node) {
	keys, values := p.entries(root, "the file")
	found := false
	for i, k := range keys {
		if k.Value != "servers" {
			p.problem(k, "unknown key %q (the file holds servers:)", k.Value)
			continue
		}
		found = true
		names, defs := p.entries(values[i], "servers")
		for j, name := range names {
			p.server(name, defs[j])
		}
	}
	if !found && root.Kind == yaml.MappingNode {
		p.problem(root, "no servers: mapping")
	}
}

func (p *serversParser) server(name, def *yaml.Node) {
	if !ident.Server.Valid(name.Value) {
		p.problem(name, "server name %q: use letters, digits, _, . and - (at most 64)", name.Value)
		return
	}
	what := fmt.Sprintf("server %s", name.Value)
	keys, values := p.entries(def, what)
	if keys == nil && def.Kind != yaml.MappingNode {
		return
	}
	var s Server
	for i, k := range keys {
		v := values[i]
		switch k.Value {
		case "command":
			s.Command = p.text(v, what+": command")
		case "url":
			s.URL = p.text(v, what+": url")
		case "args":
			if v.Kind != yaml.SequenceNode {
				p.problem(v, "%s: args must be a list of strings", what)
				continue
			}
			for _, a := range v.Content {
				s.Args = append(s.Args, p.text(a, what+": args"))
			}
		case "env":
			s.Env = p.strings(v, what+": env")
		case "headers":
			s.Headers = p.strings(v, what+": headers")
		default:
			p.problem(k, "%s: unknown key %q (want command, args, env for a stdio server; url, headers for an HTTP server)", what, k.Value)
		}
	}
	bad := false
	for _, msg := range s.problems() {
		p.problem(name, "%s: %s", what, msg)
		bad = true
	}
	if !bad {
		p.servers[name.Value] = s
	}
}

// text reads a scalar as text: numbers and booleans are taken as written,
// lists and mappings are refused.
func (p *serversParser) text(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.problem(n, "%s must be a string", what)
		return ""
	}
	return n.Value
}

func (p *serversParser) strings(n *yaml.Node, what string) map[string]string {
	keys, values := p.entries(n, what)
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		out[k.Value] = p.text(values[i], what+" "+k.Value)
	}
	return out
}

package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/yamlsize"
)

// maxTreeDepth bounds how deep a document nests; deeper ones are refused
// rather than walked.
const maxTreeDepth = 512

// decodeTree reads a JSON or YAML document into plain data: objects as
// map[string]any, arrays as []any, numbers as float64 (as JSON has them),
// strings, booleans and nil. YAML timestamps stay strings; mapping keys
// are their text (a response code 200 is the key "200"); merge keys (<<)
// and aliases are expanded.
func decodeTree(data []byte) (any, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var v any
		jsonErr := json.Unmarshal(trimmed, &v)
		if jsonErr == nil {
			return v, nil
		}
		// YAML's flow style also starts with {; if it does not read as
		// YAML either, the JSON error is the one that helps.
		v, err := decodeYAML(data)
		var tooLarge *tooLargeError
		switch {
		case err == nil:
			return v, nil
		case errors.As(err, &tooLarge):
			return nil, err
		}
		return nil, jsonErr
	}
	return decodeYAML(data)
}

// maxExpanded bounds, in bytes, what a YAML document stands for once its
// aliases are expanded (yamlsize.Expanded: the text of its scalars and a
// byte per node), or twice the document's size when that is more, so that
// every document without aliases passes (MaxDocumentSize is half of it): a
// megabyte scalar aliased a few thousand times is few values but gigabytes
// of text for everything that reads them.
const maxExpanded = 64 << 20

// tooLargeError: a document expands beyond what a catalog reads.
type tooLargeError struct {
	reason string
}

func (e *tooLargeError) Error() string { return e.reason }

// decodeYAML reads one YAML document through its node tree, which keeps
// scalars as written until their tag says what they are.
func decodeYAML(data []byte) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	// Measured on the node tree, before anything is built from it.
	if limit := max(maxExpanded, 2*int64(len(data))); yamlsize.Expanded(&doc, limit) > limit {
		return nil, &tooLargeError{fmt.Sprintf("the document expands to more than %d MiB when its YAML aliases are expanded (an alias repeated too often?)", limit>>20)}
	}
	// Every node of a document without aliases takes at least two bytes:
	// more than that is an alias expanding too far.
	y := &yamlReader{budget: len(data)/2 + 1<<16, open: map[*yaml.Node]bool{}}
	v, err := y.value(&doc, 0)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// yamlReader turns a YAML node tree into plain data.
type yamlReader struct {
	budget int
	// open holds the anchors being expanded: an alias inside its own
	// anchor would never end.
	open map[*yaml.Node]bool
}

var errYAMLTooLarge = &tooLargeError{"the YAML document expands to too many values (aliases repeated too often?)"}

func (y *yamlReader) value(n *yaml.Node, depth int) (any, error) {
	if depth > maxTreeDepth {
		return nil, fmt.Errorf("the document nests deeper than %d levels", maxTreeDepth)
	}
	if y.budget--; y.budget < 0 {
		return nil, errYAMLTooLarge
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return y.value(n.Content[0], depth+1)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, nil
		}
		if y.open[n.Alias] {
			return nil, fmt.Errorf("line %d: the alias *%s is inside its own anchor", n.Line, n.Value)
		}
		y.open[n.Alias] = true
		defer delete(y.open, n.Alias)
		return y.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := y.value(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		return y.mapping(n, depth)
	case yaml.ScalarNode:
		return scalar(n), nil
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// mapping reads a mapping; keys written in it win over merged ones, and
// of several merged mappings the first one that has a key gives it.
func (y *yamlReader) mapping(n *yaml.Node, depth int) (map[string]any, error) {
	out := make(map[string]any, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := y.key(k, depth)
		if err != nil {
			return nil, err
		}
		val, err := y.value(v, depth+1)
		if err != nil {
			return nil, err
		}
		out[key] = val
	}
	for _, m := range merges {
		var sources []*yaml.Node
		if target := resolveAlias(m); target != nil && target.Kind == yaml.SequenceNode {
			sources = target.Content
		} else {
			sources = []*yaml.Node{m}
		}
		for _, s := range sources {
			v, err := y.value(s, depth+1)
			if err != nil {
				return nil, err
			}
			obj, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("line %d: a merge key (<<) takes a mapping or a list of mappings", m.Line)
			}
			for k, v := range obj {
				if _, has := out[k]; !has {
					out[k] = v
				}
			}
		}
	}
	return out, nil
}

// key is a mapping key as text: a scalar as written, anything else as
// the JSON of its value.
func (y *yamlReader) key(k *yaml.Node, depth int) (string, error) {
	if t := resolveAlias(k); t != nil && t.Kind == yaml.ScalarNode {
		if t.Tag == "!!null" {
			return "null", nil
		}
		return t.Value, nil
	}
	v, err := y.value(k, depth+1)
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("line %d: a mapping key: %w", k.Line, err)
	}
	return string(data), nil
}

// resolveAlias follows an alias to its anchor (nil for a dangling one).
func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == maxTreeDepth {
			return nil
		}
		n = n.Alias
	}
	return n
}

// scalar reads a scalar by its tag. Timestamps, binary and unknown tags
// stay the text as written; numbers that JSON cannot hold (.inf, .nan)
// too.
func scalar(n *yaml.Node) any {
	switch n.ShortTag() {
	case "!!null":
		return nil
	case "!!bool":
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			return b
		}
	case "!!int":
		v := strings.ReplaceAll(n.Value, "_", "")
		if i, err := strconv.ParseInt(v, 0, 64); err == nil {
			return float64(i)
		}
		if u, err := strconv.ParseUint(v, 0, 64); err == nil {
			return float64(u)
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) {
			return f
		}
	case "!!float":
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
	}
	return n.Value
}

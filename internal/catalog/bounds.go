package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"

	"go.yaml.in/yaml/v4"

	"stepwise.dev/stepwise/internal/yamlsize"
)

// maxTreeDepth bounds how deep a document nests; deeper ones are refused
// before the OpenAPI library reads them (it walks them recursively).
const maxTreeDepth = 512

// maxExpanded bounds, in bytes, what a YAML document stands for once its
// aliases are expanded (yamlsize.Expanded: the text of its scalars and a
// byte per node), or twice the document's size when that is more, so that
// every document without aliases passes (MaxDocumentSize is half of it): a
// megabyte scalar aliased a few thousand times is few values but gigabytes
// of text for everything that reads them.
const maxExpanded = 64 << 20

// tooLargeError: a document expands or nests beyond what a catalog reads.
type tooLargeError struct {
	reason string
}

func (e *tooLargeError) Error() string { return e.reason }

// isJSONText reports whether a document is written as JSON (an object).
func isJSONText(data []byte) bool {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// checkBounds measures a document before the library reads it: how deep
// it nests and, for YAML, what its aliases expand to. A *tooLargeError
// when it goes past a bound; a syntax error when it is not YAML at all.
// It returns the YAML node tree it measured (nil for JSON, which has no
// aliases).
func checkBounds(data []byte) (*yaml.Node, error) {
	if isJSONText(data) && json.Valid(data) {
		if jsonDepth(data) > maxTreeDepth {
			return nil, &tooLargeError{fmt.Sprintf("the document nests deeper than %d levels", maxTreeDepth)}
		}
		return nil, nil
	}
	// Not JSON: YAML (of which JSON's syntax errors may be flow style).
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		if isJSONText(data) {
			var v any
			return nil, json.Unmarshal(data, &v) // the JSON error helps more
		}
		return nil, err
	}
	// Measured on the node tree, before anything is built from it.
	if limit := max(maxExpanded, 2*int64(len(data))); yamlsize.Expanded(&doc, limit) > limit {
		return nil, &tooLargeError{fmt.Sprintf("the document expands to more than %d MiB when its YAML aliases are expanded (an alias repeated too often?)", limit>>20)}
	}
	if d := yamlDepth(&doc, map[*yaml.Node]int{}); d > maxTreeDepth {
		return nil, &tooLargeError{fmt.Sprintf("the document nests deeper than %d levels", maxTreeDepth)}
	}
	return &doc, nil
}

// jsonDepth is how deep JSON text nests (its brackets outside strings).
func jsonDepth(data []byte) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// yamlDepth is how deep a node nests once its aliases are expanded
// (memoized per node; an alias inside its own anchor counts as too deep).
func yamlDepth(n *yaml.Node, memo map[*yaml.Node]int) int {
	if n == nil {
		return 0
	}
	if d, ok := memo[n]; ok {
		if d < 0 {
			return maxTreeDepth + 1 // being measured: an alias inside its own anchor
		}
		return d
	}
	memo[n] = -1
	deepest := 0
	if n.Kind == yaml.AliasNode {
		deepest = yamlDepth(n.Alias, memo)
	}
	for _, c := range n.Content {
		deepest = max(deepest, yamlDepth(c, memo))
		if deepest > maxTreeDepth {
			break
		}
	}
	memo[n] = deepest + 1
	return deepest + 1
}

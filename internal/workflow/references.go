package workflow

import (
	"sort"
	"strconv"
	"strings"

	"stepwise.dev/stepwise/internal/expr"
)

// Reference is one `${{ }}` expression of a document and the variables it
// reads, for tools that show what a workflow depends on.
type Reference struct {
	// Path is the JSON pointer of the string holding the expression.
	Path string `json:"path"`
	// Expression is the source between the delimiters, trimmed.
	Expression string `json:"expression"`
	// Reads lists the variables read, as dotted paths ("inputs.region",
	// "steps.create.output.body.id").
	Reads []string `json:"reads,omitempty"`
}

// References lists every expression of a document's plain value, in
// document order (map keys sorted). Expressions that do not parse are
// listed without reads; validation reports them.
func References(value any) []Reference {
	var out []Reference
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(path+"/"+escapePointer(k), x[k])
			}
		case []any:
			for i, e := range x {
				walk(path+"/"+strconv.Itoa(i), e)
			}
		case string:
			if !expr.HasExpr(x) {
				return
			}
			segs, err := expr.Scan(x)
			if err != nil {
				return
			}
			for _, sg := range segs {
				if !sg.Expr {
					continue
				}
				r := Reference{Path: path, Expression: strings.TrimSpace(sg.Text)}
				if a, err := expr.Analyze(sg.Text); err == nil {
					seen := map[string]bool{}
					for _, ref := range a.Refs {
						name := strings.Join(append([]string{ref.Root}, ref.Path...), ".")
						if !seen[name] {
							seen[name] = true
							r.Reads = append(r.Reads, name)
						}
					}
				}
				out = append(out, r)
			}
		}
	}
	walk("", value)
	return out
}

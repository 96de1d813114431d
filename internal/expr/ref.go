package expr

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
)

// Ref is a reference to a variable of the evaluation context, such as
// inputs.region or steps.create.output.body.
type Ref struct {
	// Root is the top-level name: inputs, steps, run, env, item, index, …
	Root string
	// Path holds the constant member names that follow the root, as far as
	// they are known before evaluation (steps.x["y"].z gives [x y z];
	// steps[name] gives none).
	Path []string
	// Offset is the byte offset of the reference within the expression.
	Offset int
	// Declassified: the reference is inside a declassify call, so what it
	// reads does not make the expression's value secret.
	Declassified bool
}

// Call is a call of a function that is neither one of expr-lang's builtins
// nor declassify.
type Call struct {
	Name   string
	Offset int
}

// Analysis is what an expression refers to.
type Analysis struct {
	Refs  []Ref
	Calls []Call
}

// SyntaxError is an expression that does not parse or cannot work
// whatever the data (wrong number of arguments, mismatched constant types).
type SyntaxError struct {
	// Offset is the byte offset within the expression.
	Offset  int
	Message string
}

func (e *SyntaxError) Error() string { return e.Message }

// Analyze parses an expression and returns the references and calls it
// makes. Names bound inside the expression (let, predicate pointers) are not
// references.
func Analyze(src string) (*Analysis, error) {
	// Parse and type-check (without an environment, so only what is
	// knowable statically: arity of builtins, operations on constants,
	// redeclared names). Evaluation is not needed for that.
	cfg := configs.Get().(*conf.Config)
	defer configs.Put(cfg)
	tree, err := checker.ParseCheck(src, cfg)
	if err != nil {
		return nil, syntaxError(src, err)
	}
	a := &Analysis{}
	w := walker{src: src, out: a}
	w.walk(tree.Node, nil)
	return a, nil
}

func syntaxError(src string, err error) error {
	if fe, ok := err.(*file.Error); ok {
		return &SyntaxError{Offset: runeToByte(src, fe.From), Message: fe.Message}
	}
	return &SyntaxError{Message: err.Error()}
}

// configs recycles checker configurations: building one copies the table
// of builtins, which costs more than checking a small expression. A
// configuration caches types as it is used, so it is never shared between
// goroutines at once.
var configs = sync.Pool{New: func() any {
	cfg := withFunctions(conf.CreateNew())
	cfg.MaxNodes = MaxNodes
	return cfg
}}

// runeToByte converts expr-lang's rune offsets to byte offsets.
func runeToByte(s string, r int) int {
	if r <= 0 {
		return 0
	}
	n := 0
	for i := range s {
		if n == r {
			return i
		}
		n++
	}
	if utf8.RuneCountInString(s) <= r {
		return len(s)
	}
	return 0
}

type walker struct {
	src string
	out *Analysis
	// declassified counts the declassify calls around the node walked.
	declassified int
}

// IsBuiltin reports whether name is a function built into the expression
// language.
func IsBuiltin(name string) bool {
	_, ok := builtin.Index[name]
	return ok
}

func (w *walker) offset(n ast.Node) int {
	return runeToByte(w.src, n.Location().From)
}

func (w *walker) walk(n ast.Node, bound map[string]bool) {
	switch n := n.(type) {
	case nil:
	case *ast.IdentifierNode:
		if !bound[n.Value] {
			w.out.Refs = append(w.out.Refs, Ref{Root: n.Value, Offset: w.offset(n), Declassified: w.declassified > 0})
		}
	case *ast.MemberNode:
		root, path, rest := memberChain(n)
		if id, ok := root.(*ast.IdentifierNode); ok && !bound[id.Value] {
			w.out.Refs = append(w.out.Refs, Ref{Root: id.Value, Path: path, Offset: w.offset(id), Declassified: w.declassified > 0})
		} else {
			w.walk(root, bound)
		}
		for _, r := range rest {
			w.walk(r, bound)
		}
	case *ast.ChainNode:
		w.walk(n.Node, bound)
	case *ast.UnaryNode:
		w.walk(n.Node, bound)
	case *ast.BinaryNode:
		w.walk(n.Left, bound)
		w.walk(n.Right, bound)
	case *ast.SliceNode:
		w.walk(n.Node, bound)
		w.walk(n.From, bound)
		w.walk(n.To, bound)
	case *ast.CallNode:
		declassify := false
		if id, ok := n.Callee.(*ast.IdentifierNode); ok && !bound[id.Value] {
			declassify = id.Value == Declassify
			if !IsBuiltin(id.Value) && !declassify {
				w.out.Calls = append(w.out.Calls, Call{Name: id.Value, Offset: w.offset(id)})
			}
		} else {
			w.walk(n.Callee, bound)
		}
		if declassify {
			w.declassified++
		}
		for _, a := range n.Arguments {
			w.walk(a, bound)
		}
		if declassify {
			w.declassified--
		}
	case *ast.BuiltinNode:
		for _, a := range n.Arguments {
			w.walk(a, bound)
		}
	case *ast.PredicateNode:
		w.walk(n.Node, bound)
	case *ast.ConditionalNode:
		w.walk(n.Cond, bound)
		w.walk(n.Exp1, bound)
		w.walk(n.Exp2, bound)
	case *ast.VariableDeclaratorNode:
		w.walk(n.Value, bound)
		inner := make(map[string]bool, len(bound)+1)
		for k := range bound {
			inner[k] = true
		}
		inner[n.Name] = true
		w.walk(n.Expr, inner)
	case *ast.SequenceNode:
		for _, x := range n.Nodes {
			w.walk(x, bound)
		}
	case *ast.ArrayNode:
		for _, x := range n.Nodes {
			w.walk(x, bound)
		}
	case *ast.MapNode:
		for _, x := range n.Pairs {
			w.walk(x, bound)
		}
	case *ast.PairNode:
		w.walk(n.Key, bound)
		w.walk(n.Value, bound)
	case *ast.NilNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode,
		*ast.StringNode, *ast.BytesNode, *ast.ConstantNode, *ast.PointerNode:
	default:
		// A node type this walker does not know: be conservative and
		// surface it, so new expr-lang syntax is noticed in tests.
		w.out.Refs = append(w.out.Refs, Ref{Root: fmt.Sprintf("<%T>", n), Offset: w.offset(n)})
	}
}

// memberChain unwinds a.b["c"].d into its root node, the constant member
// names, and the non-constant property nodes that still need walking.
func memberChain(n *ast.MemberNode) (root ast.Node, path []string, rest []ast.Node) {
	var props []ast.Node
	var cur ast.Node = n
	for {
		m, ok := cur.(*ast.MemberNode)
		if !ok {
			if c, ok := cur.(*ast.ChainNode); ok {
				cur = c.Node
				continue
			}
			break
		}
		props = append(props, m.Property)
		cur = m.Node
	}
	root = cur
	constant := true
	for i := len(props) - 1; i >= 0; i-- {
		if s, ok := props[i].(*ast.StringNode); ok && constant {
			path = append(path, s.Value)
			continue
		}
		constant = false
		if _, ok := props[i].(*ast.StringNode); !ok {
			rest = append(rest, props[i])
		}
	}
	return root, path, rest
}

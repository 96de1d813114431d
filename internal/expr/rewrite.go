package expr

import (
	"github.com/expr-lang/expr/ast"
)

// rewriter routes everything in an expression that allocates in proportion
// to data through the checked functions (funcs.go), before the expression
// is type-checked and compiled. It records whether it did (the evaluation
// then needs its budget in the environment) and whether the expression
// builds containers (its result may share parts, so its written size is
// checked).
type rewriter struct {
	checked    bool // a checked function is called
	constructs bool // the expression builds lists or maps
	readsEnv   bool // the expression names $env
}

// allocating are the predicate builtins that build a result per element
// of the list they iterate, with its cost per element: the result's slot
// and the VM stack it is gathered on (map, filter), the groups (groupBy),
// the values and items sorted (sortBy). The other predicate builtins build
// nothing of their own.
var allocating = map[string]int{"map": 48, "filter": 48, "groupBy": 96, "sortBy": 32}

// predicates are the builtins whose second argument is evaluated per element.
var predicates = map[string]bool{
	"all": true, "none": true, "any": true, "one": true, "filter": true, "map": true,
	"count": true, "sum": true, "find": true, "findIndex": true, "findLast": true,
	"findLastIndex": true, "groupBy": true, "sortBy": true, "reduce": true,
}

func (w *rewriter) call(name string, at ast.Node, args ...ast.Node) ast.Node {
	w.checked = true
	env := &ast.IdentifierNode{Value: "$env"}
	env.SetLocation(at.Location())
	callee := &ast.IdentifierNode{Value: checkedPrefix + name}
	callee.SetLocation(at.Location())
	n := &ast.CallNode{Callee: callee, Arguments: append([]ast.Node{env}, args...)}
	n.SetLocation(at.Location())
	return n
}

func isNumber(n ast.Node) bool {
	switch n.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		return true
	}
	return false
}

// rewrite rewrites the tree at *node; loop tells whether it is evaluated
// once per element of a list (inside a predicate).
func (w *rewriter) rewrite(node *ast.Node, loop bool) {
	switch n := (*node).(type) {
	case nil:
	case *ast.IdentifierNode:
		if n.Value == "$env" {
			w.readsEnv = true
		}
	case *ast.UnaryNode:
		w.rewrite(&n.Node, loop)
	case *ast.BinaryNode:
		w.rewrite(&n.Left, loop)
		w.rewrite(&n.Right, loop)
		switch n.Operator {
		case "..":
			*node = w.call(opRange, n, n.Left, n.Right)
		case "+":
			if !isNumber(n.Left) && !isNumber(n.Right) {
				*node = w.call(opAdd, n, n.Left, n.Right)
			}
		case "matches":
			if _, ok := n.Right.(*ast.StringNode); !ok {
				*node = w.call(opMatches, n, n.Left, n.Right)
			}
		}
	case *ast.ChainNode:
		w.rewrite(&n.Node, loop)
	case *ast.MemberNode:
		w.rewrite(&n.Node, loop)
		w.rewrite(&n.Property, loop)
	case *ast.SliceNode:
		w.rewrite(&n.Node, loop)
		w.rewrite(&n.From, loop)
		w.rewrite(&n.To, loop)
	case *ast.CallNode:
		w.rewrite(&n.Callee, loop)
		for i := range n.Arguments {
			w.rewrite(&n.Arguments[i], loop)
		}
		if _, ok := n.Callee.(*ast.IdentifierNode); !ok {
			// A method call (now().Format(layout)): charge what it returns.
			w.constructs = true
			*node = w.call(opResult, n, n)
		}
	case *ast.BuiltinNode:
		pred := predicates[n.Name]
		for i := range n.Arguments {
			w.rewrite(&n.Arguments[i], loop || (pred && i == 1))
		}
		if pred && len(n.Arguments) > 0 {
			// The loop is charged when it starts, for all its elements:
			// what its result takes per element, and its predicate's
			// size per element in steps.
			per, allocates := allocating[n.Name]
			if allocates || n.Name == "reduce" {
				w.constructs = true
			}
			weight := 1
			if len(n.Arguments) > 1 {
				weight = size(n.Arguments[1])
			}
			perNode := &ast.IntegerNode{Value: per}
			perNode.SetLocation(n.Location())
			weightNode := &ast.IntegerNode{Value: weight}
			weightNode.SetLocation(n.Location())
			n.Arguments[0] = w.call(opLoop, n, n.Arguments[0], perNode, weightNode)
			return
		}
		if _, ok := checked[n.Name]; ok {
			w.constructs = true
			*node = w.call(n.Name, n, n.Arguments...)
		}
	case *ast.PredicateNode:
		w.rewrite(&n.Node, true)
	case *ast.ConditionalNode:
		w.rewrite(&n.Cond, loop)
		w.rewrite(&n.Exp1, loop)
		w.rewrite(&n.Exp2, loop)
	case *ast.VariableDeclaratorNode:
		w.rewrite(&n.Value, loop)
		w.rewrite(&n.Expr, loop)
	case *ast.SequenceNode:
		for i := range n.Nodes {
			w.rewrite(&n.Nodes[i], loop)
		}
	case *ast.ArrayNode:
		w.constructs = true
		for i := range n.Nodes {
			w.rewrite(&n.Nodes[i], loop)
		}
		if loop {
			*node = w.call(opLiteral, n, n)
		}
	case *ast.MapNode:
		w.constructs = true
		for i := range n.Pairs {
			w.rewrite(&n.Pairs[i], loop)
		}
		if loop {
			*node = w.call(opLiteral, n, n)
		}
	case *ast.PairNode:
		w.rewrite(&n.Key, loop)
		w.rewrite(&n.Value, loop)
	}
}

// size counts the nodes of a tree.
func size(n ast.Node) int {
	var c counter
	ast.Walk(&n, &c)
	return int(c)
}

type counter int

func (c *counter) Visit(*ast.Node) { *c++ }
